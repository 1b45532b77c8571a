"""The baselines a search is measured against, drawn with the search's own space and cost model.

* **random search** (`random_architectures`): architectures of the same space, each drawn by
  sampling every gate with probability 1/2 (uniform over gate vectors; nested chains such as a
  column-combining group make some architectures likelier than others, as they are for the
  search) and kept only when its exact cost is within the budget of the search trial it stands
  in for, so random search gets one architecture per search trial, under the same budgets.
* **width scaling** (`width_scaled`): the family's zoo architecture with every layer's channels
  multiplied by one factor, the largest factor whose exact cost is within the budget; the
  obvious alternative to a search when a cheaper model is wanted.

Both end as architectures; they are trained and evaluated with exactly the recipe, seeds and
data of the search's own models (workbench/search/protocol.py).
"""

from __future__ import annotations

import torch

from workbench.search.costs import CostError

MAX_DRAWS = 20_000  # random draws per architecture before giving up on a budget
FACTORS = tuple(k / 64 for k in range(4, 129))  # width factors tried: 1/16 .. 2


class BaselineError(ValueError):
    """A baseline that cannot be drawn (no architecture of the space within a budget)."""


def _cost(cost_model, cost: str, arch) -> float | None:
    """The exact cost of an architecture; None for one the array cannot run."""
    try:
        return float(cost_model.static(cost, arch))
    except CostError:
        return None


def random_architectures(net, cost_model, cost: str, budgets: list[float], seed: int) -> list:
    """One random architecture of the super network `net`'s space per budget in `budgets` (in
    order), each within its budget; the draws start from `seed`. Returns [(arch, its cost, draws
    it took)]. BaselineError when MAX_DRAWS draws find none within a budget."""
    gen = torch.Generator().manual_seed(int(seed))
    half = torch.full((net.gates.size,), 0.5)
    out = []
    for budget in budgets:
        for draw in range(1, MAX_DRAWS + 1):
            arch = net.decode(torch.bernoulli(half, generator=gen))
            c = _cost(cost_model, cost, arch)
            if c is not None and c <= budget:
                out.append((arch, c, draw))
                break
        else:
            raise BaselineError(
                f"random search: none of {MAX_DRAWS:,} random architectures "
                f"costs at most the budget {budget:,.6g} {cost}"
            )
    return out


def width_scaled(fam, base, cost_model, cost: str, budget: float) -> tuple:
    """(architecture, its cost, factor): `base` scaled by the largest factor of FACTORS whose
    exact cost is within `budget` (fam.scaled rounds the channels to the array's blocks).
    BaselineError when even the narrowest is over the budget."""
    best = None
    seen = {}
    for factor in FACTORS:
        arch = fam.scaled(base, factor)
        if arch not in seen:
            seen[arch] = _cost(cost_model, cost, arch)
        c = seen[arch]
        if c is not None and c <= budget and (best is None or c >= best[1]):
            best = (arch, c, factor)
    if best is None:
        raise BaselineError(
            f"width scaling: the zoo architecture scaled by "
            f"{FACTORS[0]:g}..{FACTORS[-1]:g} never costs at most the budget "
            f"{budget:,.6g} {cost}"
        )
    return best
