"""The super-network families the search knows, by name. A family is a module that satisfies the
`Family` protocol below (the fabric's); the SAC and BNN families, whose final models are exact
integer networks, satisfy `IntegerFamily` too (what the protocol's final trainings, baselines
and rank agreement need). `tests/test_search_protocol.py` holds every family to its protocol.

The final model of a trial is trained like the family's zoo model of the same data set:
`zoo_recipe` reads the training settings from that model's card (models/zoo/*.json), so a
searched model and the zoo model it is compared with get the same recipe (on Fashion-MNIST the
zoo's 5 + 16 epochs of batch 128, not the digits defaults of 60 + 100 epochs of batch 64)."""

from __future__ import annotations

import importlib
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Family(Protocol):
    """What the search needs of a family."""

    NAME: str  # its name (--family)
    COSTS: tuple  # the costs defined for it (--cost)
    ZOO: dict  # data set -> the name of the family's zoo model
    Arch: type  # a hashable architecture (describe(), as_dict())

    def make_space(self, input_shape: tuple, classes: int, options: dict) -> Any:
        """The space of architectures for this data (options: --layers, --width, --space...)."""

    def supernet(self, space: Any, init_prob: float) -> Any:
        """The super network of the space: gates (GateSet), decode_batch(h), forward(x, h)."""

    def train_final(self, arch, data: str, input_shape: tuple, classes: int, **kw) -> Any:
        """`arch` trained from scratch with the family's zoo recipe."""


@runtime_checkable
class IntegerFamily(Family, Protocol):
    """A family whose final models are exact integer networks (SAC, BNN): the protocol's."""

    def structure(self, arch, input_shape: tuple, classes: int) -> Any:
        """The architecture as a network description (what the compiler costs)."""

    def arch_from_dict(self, d: dict) -> Any:
        """The architecture Arch.as_dict() wrote."""

    def zoo_arch(self, data: str) -> Any:
        """The architecture of the family's zoo model for `data`."""

    def zoo_space(self, data: str) -> dict:
        """Space options with the skeleton of the zoo model (--space zoo)."""

    def scaled(self, arch, factor: float) -> Any:
        """`arch` with its channels times `factor` (width scaling)."""


# what a zoo card's training settings record that the recipes (models.train.recipes) take; the
# SAC card names its per-stage epochs "epochs_per_stage", the recipe's keyword is "epochs"
RECIPE_SETTINGS = (
    "epochs",
    "float_epochs",
    "lr",
    "float_lr",
    "kd_alpha",
    "augment_prob",
    "max_shift",
    "batch",
    "float_batch",
    "stages",
)
CARD_RENAMES = {"epochs_per_stage": "epochs"}

FAMILIES = {
    "sac": "workbench.search.sac_family",
    "bnn": "workbench.search.bnn_family",
    "resnet-fabric": "workbench.search.resnet_fabric",
}


def family(name: str):
    if name not in FAMILIES:
        raise ValueError(f"unknown family {name!r} (choose from {', '.join(FAMILIES)})")
    return importlib.import_module(FAMILIES[name])


def zoo_recipe(zoo_models: dict, data: str) -> dict:
    """The recipe keywords of the family's zoo model for `data` (a builtin data set name; the
    family's ZOO map names the model), from its card; {} (the recipe's defaults) for a data set
    without a zoo model of the family."""
    card = _zoo_card(zoo_models, data)
    if card is None:
        return {}
    settings = card["training"]["settings"]
    kw = {CARD_RENAMES.get(k, k): v for k, v in settings.items()}
    return {k: kw[k] for k in RECIPE_SETTINGS if k in kw}


def zoo_config(zoo_models: dict, data: str) -> dict:
    """The architecture config on the card of the family's zoo model for `data` (a builtin
    data set name); ValueError for a data set without a zoo model of the family."""
    card = _zoo_card(zoo_models, data)
    if card is None:
        raise ValueError(
            f"no zoo model of this family for --data {data} (there are for {', '.join(sorted(zoo_models))})"
        )
    return card["architecture"]["config"]


def _zoo_card(zoo_models: dict, data: str) -> dict | None:
    """The card of the family's zoo model for `data`, None without one."""
    from models import zoo
    from models.datasets import parse_spec

    name = zoo_models.get(parse_spec(str(data))[0])
    return None if name is None else zoo.card(name)
