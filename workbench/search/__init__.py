"""Co-design search: Budgeted Super Networks (BSN, Veniat & Denoyer, CVPR 2018) whose costs
come from the workbench's own tools (docs/search.md).

    from workbench.search import SearchOptions, run_search
    doc = run_search(SearchOptions(family="sac", cost="cycles", budgets=[15000, 20000],
                                   data="digits", out=Path("out/search/sac")))

`gates` (Bernoulli gates, REINFORCE), `sac_family`, `bnn_family`, `resnet_fabric` (the super
networks), `costs` and `gpu_cost` (cost models), `trial` (one BSN run; `projection`),
`evaluation` (final trainings), `baselines` and `plan` (random search, width scaling),
`stats` and `protocol` (the claims), `front` (the report), `options` (options and checks),
`results` (what has finished), `ray_backend` (Ray Tune), `driver` (a whole search).
"""

from workbench.search.driver import SearchError, SearchOptions, run_search
from workbench.search.trial import TrialConfig, run_trial

__all__ = ["SearchError", "SearchOptions", "TrialConfig", "run_search", "run_trial"]
