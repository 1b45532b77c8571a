"""Ray clusters of several nodes, for real, on this machine: a head and worker nodes as
separate raylet processes (ray.cluster_utils.Cluster, run by a helper process of its own
session, so that a node can be killed as a machine would die and everything of the cluster
ended afterwards). What users meet when they go past one machine with `--address`:

* a worker node lost in the middle of a search: its trial runs again on another node from
  its checkpoints, no trial is lost or counted twice, and the front equals an undisturbed
  run's (same seeds, one torch thread per trial: deterministic);
* a worker node lost in the middle of the compare job's RTL shards: the shard runs again on
  another node (Ray's task retries) and the merged results equal one process's; a simulator
  that fails is not retried: the job fails (exit 3), as without Ray;
* the head lost: the search ends with exit 3 and one line within about half a minute, and the
  same command against a new cluster continues from the finished trials and the checkpoints;
  the compare job ends with exit 3 and one line as well;
* the search's own local Ray killed with it (SIGTERM to the whole process group): exit 143
  and one line, in bounded time.

Slow (half a minute to a minute and a half each on 2 cores): marked `cluster`, run by
`make test-cluster`, not by `make test`. The one quick test, a trial that raises, is not
retried like a lost node's (it fails the search, exit 3), runs in `make test`."""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from tests.helpers import ROOT
from tests.test_rtl_shards import alive, assert_same, descendants, processes
from workbench import rtl_shards

pytest.importorskip("ray")

SEED = 0  # the trials' seed (--first-seed): each trial is deterministic for its seed
# two trials of the digits SAC space, one epoch each (tens of seconds); --final-epochs 2
# makes the final training (the phase a node is killed in) last a few seconds
SWEEP = [
    "--family",
    "sac",
    "--cost",
    "cycles",
    "--budgets",
    "6000,20000",
    "--epochs",
    "1",
    "--warmup-epochs",
    "0",
    "--final-epochs",
    "2",
    "--final-float-epochs",
    "1",
    "--layers",
    "2",
    "--width",
    "16",
    "--first-seed",
    str(SEED),
    "--final-seeds",
    "1",
    "--baselines",
    "none",
]
TRIALS = [f"sac_cycles_b{b}_l1_s{SEED}" for b in (6000, 20000)]

# the cluster: started, then told on stdin which node to kill ("kill w1", "kill head")
_CLUSTER = r"""
import json, sys
import ray._private.utils
from ray.cluster_utils import Cluster
# not recorded in /tmp/ray/ray_current_cluster, where ray.init() without an address (other
# tests, a user's) would find it, and join it, even stopped
ray._private.utils.write_ray_address = lambda *args, **kwargs: None
head_cpus, workers, temp = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
cluster = Cluster(initialize_head=True, head_node_args={
    "num_cpus": head_cpus, "temp_dir": temp, "include_dashboard": False})
nodes = {"head": cluster.head_node}
for k in range(workers):
    nodes[f"w{k + 1}"] = cluster.add_node(num_cpus=1)
cluster.wait_for_nodes()
raylets = {name: node.all_processes["raylet"][0].process.pid for name, node in nodes.items()}
print(json.dumps({"address": cluster.address, "raylets": raylets}), flush=True)
for line in sys.stdin:
    cmd, name = (line.split() + ["", ""])[:2]
    if cmd == "kill":
        cluster.remove_node(nodes.pop(name), allow_graceful=False)
        print(json.dumps({"killed": name}), flush=True)
"""


def _session_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2 :].split()[3])  # state, ppid, pgrp, session


class LocalCluster:
    """A head with `head_cpus` CPUs and `workers` worker nodes of one CPU, on this machine."""

    def __init__(self, head_cpus: int, workers: int):
        self.temp = tempfile.mkdtemp(prefix="rc-", dir="/tmp")  # Unix socket paths: short
        # open for the cluster's lifetime, closed by stop()
        self.log = open(Path(self.temp) / "cluster.log", "w")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _CLUSTER, str(head_cpus), str(workers), self.temp],
            cwd=ROOT,
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            start_new_session=True,
        )
        info = json.loads(self._reply(120))
        self.address, self.raylets = info["address"], info["raylets"]

    def _reply(self, timeout_s: float) -> str:
        got = []
        reader = threading.Thread(target=lambda: got.append(self.proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout_s)
        assert got and got[0], f"the cluster helper did not answer (log: {self.log.name})"
        return got[0]

    def node_of(self, pid: int) -> str | None:
        """The node whose raylet `pid` descends from (a worker's parent is its raylet)."""
        table = processes()
        while pid in table and pid > 1:
            for name, raylet in self.raylets.items():
                if pid == raylet:
                    return name
            pid = table[pid][0]
        return None

    def kill(self, name: str) -> None:
        """The node's processes killed (SIGKILL), as when its machine dies."""
        self.proc.stdin.write(f"kill {name}\n")
        self.proc.stdin.flush()
        assert json.loads(self._reply(60)) == {"killed": name}
        self.raylets.pop(name)

    def close(self) -> None:
        """Every process of the cluster's session ended (workers included)."""
        for pid in [p for p in processes() if _session_of(p) == self.proc.pid]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait(timeout=30)
        self.log.close()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(
            _session_of(p) == self.proc.pid and state != "Z" for p, (_, state, _) in processes().items()
        ):
            time.sleep(0.1)
        shutil.rmtree(self.temp, ignore_errors=True)
        # a killed node's shard scratch is the next run's to remove: the test leaves none
        rtl_shards.remove_stale_scratch()


@pytest.fixture
def cluster_factory():
    made = []

    def make(head_cpus: int, workers: int) -> LocalCluster:
        made.append(LocalCluster(head_cpus, workers))
        return made[-1]

    yield make
    for c in made:
        c.close()


# a line of Ray's own logging (Python's "2026-12-05 08:14:59,060 ERROR ...", C++'s
# "[2026-12-05 08:14:59,060 E 31254 31287] task_manager.cc:...") or of its raylet's messages
RAY_LINE = re.compile(r"^\[?\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}|\(raylet\)|\(pid=")


def ray_lines(text: str) -> list[str]:
    """The lines of Ray's own output in a command's console output."""
    return [line for line in text.splitlines() if RAY_LINE.search(line)]


def not_progress(stderr: str) -> list[str]:
    """stderr's lines but the search's progress ('[search ...'): its one error line."""
    return [line for line in stderr.strip().splitlines() if not line.startswith("[search")]


def still_alive(seen: dict, within_s: float) -> list:
    """Those of the processes `seen` still running after waiting up to within_s for them."""
    deadline = time.monotonic() + within_s
    while alive(seen) and time.monotonic() < deadline:
        time.sleep(0.2)
    return alive(seen)


def _front(out: Path) -> dict:
    """name -> (accuracies, costs, architecture) of pareto.json's models."""
    doc = json.loads((out / "pareto.json").read_text())
    assert doc["complete"], doc["unfinished"]
    return {m["name"]: (m["accuracy"], m["costs"], m["arch"]) for m in doc["models"]}


@pytest.fixture(scope="module")
def undisturbed(tmp_path_factory) -> dict:
    """The sweep's front on a local Ray (two trials on two CPUs: one torch thread each, as on
    a cluster), with nothing killed."""
    out = tmp_path_factory.mktemp("undisturbed")
    run = _search(*SWEEP, "--cpus", "2", "--out", out)
    assert run.returncode == 0, run.stderr[-3000:]
    return _front(out)


def _search(*args, timeout=600):
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "search.py"), *map(str, args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
    )
    _drop_ray_tmp(run.stderr)
    return run


def _drop_ray_tmp(stderr: str) -> None:
    """A search that failed (exit 3) keeps its Ray logs in the /tmp/ray-* it names on its
    first line (stderr: progress), for its user; the tests leave none behind."""
    m = re.search(r"Ray's logs in (/tmp/ray-[^,\s]+)", stderr)
    if m:
        shutil.rmtree(m.group(1), ignore_errors=True)


class Job:
    """A command run in the background, its output gathered, its processes recorded."""

    def __init__(self, args: list, **kwargs):
        self.proc = subprocess.Popen(
            args,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            **kwargs,
        )
        self.out, self.err, self.seen = [], [], {}
        for stream, sink in ((self.proc.stdout, self.out), (self.proc.stderr, self.err)):
            threading.Thread(target=lambda s=stream, k=sink: k.extend(s), daemon=True).start()

    def poll_until(self, ready, timeout_s: float = 300):
        """Calls ready() every 50 ms (recording the job's processes) until it returns
        something true, which is returned; fails if the job ends first."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self.seen.update(descendants(self.proc.pid))
            found = ready()
            if found:
                return found
            assert self.proc.poll() is None, "".join(self.out + self.err)[-3000:]
            time.sleep(0.05)
        raise AssertionError(f"not ready within {timeout_s} s")

    def wait(self, timeout_s: float) -> tuple[int, str, str]:
        self.proc.wait(timeout=timeout_s)
        time.sleep(0.2)  # the readers' last lines
        _drop_ray_tmp("".join(self.err))
        return self.proc.returncode, "".join(self.out), "".join(self.err)


def _search_job(out: Path, address: str) -> Job:
    return Job(
        [sys.executable, str(ROOT / "scripts" / "search.py"), *SWEEP, "--address", address, "--out", str(out)]
    )


def _trial_on_a_worker(cluster: LocalCluster, out: Path):
    """(trial, node) of a trial that has trained its super network, has not finished and runs
    on a worker node (its trial.log names its process), or None."""
    for name in TRIALS:
        folder = out / "trials" / name
        try:
            log = (folder / "trial.log").read_text().splitlines()
        except OSError:
            continue
        starts = [line for line in log if "started in process" in line]
        if not starts or not (folder / "checkpoint" / "supernet.pt").exists():
            continue
        if (folder / "result.json").exists():
            continue
        node = cluster.node_of(int(starts[-1].split("started in process ")[1].split()[0]))
        if node not in (None, "head"):
            return name, node
    return None


@pytest.mark.cluster
def test_search_survives_a_lost_worker_node(cluster_factory, undisturbed, tmp_path):
    """A worker node killed while its trial trains the final model: the sweep finishes, the
    lost trial runs again on another node from its super network's checkpoint, every trial is
    counted once, and the front equals the undisturbed run's."""
    print(f"seed {SEED}")
    cluster = cluster_factory(head_cpus=1, workers=2)  # 3 CPUs: one spare for the rerun
    job = _search_job(tmp_path, cluster.address)
    victim, node = job.poll_until(lambda: _trial_on_a_worker(cluster, tmp_path))
    cluster.kill(node)
    code, out, err = job.wait(300)
    assert code == 0, err[-3000:]
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith("[search] done")
    assert not ray_lines(out + err), ray_lines(out + err)
    assert (
        err.count(f"{victim}: its Ray worker was lost; running it again from its checkpoints (retry 1 of 3)")
        == 1
    ), err
    for name in TRIALS:
        assert err.count(f"] {name} done (") == 1, err  # each counted once (progress: stderr)
    assert "done (3/3)" in err and "FAILED" not in err  # 2 trials, the zoo architecture
    log = (tmp_path / "trials" / victim / "trial.log").read_text()
    assert log.count("started in process") == 2 and "super network from " in log, log
    assert _front(tmp_path) == undisturbed
    assert not still_alive(job.seen, 10)


# the compare job's RTL shards through rtl_shards.run (the compare job's own call), their
# results pickled: ARGS address, images, work directory, results file
_RTL = r"""
import pickle, sys
from pathlib import Path
from fpga.compiler import compile_network, fitted_config
from models import zoo
from models.datasets import load_for_network
from models.onnx import load_network
from workbench import rtl_shards
net = load_network(zoo.path("sac_digits"))
prog = compile_network(net, fitted_config(net, 8, 8, 64))
x, _ = load_for_network("digits", net, split="test")
try:
    run = rtl_shards.run(prog, x[:int(sys.argv[2])], "verilator", 2, Path(sys.argv[3]),
                         address=sys.argv[1], progress=False)
except rtl_shards.ShardError as exc:
    print(f"ShardError: {exc}", file=sys.stderr)
    sys.exit(3)
with open(sys.argv[4], "wb") as f:
    pickle.dump(run, f)
"""
RTL_IMAGES = 16  # 8 a shard: seconds of simulation, time to kill a node meanwhile


@pytest.fixture(scope="module")
def serial_rtl(tmp_path_factory) -> dict:
    """RTL_IMAGES images in one local simulator process: the results every run must equal."""
    from fpga.compiler import compile_network, fitted_config
    from models import zoo
    from models.datasets import load_for_network
    from models.onnx import load_network

    net = load_network(zoo.path("sac_digits"))
    prog = compile_network(net, fitted_config(net, 8, 8, 64))
    x, _ = load_for_network("digits", net, split="test")
    return rtl_shards.run(
        prog, x[:RTL_IMAGES], "verilator", 1, tmp_path_factory.mktemp("serial"), progress=False
    )


def _simulator_on(cluster: LocalCluster, job: Job, nodes: tuple) -> tuple | None:
    """(pid, node) of a running simulator (a child of a shard's worker process) on one of
    `nodes`, or None."""
    table = processes()
    for pid, (parent, state, cmd) in table.items():
        name = os.path.basename(cmd.split(" ")[0])
        if name != "accelerator_tb_wrapper" or state == "Z":
            continue
        if "workbench.rtl_shards" not in table.get(parent, (0, "", ""))[2]:
            continue
        node = cluster.node_of(pid)
        if node in nodes:
            return pid, node
    return None


def _rtl_job(cluster: LocalCluster, tmp_path: Path, tag: str) -> Job:
    return Job(
        [
            sys.executable,
            "-c",
            _RTL,
            cluster.address,
            str(RTL_IMAGES),
            str(tmp_path / tag),
            str(tmp_path / f"{tag}.pkl"),
        ]
    )


@pytest.mark.cluster
def test_rtl_shard_of_a_lost_node_runs_again_and_a_failed_simulator_does_not(
    cluster_factory, serial_rtl, tmp_path
):
    """Two shards on a cluster of three one-CPU nodes. A worker node killed while its shard's
    simulator runs: the shard runs again elsewhere and the merged results equal one process's.
    A simulator killed by SIGSEGV (a simulator failure, not a lost node) is not run again:
    the run fails naming the shard (the compare job's exit 3)."""
    cluster = cluster_factory(head_cpus=1, workers=2)
    job = _rtl_job(cluster, tmp_path, "lost")
    _, node = job.poll_until(lambda: _simulator_on(cluster, job, ("w1", "w2")))
    cluster.kill(node)
    code, _, err = job.wait(300)
    assert code == 0, err[-3000:]
    with open(tmp_path / "lost.pkl", "rb") as f:
        run = pickle.load(f)
    assert run["jobs"] == 2
    assert_same(serial_rtl, run)
    assert not still_alive(job.seen, 10), {p: job.seen[p] for p in alive(job.seen)}

    left = tuple(n for n in ("head", "w1", "w2") if n in cluster.raylets)
    job = _rtl_job(cluster, tmp_path, "segv")
    pid, _ = job.poll_until(lambda: _simulator_on(cluster, job, left))
    os.kill(pid, signal.SIGSEGV)
    code, _, err = job.wait(300)
    last = err.strip().splitlines()[-1]
    assert code == 3 and "the simulator was killed by SIGSEGV" in last, err[-3000:]
    assert not (tmp_path / "segv.pkl").exists()


@pytest.mark.cluster
def test_search_ends_when_the_head_is_lost_and_resumes_on_a_new_cluster(
    cluster_factory, undisturbed, tmp_path
):
    """The head killed while a trial trains its final model: exit 3 within 90 s with one line
    that says how to resume, no traceback; the same command against a new cluster continues
    (the finished trials kept, the others from their checkpoints) to the undisturbed front."""
    print(f"seed {SEED}")
    first = cluster_factory(head_cpus=1, workers=1)
    job = _search_job(tmp_path, first.address)
    job.poll_until(lambda: list((tmp_path / "trials").glob("*/checkpoint/supernet.pt")))
    first.kill("head")
    t0 = time.monotonic()
    code, out, err = job.wait(120)
    took = time.monotonic() - t0
    lines = not_progress(err)
    assert code == 3 and len(lines) == 1 and not ray_lines(out), err[-3000:] + out[-3000:]
    assert lines[0].startswith(
        f"sacbench search: error: the Ray cluster at {first.address} stopped answering"
    ), lines[0]
    assert "run the same command again against a working cluster to resume" in lines[0]
    assert took < 90, f"{took:.0f} s"
    print(f"the search ended {took:.0f} s after its head was killed")
    first.close()  # the rest of the lost cluster, as an operator would

    second = cluster_factory(head_cpus=1, workers=1)
    job = _search_job(tmp_path, second.address)
    code, out, err = job.wait(300)
    assert code == 0, err[-3000:]
    done = sum((tmp_path / "trials" / n / "result.json").exists() for n in TRIALS)
    assert done == 2 and "2 trial(s) (" in err
    logs = [(tmp_path / "trials" / n / "trial.log").read_text() for n in TRIALS]
    assert any("super network from " in log for log in logs), logs
    assert _front(tmp_path) == undisturbed


_COMPARE_RTL = [
    "--model",
    str(ROOT / "models" / "zoo" / "sac_digits.onnx"),
    "--images",
    str(RTL_IMAGES),
    "--rtl-images",
    str(RTL_IMAGES),
    "--rtl-jobs",
    "2",
]


@pytest.mark.cluster
def test_compare_ends_when_the_head_is_lost(cluster_factory, tmp_path):
    """RTL shards on a head and one worker (one shard each): the head killed while they run
    ends the compare job with exit 3 and one line within 90 s (the head's shard cannot run
    again anywhere: Ray cannot schedule without its GCS)."""
    cluster = cluster_factory(head_cpus=1, workers=1)
    job = Job(
        [
            sys.executable,
            str(ROOT / "scripts" / "compare_gpu_fpga.py"),
            *_COMPARE_RTL,
            "--address",
            cluster.address,
            "--out",
            str(tmp_path / "out"),
        ]
    )
    job.poll_until(lambda: _simulator_on(cluster, job, ("head",)))
    cluster.kill("head")
    t0 = time.monotonic()
    code, _, err = job.wait(120)
    took = time.monotonic() - t0
    last = err.strip().splitlines()[-1]
    assert code == 3 and "Traceback" not in err, err[-3000:]
    assert not ray_lines(err), ray_lines(err)
    # the job's own node was the head: its connection breaks (at once), or the watchdog
    # finds the head gone (HEAD_LOST_S)
    assert last.startswith("sacbench compare: error: RTL shards on Ray: ") and (
        f"lost the connection to the Ray cluster at {cluster.address}" in last
        or f"the Ray cluster at {cluster.address} stopped answering" in last
    ), last
    assert len([line for line in err.splitlines() if "error" in line.lower()]) == 1, err
    assert took < 90, f"{took:.0f} s"


@pytest.mark.cluster
def test_search_ends_when_its_local_ray_dies_with_it(tmp_path):
    """SIGTERM to the search's whole process group (a service manager stopping it) ends its
    local Ray's processes under it: the driver's clean-up would wait for a GCS that is gone,
    so the session's watchdog ends it with exit 143 and the one line, in bounded time."""
    job = Job(
        [sys.executable, str(ROOT / "scripts" / "search.py"), *SWEEP, "--cpus", "2", "--out", str(tmp_path)]
    )
    job.poll_until(lambda: list((tmp_path / "trials").glob("*/checkpoint/supernet.pt")))
    os.killpg(job.proc.pid, signal.SIGTERM)
    t0 = time.monotonic()
    code, _, err = job.wait(120)
    lines = not_progress(err)
    assert code == 143 and len(lines) == 1, err[-3000:]
    assert lines[0].startswith("sacbench search: terminated (SIGTERM); "), lines[0]
    assert time.monotonic() - t0 < 40
    # Ray's workers (process groups of their own: the signal did not reach them) end when
    # they find their raylet gone
    assert not still_alive(job.seen, 20), {p: job.seen[p] for p in alive(job.seen)}


def test_a_trial_that_raises_fails_the_search_and_is_not_retried(tmp_path):
    """Ray Tune runs a trial again when its worker is lost (FailureConfig), but an exception
    of the trial itself (here: its folder is a file, which nothing can train into) is not a
    lost worker: reported once, not retried, the search ends with exit 3 and one line."""
    from tests.test_search import ONE_TRIAL

    name = "sac_cycles_b6000_l1_s0"
    (tmp_path / "trials").mkdir(parents=True)
    (tmp_path / "trials" / name).write_text("not a folder")
    run = _search(*ONE_TRIAL, "--out", tmp_path)
    lines = not_progress(run.stderr)
    assert run.returncode == 3 and len(lines) == 1, run.stderr[-3000:]
    # one trial and the zoo architecture's training
    assert lines[0].startswith(
        f"sacbench search: error: 1 of 2 trial(s) and training(s) failed; {name}: FileExistsError: "
    ), lines[0]
    assert run.stderr.count(f"[search] {name} FAILED: FileExistsError") == 1, run.stderr
    assert "its Ray worker was lost" not in run.stderr
    assert not ray_lines(run.stdout + run.stderr)
