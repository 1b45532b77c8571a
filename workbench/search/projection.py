"""The last step of a search trial: the architecture it returns costs at most its budget.

BSN's extraction keeps the gates whose probability is above 1/2. The gradient pushes the
*expected* cost towards the budget, so the most likely architecture can still be over it (a
budget of 12,000 cycles gave 15,280 before this step). `project` changes that architecture as
little as the gates allow: while its exact cost (the compiler's, `CostModel.static`) is over the
budget, it flips the gate that saves the most cost per unit of log-probability given up, i.e.
the smallest |logit| / (cost saved), among the gates that change the sub-network. Each flip is
recorded, so a result says how far the returned architecture is from the gates' own choice.
"""

from __future__ import annotations

import torch

from workbench.search.costs import CostError


def _cost(cost_model, cost: str, arch) -> float:
    """The architecture's cost; in the joint search one that fits no array on the chip costs
    what it costs the search (`CostModel.of`: over its budget, more so the further over the
    chip), so that flips towards fitting are priced by what they save like any other."""
    try:
        return float(cost_model.of(cost, arch))
    except CostError:  # it does not compile for the array
        return float("inf")


def project(
    net, h_row: torch.Tensor, cost_model, cost: str, budget: float, max_flips: int = 256
) -> tuple[torch.Tensor, list[dict]]:
    """(gate vector whose architecture costs at most `budget`, the flips made). When no flip
    lowers the cost any more the last vector is returned over budget (the flips say so; in the
    joint search it may then fit no array on the chip, which the trial refuses)."""
    h = h_row.detach().clone().cpu()
    logits = net.gates.logits.detach().cpu()
    now = _cost(cost_model, cost, net.decode(h))
    flips = []
    while now > budget and len(flips) < max_flips:
        relevant = net.relevant(h[None])[0]
        best = None
        for j in torch.nonzero(relevant).flatten().tolist():
            trial = h.clone()
            trial[j] = 1.0 - trial[j]
            c = _cost(cost_model, cost, net.decode(trial))
            if c >= now:
                continue
            price = abs(float(logits[j])) / (now - c)
            if best is None or price < best[0]:
                best = (price, j, c)
        if best is None:
            break
        _, j, c = best
        h[j] = 1.0 - h[j]
        flips.append({"gate": j, "to": int(h[j]), "cost": c, "probability": float(torch.sigmoid(logits[j]))})
        now = c
    return h, flips
