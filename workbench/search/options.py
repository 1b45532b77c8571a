"""A search's options and every check that can be made before anything trains (SearchError:
one line, exit 2): the family, cost, budgets, seeds, the space and its costs, the device, the
protocol's options, a Ray address; and the baselines' plan made once for the options."""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path

from workbench import cluster
from workbench.search.baselines import BaselineError
from workbench.search.costs import COSTS, CostError, CostModel
from workbench.search.errors import SearchError
from workbench.search.families import IntegerFamily
from workbench.search.families import family as get_family
from workbench.search.plan import BASELINES, baseline_plan, has_zoo
from workbench.search.trial import TrialConfig


@dataclass
class SearchOptions:
    family: str = "sac"
    cost: str = "cycles"
    budgets: list = field(default_factory=lambda: [20000.0])
    lambdas: list = field(default_factory=lambda: [1.0])
    seeds: int = 1
    first_seed: int = 0  # seeds first_seed .. first_seed + seeds - 1
    data: str = "digits"
    out: Path = Path("out/search")
    address: str | None = None
    cpus: int | None = None  # local Ray: CPUs to use (default: all)
    trial: dict = field(default_factory=dict)  # TrialConfig fields (epochs, space, costs...)
    command: str = ""
    collect_only: bool = False  # the front of the finished trials; train nothing
    baselines: tuple = BASELINES  # "random", "width" (workbench/search/protocol.py)
    cost_fraction: float = 1.0  # "dominates": cost at most this fraction of the zoo's
    plan: list = field(default_factory=list, repr=False)  # the baselines (plan.py), once made

    def trial_configs(self) -> list[TrialConfig]:
        out = []
        seeds = range(self.first_seed, self.first_seed + self.seeds)
        combos = list(itertools.product(self.budgets, self.lambdas, seeds))
        trial = {"threads": self.threads_per_trial(len(combos)), **self.trial}
        for budget, lam, seed in combos:
            name = f"{self.family}_{self.cost}_b{budget:g}_l{lam:g}_s{seed}"
            out.append(
                TrialConfig(
                    family=self.family,
                    cost=self.cost,
                    budget=float(budget),
                    lam=float(lam),
                    seed=seed,
                    data=self.data,
                    out=str(Path(self.out).resolve() / "trials" / name),
                    models_dir=str(Path(self.out).resolve() / "models"),
                    name=name,
                    command=self.command,
                    **trial,
                )
            )
        return out

    def threads_per_trial(self, trials: int) -> int:
        """Torch threads of each trial: on local Ray, the CPUs shared out among the trials when
        there are fewer trials than CPUs (one Fashion trial on 2 cores would otherwise leave one
        idle); one on a cluster, whose nodes' sizes are not known here. Counted over all
        the sweep's trials, not the ones left, so that a resumed sweep has the same settings."""
        if self.address:
            return 1
        return max(1, _parallel(self) // max(1, trials))


def check_options(opts: SearchOptions) -> None:
    """Everything that can be checked before any training starts (SearchError otherwise)."""
    try:
        fam = get_family(opts.family)
    except ValueError as exc:
        raise SearchError(str(exc)) from None
    if opts.cost not in COSTS:
        raise SearchError(f"--cost: unknown cost {opts.cost!r} (choose from {', '.join(COSTS)})")
    if opts.cost not in fam.COSTS:
        raise SearchError(
            f"--cost {opts.cost} is not defined for the {opts.family} family (it has {', '.join(fam.COSTS)})"
        )
    if not opts.budgets or any(not b > 0 for b in opts.budgets):
        raise SearchError(f"--budgets must be positive numbers, got {opts.budgets}")
    if not opts.lambdas or any(not lam >= 0 for lam in opts.lambdas):
        raise SearchError(f"--lambdas must be numbers >= 0, got {opts.lambdas}")
    if opts.seeds < 1:
        raise SearchError(f"--seeds must be at least 1, got {opts.seeds}")
    if opts.first_seed < 0:
        raise SearchError(f"--first-seed must be at least 0, got {opts.first_seed}")
    cfg = opts.trial_configs()[0]
    if cfg.epochs < 1:
        raise SearchError(f"--epochs must be at least 1, got {cfg.epochs}")
    if not cfg.warmup_epochs >= 0:
        raise SearchError(f"--warmup-epochs must be 0 or more, got {cfg.warmup_epochs}")
    for flag, v in (("--final-epochs", cfg.final_epochs), ("--final-float-epochs", cfg.final_float_epochs)):
        if v is not None and v < 1:
            raise SearchError(f"{flag} must be at least 1, got {v}")
    settings = cfg.cost_settings()
    if settings.clock_mhz is not None and not settings.clock_mhz > 0:
        raise SearchError(f"--clock-mhz must be positive, got {settings.clock_mhz}")
    if not 0 < settings.utilisation <= 1:
        raise SearchError(f"--utilisation must be in (0, 1], got {settings.utilisation}")
    if settings.processors < 1:
        raise SearchError(f"--processors must be at least 1, got {settings.processors}")
    if opts.cpus is not None and opts.cpus < 1:
        raise SearchError(f"--cpus must be at least 1, got {opts.cpus}")
    if not cfg.lr > 0 or not cfg.gate_lr > 0 or cfg.gate_clip < 0:
        raise SearchError("--lr and --gate-lr must be positive and --gate-clip 0 or more")
    check_device(opts, cfg.device, fam)
    check_protocol(opts, cfg, fam)
    from models.datasets import DatasetError, load_dataset

    try:
        ds = load_dataset(opts.data, "val")
    except DatasetError as exc:
        raise SearchError(f"--data: {exc}") from None
    try:
        space = fam.make_space(ds.image_shape, ds.classes, cfg.space)
        model = CostModel(fam, cfg.cost_settings(), ds.image_shape, ds.classes)
        model.check(opts.cost)
        # the largest and the smallest architecture of the space must be mappable; with the
        # array searched on a chip the smallest must fit it, the largest may be over it (the
        # search prices that: CostModel.over_chip) but must compile for some candidate
        net = fam.supernet(space, cfg.init_prob)
        import torch

        largest, smallest = (net.decode(h) for h in (torch.ones(net.gates.size), torch.zeros(net.gates.size)))
        if settings.joint:
            model.of(opts.cost, largest)
        else:
            model.all_static(largest)
        model.all_static(smallest)
    except (CostError, ValueError) as exc:
        raise SearchError(f"{opts.family} search space: {exc}") from None


def check_protocol(opts: SearchOptions, cfg: TrialConfig, fam) -> None:
    """--final-seeds, --baselines, --dominance-cost: the protocol needs the integer networks of
    the SAC and BNN families (the fabric trains float networks: one seed, no baselines)."""
    if cfg.final_seeds < 1:
        raise SearchError(f"--final-seeds must be at least 1, got {cfg.final_seeds}")
    unknown = [b for b in opts.baselines if b not in BASELINES]
    if unknown:
        raise SearchError(
            f"--baselines: unknown baseline {unknown[0]!r} (choose from {', '.join(BASELINES)}, or none)"
        )
    if not opts.cost_fraction > 0:
        raise SearchError(f"--dominance-cost must be positive, got {opts.cost_fraction}")
    if not isinstance(fam, IntegerFamily):
        if cfg.final_seeds != 1 or opts.baselines:
            raise SearchError(
                f"the {opts.family} family trains float networks, outside the "
                f"protocol: give --final-seeds 1 --baselines none"
            )
        return
    if "width" in opts.baselines and not has_zoo(fam, opts.data):
        raise SearchError(
            f"--baselines width needs a zoo model of the {opts.family} family for "
            f"--data {opts.data} (there are for {', '.join(sorted(fam.ZOO))}); "
            f"give --baselines random or none"
        )


def check_device(opts: SearchOptions, device: str, fam) -> None:
    """--device: one the family trains on, and CUDA present here (on a cluster, the nodes' GPUs
    are checked once Ray has joined it; with --collect-only nothing trains, so not at all)."""
    devices = getattr(fam, "DEVICES", ("cpu",))
    if device not in devices:
        raise SearchError(f"--device {device}: the {opts.family} family trains on {' or '.join(devices)}")
    if device != "cpu" and not opts.address and not opts.collect_only:
        from models.train.common import training_device

        try:
            training_device(device)
        except ValueError as exc:
            raise SearchError(f"--{exc}") from None


def check_address(address: str) -> None:
    """Fail fast on a malformed Ray address, one nobody answers at (workbench.cluster) or one
    where something else than Ray answers (ray.init would wait for it): SearchError (exit 2),
    one line."""
    try:
        cluster.check_address(address)
    except cluster.AddressError as exc:
        raise SearchError(str(exc)) from None


def _parallel(opts: SearchOptions) -> int:
    return max(1, opts.cpus or os.cpu_count() or 1)


def plan_of(opts: SearchOptions, configs: list) -> list[dict]:
    """The baselines' architectures (plan.py), made once per run (deterministic)."""
    if not opts.plan and isinstance(get_family(opts.family), IntegerFamily):
        try:
            opts.plan = baseline_plan(configs, tuple(opts.baselines))
        except BaselineError as exc:
            raise SearchError(str(exc)) from None
    return opts.plan
