"""A search: many (budget, lambda, seed) trials as Ray Tune trials, gathered into one Pareto
front on the validation split (BSN's model selection), with the test accuracy of the models on
it reported.

Ray runs locally by default (a Ray instance started for the search, one CPU per trial); with
`address` it joins an existing cluster (`ray start --head` ...). Every trial writes its own
result.json, ONNX model and card into DIR/trials/<name>/ as soon as it finishes, and the
driver rewrites DIR/pareto.json after every finished trial, so an interrupted search leaves the
finished trials readable. At the end: DIR/pareto.json (every evaluated model with its
architecture, validation and test accuracy and every cost; the front; the zoo model of the
family for comparison), DIR/pareto.png, and DIR/front/<name>.onnx + .json for the models on
the front.
"""
from __future__ import annotations

import itertools
import json
import math
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from safeio import (
    OutputDirectory,
    OutputPathError,
    write_json_atomic,
    write_text_atomic,
)
from workbench import cluster
from workbench.ray_session import ClusterLost, RaySession, signal_name
from workbench.search import front
from workbench.search.baselines import BaselineError
from workbench.search.costs import COSTS, CostError, CostModel
from workbench.search.evaluation import FinalJob, read_final, run_final
from workbench.search.families import family as get_family
from workbench.search.plan import BASELINES, baseline_plan, final_jobs, has_zoo
from workbench.search.trial import TrialConfig, run_trial, settings_of

ROOT = Path(__file__).resolve().parents[2]


class SearchError(Exception):
    """Bad search options or an unusable environment: one clear line (exit 2)."""


class TrialFailed(Exception):
    """A trial raised: the finished ones are written, the search fails (exit 3)."""


@dataclass
class SearchOptions:
    family: str = "sac"
    cost: str = "cycles"
    budgets: list = field(default_factory=lambda: [20000.0])
    lambdas: list = field(default_factory=lambda: [1.0])
    seeds: int = 1
    first_seed: int = 0                # seeds first_seed .. first_seed + seeds - 1
    data: str = "digits"
    out: Path = Path("out/search")
    address: str | None = None
    cpus: int | None = None            # local Ray: CPUs to use (default: all)
    trial: dict = field(default_factory=dict)     # TrialConfig fields (epochs, space, costs...)
    command: str = ""
    collect_only: bool = False         # the front of the finished trials; train nothing
    baselines: tuple = BASELINES       # "random", "width" (workbench/search/protocol.py)
    cost_fraction: float = 1.0         # "dominates": cost at most this fraction of the zoo's
    plan: list = field(default_factory=list, repr=False)   # the baselines (plan.py), once made

    def trial_configs(self) -> list[TrialConfig]:
        out = []
        seeds = range(self.first_seed, self.first_seed + self.seeds)
        combos = list(itertools.product(self.budgets, self.lambdas, seeds))
        trial = {"threads": self.threads_per_trial(len(combos)), **self.trial}
        for budget, lam, seed in combos:
            name = f"{self.family}_{self.cost}_b{budget:g}_l{lam:g}_s{seed}"
            out.append(TrialConfig(family=self.family, cost=self.cost, budget=float(budget),
                                   lam=float(lam), seed=seed, data=self.data,
                                   out=str(Path(self.out).resolve() / "trials" / name),
                                   models_dir=str(Path(self.out).resolve() / "models"),
                                   name=name, command=self.command, **trial))
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
        raise SearchError(f"--cost {opts.cost} is not defined for the {opts.family} family "
                          f"(it has {', '.join(fam.COSTS)})")
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
    if not 0 <= cfg.warmup_epochs:
        raise SearchError(f"--warmup-epochs must be 0 or more, got {cfg.warmup_epochs}")
    for flag, v in (("--final-epochs", cfg.final_epochs),
                    ("--final-float-epochs", cfg.final_float_epochs)):
        if v is not None and v < 1:
            raise SearchError(f"{flag} must be at least 1, got {v}")
    settings = cfg.cost_settings()
    if not settings.clock_mhz > 0:
        raise SearchError(f"--clock-mhz must be positive, got {settings.clock_mhz}")
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
        # the largest and the smallest architecture of the space must be mappable
        net = fam.supernet(space, cfg.init_prob)
        import torch
        for h in (torch.ones(1, net.gates.size), torch.zeros(1, net.gates.size)):
            model.all_static(net.decode(h[0]))
    except (CostError, ValueError) as exc:
        raise SearchError(f"{opts.family} search space: {exc}") from None


def check_protocol(opts: SearchOptions, cfg: TrialConfig, fam) -> None:
    """--final-seeds, --baselines, --dominance-cost: the protocol needs the integer networks of
    the SAC and BNN families (the fabric trains float networks: one seed, no baselines)."""
    if cfg.final_seeds < 1:
        raise SearchError(f"--final-seeds must be at least 1, got {cfg.final_seeds}")
    unknown = [b for b in opts.baselines if b not in BASELINES]
    if unknown:
        raise SearchError(f"--baselines: unknown baseline {unknown[0]!r} (choose from "
                          f"{', '.join(BASELINES)}, or none)")
    if not opts.cost_fraction > 0:
        raise SearchError(f"--dominance-cost must be positive, got {opts.cost_fraction}")
    if not hasattr(fam, "arch_from_dict"):
        if cfg.final_seeds != 1 or opts.baselines:
            raise SearchError(f"the {opts.family} family trains float networks, outside the "
                              f"protocol: give --final-seeds 1 --baselines none")
        return
    if "width" in opts.baselines and not has_zoo(fam, opts.data):
        raise SearchError(f"--baselines width needs a zoo model of the {opts.family} family for "
                          f"--data {opts.data} (there are for {', '.join(sorted(fam.ZOO))}); "
                          f"give --baselines random or none")


def check_device(opts: SearchOptions, device: str, fam) -> None:
    """--device: one the family trains on, and CUDA present here (on a cluster, the nodes' GPUs
    are checked once Ray has joined it; with --collect-only nothing trains, so not at all)."""
    devices = getattr(fam, "DEVICES", ("cpu",))
    if device not in devices:
        raise SearchError(f"--device {device}: the {opts.family} family trains on "
                          f"{' or '.join(devices)}")
    if device != "cpu" and not opts.address and not opts.collect_only:
        from models.train.common import training_device
        try:
            training_device(device)
        except ValueError as exc:
            raise SearchError(f"--{exc}") from None


# ---------------------------------------------------------------------------------------------
# Ray
# ---------------------------------------------------------------------------------------------
# Ray Tune starts a trial again when its worker was lost (the node died, the process was
# killed): it continues from its checkpoints (DIR/trials/<name>/checkpoint). An exception raised
# by the trial itself (a bug, bad data) is not retried: it would fail again the same way.
MAX_NODE_LOSSES = 3


def interruption(exc: BaseException) -> tuple[int, str] | None:
    """(signal, the line to say) when `exc` ended the trials on SIGINT, SIGTERM or SIGHUP:
    Ray is shut down, the finished trials are kept and the unfinished ones keep their
    checkpoints (exit 128 + the signal). The exception keeps its own type (KeyboardInterrupt,
    the guard's Terminated), so that every caller's handling of it still holds; the search
    command says the line instead of the guard's."""
    return getattr(exc, "search_interruption", None)


def _trainable(config: dict) -> None:
    """A Ray Tune trial: one BSN run (config kind "trial") or one final training of a
    baseline's architecture (kind "final"), reporting every epoch and the final result. It
    raises only when Ray itself fails (Tune then starts it again, MAX_NODE_LOSSES times at
    most): its own exception is reported as the trial's error (with the traceback in its
    folder's error.log), so that a bug is not retried."""
    from ray import tune
    if config["kind"] == "final":
        _final_trainable(FinalJob(**config["job"]), tune)
        return
    cfg = TrialConfig(**config["trial"])
    try:
        result = _logged_trial(cfg, lambda entry: tune.report(
            {"phase": "search", **entry, "final": False}))
    except Exception as exc:  # noqa: BLE001 - the trial's own error: reported, not retried
        tune.report({"final": True, "error": f"{type(exc).__name__}: {exc}",
                     "error_log": _error_log(Path(cfg.out))})
        return
    tune.report({"final": True, "val_accuracy": result["accuracy"]["val"],
                 "test_accuracy": result["accuracy"]["test"],
                 "cost": result["costs"].get(cfg.cost), "arch": result["arch_text"],
                 "result_file": str(Path(cfg.out) / "result.json")})


def _final_trainable(job: FinalJob, tune) -> None:
    try:
        res = run_final(job, on_epoch_end=lambda entry: tune.report(
            {"phase": "final", **entry, "final": False}))
    except Exception as exc:  # noqa: BLE001 - its own error: reported, not retried
        tune.report({"final": True, "error": f"{type(exc).__name__}: {exc}",
                     "error_log": _error_log(Path(job.out))})
        return
    tune.report({"final": True, "val_correct": res["val_correct"], "val_total": res["val_total"]})


def _logged_trial(cfg: TrialConfig, report) -> dict:
    """run_trial with its lines in DIR/trials/<name>/trial.log, appended by every start (where
    it ran; resumed from which checkpoint), and a trial that finished before its worker was
    lost (Tune had not heard) not trained again."""
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "trial.log", "a", buffering=1) as logf:   # log: the trial's own lines
        def log(line):
            logf.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {line}\n")

        log(f"started in process {os.getpid()} on {socket.gethostname()}")
        done = read_result(out)
        if done is not None and settings_differ(cfg, done.get("config") or {}) is None:
            log("finished already: result.json is kept")
            return done
        try:
            result = run_trial(cfg, report=report, log=log)
        except Exception as exc:
            log(f"failed: {type(exc).__name__}: {exc}")
            raise
        log("done")
        return result


def _error_log(out: Path) -> str | None:
    """The traceback of the exception being handled, in DIR/trials/<name>/error.log."""
    import traceback
    try:
        write_text_atomic(out / "error.log", traceback.format_exc())
    except OSError:
        return None
    return str(out / "error.log")


def check_address(address: str) -> None:
    """Fail fast on a malformed Ray address, one nobody answers at (workbench.cluster) or one
    where something else than Ray answers (ray.init would wait for it): SearchError (exit 2),
    one line."""
    try:
        cluster.check_address(address)
    except cluster.AddressError as exc:
        raise SearchError(str(exc)) from None


def _init_ray(opts: SearchOptions, session: RaySession, temp_dir: str):
    """Join the cluster of --address, or start a local Ray in `temp_dir`, inside `session`
    (signals, logs, the head's watchdog: workbench/ray_session.py)."""
    kwargs = {}
    if opts.address:
        check_address(opts.address)
        kwargs["runtime_env"] = {"working_dir": str(ROOT), "excludes": [
            ".venv", "build", "out", ".git", "sim_build", "*.onnx.tmp", ".hypothesis",
            "mutants"]}
        try:
            ray = session.init(address=opts.address, **kwargs)
        except (ConnectionError, RuntimeError, ValueError, ClusterLost) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise SearchError(f"--address {opts.address}: cannot join the Ray cluster "
                              f"({first})") from None
    else:
        # Ray kills workers when the node's memory is nearly full, whoever uses it: on a machine
        # shared with other jobs that killed small trials; the trials' memory is bounded, so the
        # local Ray leaves the decision to the operating system
        os.environ.setdefault("RAY_memory_monitor_refresh_ms", "0")
        if _device(opts) == "cuda":
            import torch
            kwargs["num_gpus"] = torch.cuda.device_count()
        # Ray's session directory (temp_dir) holds Unix sockets, whose paths must stay short;
        # the address "local", since without one ray.init joins the cluster named in
        # /tmp/ray/ray_current_cluster (the last `ray start` here), even a stopped one
        ray = session.init(address="local", num_cpus=opts.cpus or os.cpu_count(),
                           _temp_dir=temp_dir, **kwargs)
    if _device(opts) == "cuda" and not ray.cluster_resources().get("GPU"):
        raise SearchError(f"--device cuda: the Ray cluster at {opts.address} has no GPU")
    return ray


def _device(opts: SearchOptions) -> str:
    return opts.trial.get("device", "cpu")


def trial_resources(opts: SearchOptions, threads: int, trials: int) -> dict:
    """What Ray reserves for one trial: its threads, and on --device cuda an equal share of one
    GPU among the trials that run at once (small networks: they share it well)."""
    res = {"cpu": threads}
    if _device(opts) == "cuda":
        # Ray keeps 4 decimals of a resource (rounding 1/6 up to 0.1667 would fit only 5)
        res["gpu"] = math.floor(1e4 / max(1, min(_parallel(opts), trials))) / 1e4
    return res


FINAL_LINE_S = 30.0


class _Progress:
    """A Ray Tune callback: one line per trial epoch, and pareto.json after every finished
    trial (so an interrupted search keeps what is done)."""

    def __new__(cls, *args, **kwargs):
        from ray.tune import Callback

        class Progress(Callback):
            def __init__(self, opts, total, t0):
                self.opts, self.total, self.t0, self.finished = opts, total, t0, 0
                self.started, self.durations = {}, []      # trial name -> start; seconds
                self.last_line = {}                         # trial name -> time of its last line

            def on_trial_start(self, iteration, trials, trial, **info):
                # a trial started again after a lost worker keeps its first start
                self.started.setdefault(trial.config["name"], time.perf_counter())

            def on_trial_result(self, iteration, trials, trial, result, **info):
                name = trial.config["name"]
                elapsed = time.perf_counter() - self.t0
                if result.get("final"):
                    return
                if result.get("phase") == "final":
                    # at most one line per trial every FINAL_LINE_S (digits: 160 short epochs),
                    # and the last epoch of each phase
                    now = time.perf_counter()
                    if (now - self.last_line.get(name, -1e9) < FINAL_LINE_S
                            and result["epoch"] < result["epochs"]):
                        return
                    self.last_line[name] = now
                    print(f"[search {elapsed:6.0f} s] {name}: final training, {result['desc']} "
                          f"epoch {result['epoch']}/{result['epochs']}, val "
                          f"{100 * result['val_accuracy']:.1f}%", flush=True)
                    return
                epochs = trial.config["trial"].get("epochs")          # a search trial's
                print(f"[search {elapsed:6.0f} s] {name}: epoch {result['epoch']}/{epochs}, "
                      f"val {100 * result['val_accuracy']:.1f}%, {self.opts.cost} "
                      f"{result['cost']:,.4g}, {result['arch']}", flush=True)

            def on_trial_complete(self, iteration, trials, trial, **info):
                self.finished += 1
                name = trial.config["name"]
                error = (trial.last_result or {}).get("error")
                if error:                      # the trial's own exception (_trainable)
                    self.started.pop(name, None)
                    where = trial.last_result.get("error_log")
                    print(f"[search] {name} FAILED: {error.splitlines()[0]}"
                          + (f" (traceback: {where})" if where else ""), flush=True)
                    return
                if trial.config["kind"] == "final":
                    self._final_done(name, trial.config["job"])
                    return
                res = read_result(Path(trial.config["trial"]["out"]))
                elapsed = time.perf_counter() - self.t0
                left = self.total - self.finished
                now = time.perf_counter()
                self.durations.append(now - self.started.pop(name, self.t0))
                ages = [now - t for t in self.started.values()]
                eta = eta_seconds(sum(self.durations) / len(self.durations), ages,
                                  left - len(ages), _parallel(self.opts))
                if res:
                    print(f"[search {elapsed:6.0f} s] {name} done ({self.finished}/{self.total}):"
                          f" {res['arch_text']}; val {100 * res['accuracy']['val']:.2f}% (mean "
                          f"of {len(res.get('finals')) or 1} seed(s)), {self.opts.cost} "
                          f"{res['costs'].get(self.opts.cost):,.4g} "
                          f"({res['budget_ratio']:.2f}x its budget)"
                          + (f"; about {eta / 60:.1f} min left" if left else ""), flush=True)
                write_pareto(self.opts)

            def _final_done(self, name: str, job: dict) -> None:
                res = read_final(job["out"])
                self.started.pop(name, None)
                if res:
                    elapsed = time.perf_counter() - self.t0
                    print(f"[search {elapsed:6.0f} s] {name} done ({self.finished}/"
                          f"{self.total}): {res['arch_text']}; val {res['val_correct']}/"
                          f"{res['val_total']}", flush=True)
                write_pareto(self.opts)

            def on_trial_recover(self, iteration, trials, trial, **info):
                # its worker was lost (a node died, the process was killed): Tune starts it
                # again, and it continues from its checkpoints
                name = trial.config["name"]
                elapsed = time.perf_counter() - self.t0
                print(f"[search {elapsed:6.0f} s] {name}: its Ray worker was lost; running it "
                      f"again from its checkpoints (retry {trial.num_failures} of "
                      f"{MAX_NODE_LOSSES})", flush=True)

            def on_trial_error(self, iteration, trials, trial, **info):
                self.finished += 1
                self.started.pop(trial.config["name"], None)
                print(f"[search] {trial.config['name']} FAILED (see "
                      f"{self.opts.out}/ray for its log)", flush=True)

        return Progress(*args, **kwargs)


def eta_seconds(trial_s: float, running_ages: list, queued: int, parallel: int) -> float:
    """Time left in a sweep whose finished trials took `trial_s` on average: the running trials
    (started `running_ages` seconds ago) finish after about trial_s each, the `queued` ones run
    `parallel` at a time after them."""
    running = [max(0.0, trial_s - age) for age in running_ages]
    if queued <= 0:
        return max(running, default=0.0)
    return (sum(running) + queued * trial_s) / max(1, parallel)


def _parallel(opts: SearchOptions) -> int:
    return max(1, opts.cpus or os.cpu_count() or 1)


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError):
        return None


def read_result(trial_dir: Path) -> dict | None:
    """A finished trial's result.json; its files are the ones in `trial_dir` (the folder may
    have been made elsewhere: on a cluster node, on a GPU machine, before a move)."""
    res = _read_json(Path(trial_dir) / "result.json")
    if res is not None and isinstance(res.get("files"), dict):     # files kept in the trial's
        res["files"] = {k: str(Path(trial_dir) / Path(v).name)      # folder (the fabric's)
                        if (Path(trial_dir) / Path(v).name).exists() else v
                        for k, v in res["files"].items()}
    return res


def settings_differ(cfg: TrialConfig, stored: dict) -> str | None:
    """How a finished trial's stored config differs from `cfg` ("field: was X, now Y"), or None
    when it is the same trial: resuming must not mix in results made with other settings."""
    from workbench.search.costs import CostSettings
    now = settings_of(cfg)                         # as result.json holds it (lists, not tuples)
    for key in sorted(now):
        old, new = stored.get(key), now[key]
        if key == "costs":
            try:
                old = asdict(CostSettings(**(old or {})))
            except TypeError:
                pass
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
            raise SearchError(f"{Path(cfg.out) / 'result.json'}: trial {cfg.name} finished with "
                              f"other settings ({diff}); give another --out or remove that "
                              f"trial's folder")


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
        cached = fam.baseline(opts.data, ds.image_shape, ds.classes, cfg.space,
                              epochs=cfg.final_epochs,
                              processors=cfg.cost_settings().processors)
        write_json_atomic(path, cached)
    return cached


def write_pareto(opts: SearchOptions) -> dict:
    """DIR/pareto.json from what has finished (front.py): `complete` when every trial and
    baseline training has, the others named in `unfinished` and `unfinished_models`."""
    doc = front.build(opts, collect(opts), opts.plan)
    return front.write(opts, doc)


# what a search directory holds (pareto.json first: the marker of directories written before
# they carried safeio's marker file)
SEARCH_FILES = ("pareto.json", "pareto.png", "front", "trials", "ray", "baseline.json", "verify",
                "models")


def search_directory(opts: SearchOptions) -> OutputDirectory:
    """--out as the search's own directory, locked for the run: refused (SearchError) when it is
    a file, a reserved path (safeio.guard) or a directory that holds anything but an earlier
    search's files."""
    out = OutputDirectory(opts.out, "sacbench search", legacy=SEARCH_FILES,
                          legacy_markers=("pareto.json", "trials"),
                          inputs=(opts.data, opts.trial.get("costs", {}).get("gpu_profile")))
    try:
        out.check()
    except OutputPathError as exc:
        raise SearchError(str(exc)) from None
    if opts.collect_only and not Path(opts.out).is_dir():
        raise SearchError(f"--collect-only: no trial of these options has finished in "
                          f"{Path(opts.out) / 'trials'}")
    return out


def run_search(opts: SearchOptions) -> dict:
    """Run every trial through Ray Tune, then write pareto.json, pareto.png and front/, in
    --out taken for the run (one search per --out at a time)."""
    directory = search_directory(opts)
    if opts.address and not opts.collect_only:     # collecting needs no Ray
        check_address(opts.address)
    check_options(opts)
    try:
        directory.__enter__()
    except OutputPathError as exc:
        raise SearchError(str(exc)) from None
    try:
        return _run_search(opts)
    finally:
        directory.__exit__(None, None, None)


def _run_trials(opts: SearchOptions, todo: list, configs: list, t0: float,
                ray_tmp: str) -> list[tuple[str, object]]:
    """The unfinished trials and final trainings (`todo`: TrialConfig and FinalJob) through Ray
    Tune; returns (name, error) of those that failed. A signal ends it with its own exception,
    marked (interruption()), a lost head with TrialFailed, both once Ray is shut down
    (workbench/ray_session.py)."""
    session = RaySession(Path(ray_tmp) / "driver.log",
                         f"the Ray cluster at {opts.address}" if opts.address else "local Ray",
                         final_words=lambda *why: _final_words(opts, *why))
    try:
        with session:
            _init_ray(opts, session, ray_tmp)
            errors = _fit(opts, todo, configs, t0)
    except ClusterLost as exc:
        raise TrialFailed(_lost(opts, str(exc))) from None
    except BaseException as exc:
        if session.received is not None:
            exc.search_interruption = (session.received, _interrupted(opts, session.received))
        raise
    if session.received is not None:      # a signal that Ray caught and did not pass on
        signum = session.received
        exc = KeyboardInterrupt() if signum == signal.SIGINT else SystemExit(128 + signum)
        exc.search_interruption = (signum, _interrupted(opts, signum))
        raise exc
    return errors


def _tune_config(item) -> dict:
    """A search trial or a final training as one Ray Tune trial's config."""
    if isinstance(item, FinalJob):
        return {"kind": "final", "name": item.name, "job": asdict(item)}
    return {"kind": "trial", "name": item.name, "trial": asdict(item)}


def _fit(opts: SearchOptions, todo: list, configs: list, t0: float) -> list:
    from ray import tune
    out = Path(opts.out)
    tuner = tune.Tuner(
        tune.with_resources(_trainable, trial_resources(opts, configs[0].threads, len(todo))),
        param_space=tune.grid_search([_tune_config(c) for c in todo]),
        tune_config=tune.TuneConfig(max_concurrent_trials=_parallel(opts)),
        run_config=tune.RunConfig(
            name="tune", storage_path=str((out / "ray").resolve()), verbose=0,
            callbacks=[_Progress(opts, len(todo), t0)],
            failure_config=tune.FailureConfig(max_failures=MAX_NODE_LOSSES)))
    try:
        grid = tuner.fit()
    except OSError as exc:            # ConnectionError, BrokenPipeError included
        # the node this process is connected through died (its raylet's socket)
        where = f"the Ray cluster at {opts.address}" if opts.address else "local Ray"
        raise TrialFailed(_lost(opts, f"lost the connection to {where} "
                                      f"({type(exc).__name__}: {exc})")) from None
    except Exception as exc:          # noqa: BLE001 - Ray Tune gave up on the sweep
        return [("the sweep", exc)]
    return [(r.config["name"], _trial_error(r)) for r in grid if _trial_error(r) is not None]


def _interrupted(opts: SearchOptions, signum: int) -> str:
    word = "interrupted" if signum == signal.SIGINT else "terminated"
    return (f"{word} ({signal_name(signum)}); {_kept(opts)}; run the same command again to "
            f"resume (unfinished trials continue from their checkpoints)")


def _lost(opts: SearchOptions, why: str) -> str:
    return (f"{why}; {_kept(opts)}; run the same command again against a working cluster to "
            f"resume (unfinished trials continue from their checkpoints)")


def _final_words(opts: SearchOptions, signum: int | None, lost: str | None,
                 joining: bool) -> tuple[str, int]:
    """The command's line and exit status for a signal or a lost cluster, as main() prints
    and returns them: also used by the session's watchdog when Ray holds the main thread
    (workbench/ray_session.py)."""
    if signum:
        return f"sacbench search: {_interrupted(opts, signum)}", 128 + signum
    if joining and opts.address:                 # as _init_ray says it: bad input
        return (f"sacbench search: error: --address {opts.address}: cannot join the Ray "
                f"cluster ({lost})", 2)
    return f"sacbench search: error: {_lost(opts, lost)}", 3


def _trial_error(result) -> object | None:
    """A Tune result's error: Ray's (its worker lost more than MAX_NODE_LOSSES times), or the
    trial's own exception, which _trainable reports instead of raising."""
    if result.error is not None:
        return result.error
    return (result.metrics or {}).get("error")


def _kept(opts: SearchOptions) -> str:
    done = len(collect(opts))
    return f"{done} of {len(opts.trial_configs())} trial(s) finished and kept in {opts.out}"


def plan_of(opts: SearchOptions, configs: list) -> list[dict]:
    """The baselines' architectures (plan.py), made once per run (deterministic)."""
    if not opts.plan and hasattr(get_family(opts.family), "arch_from_dict"):
        try:
            opts.plan = baseline_plan(configs, tuple(opts.baselines))
        except BaselineError as exc:
            raise SearchError(str(exc)) from None
    return opts.plan


def _run_search(opts: SearchOptions) -> dict:
    configs = opts.trial_configs()
    check_finished(configs)
    out = Path(opts.out)
    plan = plan_of(opts, configs)
    jobs = final_jobs(configs, plan, out.resolve() / "models") if plan else []
    todo = [c for c in configs if read_result(Path(c.out)) is None]
    todo_jobs = [j for j in jobs if read_final(j.out) is None]
    t0 = time.perf_counter()
    done = (f"[search] {len(configs)} trial(s) ({len(configs) - len(todo)} already done in {out})"
            + (f", {len(jobs)} baseline training(s) ({len(jobs) - len(todo_jobs)} done: "
               f"{', '.join(sorted({p['role'] for p in plan}))}, {configs[0].final_seeds} "
               f"seed(s) each)" if jobs else ""))
    if opts.collect_only:
        if len(todo) == len(configs):
            raise SearchError(f"--collect-only: no trial of these options has finished in "
                              f"{out / 'trials'}")
        print(f"{done}; --collect-only: {len(todo)} not finished and not trained"
              + (": " + ", ".join(c.name for c in todo) if todo else ""), flush=True)
        todo, todo_jobs, ray_tmp = [], [], None
    else:
        out.mkdir(parents=True, exist_ok=True)
        ray_tmp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
        print(f"{done}; Ray's logs in {ray_tmp}, trial logs in {out / 'ray'}", flush=True)
    try:
        errors = (_run_trials(opts, todo + todo_jobs, configs, t0, ray_tmp)
                  if todo or todo_jobs else [])
    except BaseException as exc:
        # bad input or an interruption: the temporary files go (a failure, exit 3, keeps
        # its logs there)
        if isinstance(exc, SearchError) or interruption(exc):
            shutil.rmtree(ray_tmp, ignore_errors=True)
        raise
    results = collect(opts)
    if errors or not results:
        if results:
            write_pareto(opts)
        name, err = errors[0] if errors else ("every trial", "no result")
        first = str(err).strip().splitlines()[-1] if str(err).strip() else type(err).__name__
        logs = out / "trials" / name if name in {c.name for c in configs} else out / "ray"
        raise TrialFailed(f"{len(errors)} of {len(configs) + len(jobs)} trial(s) and "
                          f"training(s) failed; {name}: {first} (logs: {logs}, {ray_tmp})")
    if ray_tmp:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    doc = front.build(opts, results, plan)
    if plan:
        doc["rank_agreement"] = front.rank_agreement(opts, doc)
    else:
        doc["zoo"] = zoo_reference(opts)         # the fabric's fixed ResNet, trained once
    front.write(opts, doc)
    front.plot(doc, out / "pareto.png")
    front.publish(opts, doc)
    print(f"[search] done in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return doc
