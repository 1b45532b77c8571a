"""What a search has finished, read back from its folder: trial results (whose files are read
from their own folder, so a search folder may be moved or made elsewhere), the check that a
finished trial was made with the same settings, and pareto.json written from them (front.py)."""

from __future__ import annotations

import contextlib
import json
from dataclasses import asdict
from pathlib import Path

from safeio import write_json_atomic
from workbench.search import front
from workbench.search.errors import SearchError
from workbench.search.families import family as get_family
from workbench.search.options import SearchOptions
from workbench.search.trial import TrialConfig, settings_of


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError):
        return None


def read_result(trial_dir: Path) -> dict | None:
    """A finished trial's result.json; its files are the ones in `trial_dir` (the folder may
    have been made elsewhere: on a cluster node, on a GPU machine, before a move)."""
    res = _read_json(Path(trial_dir) / "result.json")
    if res is not None and isinstance(res.get("files"), dict):  # files kept in the trial's
        res["files"] = {
            k: str(Path(trial_dir) / Path(v).name)  # folder (the fabric's)
            if (Path(trial_dir) / Path(v).name).exists()
            else v
            for k, v in res["files"].items()
        }
    return res


def settings_differ(cfg: TrialConfig, stored: dict) -> str | None:
    """How a finished trial's stored config differs from `cfg` ("field: was X, now Y"), or None
    when it is the same trial: resuming must not mix in results made with other settings."""
    from workbench.search.costs import CostSettings

    now = settings_of(cfg)  # as result.json holds it (lists, not tuples)
    for key in sorted(now):
        old, new = stored.get(key), now[key]
        if key == "costs":
            with contextlib.suppress(TypeError):
                old = asdict(CostSettings(**(old or {})))
            new = asdict(cfg.cost_settings())
        if old != new:
            return f"{key}: was {old!r}, now {new!r}"
    return None


def check_finished(configs: list[TrialConfig]) -> None:
    """Refuse (SearchError) a finished trial of the same name made with other settings."""
    for cfg in configs:
        res = read_result(Path(cfg.out))
        if res is None:
            continue
        diff = settings_differ(cfg, res.get("config") or {})
        if diff:
            raise SearchError(
                f"{Path(cfg.out) / 'result.json'}: trial {cfg.name} finished with "
                f"other settings ({diff}); give another --out or remove that "
                f"trial's folder"
            )


def collect(opts: SearchOptions) -> list[dict]:
    """The results of the trials that have finished, in trial order."""
    out = []
    for cfg in opts.trial_configs():
        res = read_result(Path(cfg.out))
        if res is not None:
            out.append(res)
    return out


# ---------------------------------------------------------------------------------------------
# results
# ---------------------------------------------------------------------------------------------
def zoo_reference(opts: SearchOptions) -> dict | None:
    """The fabric family's fixed ResNet, trained once with the trials' recipe (the SAC and BNN
    families compare with their zoo architecture trained like every other model: plan.py)."""
    fam = get_family(opts.family)
    if not hasattr(fam, "baseline"):
        return None
    cfg = opts.trial_configs()[0]
    path = Path(opts.out) / "baseline.json"
    cached = _read_json(path)
    if cached is None:
        from models.datasets import load_dataset

        ds = load_dataset(opts.data, "val")
        cached = fam.baseline(
            opts.data,
            ds.image_shape,
            ds.classes,
            cfg.space,
            epochs=cfg.final_epochs,
            processors=cfg.cost_settings().processors,
        )
        write_json_atomic(path, cached)
    return cached


def write_pareto(opts: SearchOptions) -> dict:
    """DIR/pareto.json from what has finished (front.py): `complete` when every trial and
    baseline training has, the others named in `unfinished` and `unfinished_models`."""
    doc = front.build(opts, collect(opts), opts.plan)
    return front.write(opts, doc)


def lost_line(opts: SearchOptions, why: str) -> str:
    return (
        f"{why}; {kept_line(opts)}; run the same command again against a working cluster to "
        f"resume (unfinished trials continue from their checkpoints)"
    )


def kept_line(opts: SearchOptions) -> str:
    done = len(collect(opts))
    return f"{done} of {len(opts.trial_configs())} trial(s) finished and kept in {opts.out}"
