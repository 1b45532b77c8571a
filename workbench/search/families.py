"""The super-network families the search knows, by name. A family module provides NAME,
COSTS (the costs defined for it), ZOO (data set -> zoo model of the family, for comparison),
Arch, make_space(input_shape, classes, options), supernet(space, init_prob),
structure(arch, input_shape, classes) (or the fabric's static_cost) and train_final(...)."""
from __future__ import annotations

import importlib

FAMILIES = {"sac": "workbench.search.sac_family", "bnn": "workbench.search.bnn_family",
            "resnet-fabric": "workbench.search.resnet_fabric"}


def family(name: str):
    if name not in FAMILIES:
        raise ValueError(f"unknown family {name!r} (choose from {', '.join(FAMILIES)})")
    return importlib.import_module(FAMILIES[name])
