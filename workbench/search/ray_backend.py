"""The search's trials and baseline trainings as Ray Tune trials: the trainable, joining or
starting Ray inside a RaySession (workbench/ray_session.py), the resources of a trial, the
progress callback, and the fit. A lost worker or node is retried from the checkpoints
(MAX_NODE_LOSSES); a trial's own exception is reported, not retried."""

from __future__ import annotations

import math
import os
import socket
import time
from dataclasses import asdict
from pathlib import Path

from ray.tune import Callback

from safeio import write_text_atomic
from workbench.eta import SearchPhases, about
from workbench.ray_session import ClusterLost, RaySession
from workbench.search.errors import SearchError, TrialFailed
from workbench.search.evaluation import FinalJob, read_final, run_final
from workbench.search.families import IntegerFamily
from workbench.search.families import family as get_family
from workbench.search.options import SearchOptions, _parallel, check_address
from workbench.search.results import lost_line, read_result, settings_differ, write_pareto
from workbench.search.trial import TrialConfig, run_trial

ROOT = Path(__file__).resolve().parents[2]  # the project Ray ships to a cluster's workers

# Ray Tune starts a trial again when its worker was lost (the node died, the process was
# killed): it continues from its checkpoints (DIR/trials/<name>/checkpoint). An exception raised
# by the trial itself (a bug, bad data) is not retried: it would fail again the same way.
MAX_NODE_LOSSES = 3


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
        result = _logged_trial(cfg, lambda entry: tune.report({"phase": "search", **entry, "final": False}))
    except Exception as exc:  # noqa: BLE001 - the trial's own error: reported, not retried
        tune.report(
            {"final": True, "error": f"{type(exc).__name__}: {exc}", "error_log": _error_log(Path(cfg.out))}
        )
        return
    tune.report(
        {
            "final": True,
            "val_accuracy": result["accuracy"]["val"],
            "test_accuracy": result["accuracy"]["test"],
            "cost": result["costs"].get(cfg.cost),
            "arch": result["arch_text"],
            "result_file": str(Path(cfg.out) / "result.json"),
        }
    )


def _final_trainable(job: FinalJob, tune) -> None:
    try:
        res = run_final(
            job, on_epoch_end=lambda entry: tune.report({"phase": "final", **entry, "final": False})
        )
    except Exception as exc:  # noqa: BLE001 - its own error: reported, not retried
        tune.report(
            {"final": True, "error": f"{type(exc).__name__}: {exc}", "error_log": _error_log(Path(job.out))}
        )
        return
    tune.report({"final": True, "val_correct": res["val_correct"], "val_total": res["val_total"]})


def _logged_trial(cfg: TrialConfig, report) -> dict:
    """run_trial with its lines in DIR/trials/<name>/trial.log, appended by every start (where
    it ran; resumed from which checkpoint), and a trial that finished before its worker was
    lost (Tune had not heard) not trained again."""
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "trial.log", "a", buffering=1) as logf:  # log: the trial's own lines

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


def init_ray(opts: SearchOptions, session: RaySession, temp_dir: str):
    """Join the cluster of --address, or start a local Ray in `temp_dir`, inside `session`
    (signals, logs, the head's watchdog: workbench/ray_session.py)."""
    kwargs = {}
    if opts.address:
        check_address(opts.address)
        kwargs["runtime_env"] = {
            "working_dir": str(ROOT),
            "excludes": [
                ".venv",
                "build",
                "out",
                ".git",
                "sim_build",
                "*.onnx.tmp",
                ".hypothesis",
                "mutants",
            ],
        }
        try:
            ray = session.init(address=opts.address, **kwargs)
        except (ConnectionError, RuntimeError, ValueError, ClusterLost) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise SearchError(f"--address {opts.address}: cannot join the Ray cluster ({first})") from None
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
        ray = session.init(
            address="local", num_cpus=opts.cpus or os.cpu_count(), _temp_dir=temp_dir, **kwargs
        )
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


def search_phases(opts: SearchOptions, todo: list) -> SearchPhases:
    """The time left of the phases of the unfinished work `todo` (TrialConfig and FinalJob):
    the super networks' epochs (none for a trial whose super network is checkpointed, done),
    and the final trainings (each trial's seeds, or its one fabric training, and the jobs), one
    lane per Ray Tune trial: a trial's epochs and trainings run one after the other."""
    lanes = {c.name: (0, 1) for c in todo}  # a baseline's job: one final training
    for c in todo:
        if isinstance(c, TrialConfig):
            lanes[c.name] = (0 if _supernet_done(c) else c.epochs, _trainings(c))
    return SearchPhases(lanes, parallel=_parallel(opts))


def _supernet_done(cfg: TrialConfig) -> bool:
    return (Path(cfg.out) / "checkpoint" / "supernet.pt").exists()  # trial.py's checkpoint


def _trainings(cfg: TrialConfig) -> int:
    """The final trainings of a trial: its seeds (integer families), or the fabric's one."""
    return cfg.final_seeds if isinstance(get_family(cfg.family), IntegerFamily) else 1


class Progress(Callback):
    """A Ray Tune callback: one line per trial epoch and per finished trial or training, and
    pareto.json after every finished one (so an interrupted search keeps what is done). The
    epoch lines end with the time left of each phase, a finished trial's line with the time
    left in all, both measured on the epochs so far (workbench.eta.SearchPhases, one model):
    none before the first epoch of a phase has finished."""

    def __init__(self, opts, total, t0, todo: list | tuple = ()):
        self.opts, self.total, self.t0, self.finished = opts, total, t0, 0
        self.last_line = {}  # trial name -> time of its last line
        self.phases = search_phases(opts, list(todo))
        self.training = {}  # trial name -> (its running final training, time of its last epoch)

    def _final_epoch(self, name: str, result: dict) -> None:
        """An epoch of a final training: of the trial's k-th one (result "training", from
        trial.py) or of a baseline's job; the one before it in the trial has finished."""
        now = time.perf_counter()
        k = int(result.get("training", 0))
        before = self.training.get(name)
        # the epoch's time: since the training's last epoch, or the first epoch's own
        if before is not None and before[0] == k:
            seconds = now - before[1]
        else:
            seconds = result.get("seconds") if result["epoch"] == 1 else None
        self.phases.final_epoch(name, k, seconds)
        self.training[name] = (k, now)

    def _trial_over(self, name: str) -> None:
        """Its work is over: its final trainings too (those it read back, trained before)."""
        self.training.pop(name, None)
        self.phases.lane_done(name)

    def _left(self) -> str:
        line = self.phases.line()
        return f"; {line}" if line else ""

    def on_trial_result(self, iteration, trials, trial, result, **info):
        name = trial.config["name"]
        elapsed = time.perf_counter() - self.t0
        if result.get("final"):
            return
        if result.get("phase") == "final":
            self._final_epoch(name, result)
            # at most one line per trial every FINAL_LINE_S (digits: 160 short epochs),
            # and the last epoch of each phase
            now = time.perf_counter()
            if now - self.last_line.get(name, -1e9) < FINAL_LINE_S and result["epoch"] < result["epochs"]:
                return
            self.last_line[name] = now
            print(
                f"[search {elapsed:6.0f} s] {name}: final training, {result['desc']} "
                f"epoch {result['epoch']}/{result['epochs']}, val "
                f"{100 * result['val_accuracy']:.1f}%{self._left()}",
                flush=True,
            )
            return
        self.phases.super_epoch(name, result["seconds"])  # the epoch's measured time (trial.py)
        epochs = trial.config["trial"].get("epochs")  # a search trial's
        print(
            f"[search {elapsed:6.0f} s] {name}: epoch {result['epoch']}/{epochs}, "
            f"val {100 * result['val_accuracy']:.1f}%, {self.opts.cost} "
            f"{result['cost']:,.4g}, {result['arch']}{self._left()}",
            flush=True,
        )

    def on_trial_complete(self, iteration, trials, trial, **info):
        self.finished += 1
        name = trial.config["name"]
        self._trial_over(name)
        error = (trial.last_result or {}).get("error")
        if error:  # the trial's own exception (_trainable)
            where = trial.last_result.get("error_log")
            print(
                f"[search] {name} FAILED: {error.splitlines()[0]}"
                + (f" (traceback: {where})" if where else ""),
                flush=True,
            )
            return
        if trial.config["kind"] == "final":
            self._final_done(name, trial.config["job"])
            return
        res = read_result(Path(trial.config["trial"]["out"]))
        elapsed = time.perf_counter() - self.t0
        left = self.phases.total_s() if self.finished < self.total else None
        if res:
            print(
                f"[search {elapsed:6.0f} s] {name} done ({self.finished}/{self.total}):"
                f" {res['arch_text']}; val {100 * res['accuracy']['val']:.2f}% (mean "
                f"of {len(res.get('finals')) or 1} seed(s)), {self.opts.cost} "
                f"{res['costs'].get(self.opts.cost):,.4g} "
                f"({res['budget_ratio']:.2f}x its budget)" + (f"; {about(left)} left in all" if left else ""),
                flush=True,
            )
        write_pareto(self.opts)

    def _final_done(self, name: str, job: dict) -> None:
        res = read_final(job["out"])
        if res:
            elapsed = time.perf_counter() - self.t0
            print(
                f"[search {elapsed:6.0f} s] {name} done ({self.finished}/"
                f"{self.total}): {res['arch_text']}; val {res['val_correct']}/"
                f"{res['val_total']}",
                flush=True,
            )
        write_pareto(self.opts)

    def on_trial_recover(self, iteration, trials, trial, **info):
        # its worker was lost (a node died, the process was killed): Tune starts it
        # again, and it continues from its checkpoints
        name = trial.config["name"]
        elapsed = time.perf_counter() - self.t0
        print(
            f"[search {elapsed:6.0f} s] {name}: its Ray worker was lost; running it "
            f"again from its checkpoints (retry {trial.num_failures} of "
            f"{MAX_NODE_LOSSES})",
            flush=True,
        )

    def on_trial_error(self, iteration, trials, trial, **info):
        self.finished += 1
        self._trial_over(trial.config["name"])
        print(f"[search] {trial.config['name']} FAILED (see {self.opts.out}/ray for its log)", flush=True)


def _tune_config(item) -> dict:
    """A search trial or a final training as one Ray Tune trial's config."""
    if isinstance(item, FinalJob):
        return {"kind": "final", "name": item.name, "job": asdict(item)}
    return {"kind": "trial", "name": item.name, "trial": asdict(item)}


def fit(opts: SearchOptions, todo: list, configs: list, t0: float) -> list:
    from ray import tune

    out = Path(opts.out)
    tuner = tune.Tuner(
        tune.with_resources(_trainable, trial_resources(opts, configs[0].threads, len(todo))),
        param_space=tune.grid_search([_tune_config(c) for c in todo]),
        tune_config=tune.TuneConfig(max_concurrent_trials=_parallel(opts)),
        run_config=tune.RunConfig(
            name="tune",
            storage_path=str((out / "ray").resolve()),
            verbose=0,
            callbacks=[Progress(opts, len(todo), t0, todo)],
            failure_config=tune.FailureConfig(max_failures=MAX_NODE_LOSSES),
        ),
    )
    try:
        grid = tuner.fit()
    except OSError as exc:  # ConnectionError, BrokenPipeError included
        # the node this process is connected through died (its raylet's socket)
        where = f"the Ray cluster at {opts.address}" if opts.address else "local Ray"
        raise TrialFailed(
            lost_line(opts, f"lost the connection to {where} ({type(exc).__name__}: {exc})")
        ) from None
    except Exception as exc:  # noqa: BLE001 - Ray Tune gave up on the sweep
        return [("the sweep", exc)]
    return [(r.config["name"], _trial_error(r)) for r in grid if _trial_error(r) is not None]


def _trial_error(result) -> object | None:
    """A Tune result's error: Ray's (its worker lost more than MAX_NODE_LOSSES times), or the
    trial's own exception, which _trainable reports instead of raising."""
    if result.error is not None:
        return result.error
    return (result.metrics or {}).get("error")
