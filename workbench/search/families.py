"""The super-network families the search knows, by name. A family module provides NAME,
COSTS (the costs defined for it), ZOO (data set -> zoo model of the family, for comparison),
Arch, make_space(input_shape, classes, options), supernet(space, init_prob),
structure(arch, input_shape, classes) (or the fabric's static_cost) and train_final(...).

The final model of a trial is trained like the family's zoo model of the same data set:
`zoo_recipe` reads the training settings from that model's card (models/zoo/*.json), so a
searched model and the zoo model it is compared with get the same recipe (on Fashion-MNIST the
zoo's 5 + 16 epochs of batch 128, not the digits defaults of 60 + 100 epochs of batch 64)."""
from __future__ import annotations

import importlib

# card settings -> keyword of the recipe (models.train.recipes): what a zoo card records
RECIPE_KEYS = {"bnn": {"epochs": "epochs", "float_epochs": "float_epochs", "lr": "lr",
                       "float_lr": "float_lr", "kd_alpha": "kd_alpha",
                       "augment_prob": "augment_prob", "max_shift": "max_shift",
                       "batch": "batch", "float_batch": "float_batch"},
               "sac": {"epochs_per_stage": "epochs", "float_epochs": "float_epochs", "lr": "lr",
                       "float_lr": "float_lr", "kd_alpha": "kd_alpha", "stages": "stages",
                       "augment_prob": "augment_prob", "max_shift": "max_shift",
                       "batch": "batch", "float_batch": "float_batch"}}

FAMILIES = {"sac": "workbench.search.sac_family", "bnn": "workbench.search.bnn_family",
            "resnet-fabric": "workbench.search.resnet_fabric"}


def family(name: str):
    if name not in FAMILIES:
        raise ValueError(f"unknown family {name!r} (choose from {', '.join(FAMILIES)})")
    return importlib.import_module(FAMILIES[name])


def zoo_recipe(family_name: str, zoo_models: dict, data: str) -> dict:
    """The recipe keywords of the family's zoo model for `data` (a builtin data set name; the
    family's ZOO map names the model), from its card; {} (the recipe's defaults) for a data set
    without a zoo model of the family."""
    from models import zoo
    from models.datasets import parse_spec
    name = zoo_models.get(parse_spec(str(data))[0])
    keys = RECIPE_KEYS.get(family_name, {})
    if name is None or not keys:
        return {}
    settings = zoo.card(name)["training"]["settings"]
    return {kw: settings[k] for k, kw in keys.items() if k in settings}
