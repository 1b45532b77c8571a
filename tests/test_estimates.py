"""What the console says about time: no estimate before the first unit (an image, an epoch) has
finished, then the measured time per unit x the units left (workbench/eta.py, on made-up
clocks: nothing here sleeps or times a real run); a build says so only when it really starts,
with the time the last one took (tb/sim.py's record in the build directory); the build log the
compare job prints is under build/ and stays after a successful run."""

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from workbench.eta import Lanes, SearchPhases, about, duration


class Clock:
    def __init__(self, t: float = 0.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_durations_for_a_person():
    assert [duration(s) for s in (0.3, 1.4, 45, 89.6, 600, 5399, 7200)] == [
        "under 1 s",
        "1 s",
        "45 s",
        "90 s",
        "10 min",
        "90 min",
        "2.0 h",
    ]
    assert about(0.2) == "under 1 s" and about(120) == "~2 min"


# -- the RTL images: lanes (shards) running at once ---------------------------------------------
def test_no_estimate_before_the_first_image_has_finished():
    lanes = Lanes([4], start=100.0)
    assert lanes.left_s(100.0) is None
    lanes.update(150.0, [0.99])  # nearly done with the first image: still nothing finished
    assert lanes.left_s(150.0) is None and lanes.finished() == 0


def test_the_estimate_is_the_first_image_measured_times_the_images_left():
    lanes = Lanes([4], start=100.0)  # the simulator started at 100 (after any build)
    lanes.update(142.0, [1.0])  # the first image took 42 s
    assert lanes.per_unit(0) == 42.0
    assert lanes.left_s(142.0) == 3 * 42.0
    assert lanes.left_s(152.0) == 3 * 42.0 - 10  # counting down until the next image
    lanes.update(172.0, [2.0])  # the second took 30 s: the later images' own mean
    assert lanes.per_unit(0) == 30.0 and lanes.left_s(172.0) == 2 * 30.0
    lanes.update(300.0, [4.0])
    assert lanes.left_s(300.0) == 0.0


def test_lanes_run_at_once_and_the_slowest_decides():
    lanes = Lanes([2, 2, 1], start=0.0)
    lanes.update(10.0, [1.0, 0.5, 0.2])  # lane 0 measured (10 s per image), the others not yet
    # lanes 1 and 2 are taken to be as slow as the slowest measured: 2 and 1 images from 0
    assert lanes.left_s(10.0) == max(10.0 * 1, 10.0 * 2 - 10, 10.0 * 1 - 10)
    lanes.update(40.0, [1.0, 1.0, 0.9])  # lane 1: 40 s per image
    assert lanes.left_s(40.0) == max(10.0 * 1 - 30, 40.0 * 1, 40.0 * 1 - 40)


def test_several_images_finished_between_two_looks():
    lanes = Lanes([6], start=0.0)
    lanes.update(20.0, [2.0])  # two images in 20 s, seen at once
    assert lanes.per_unit(0) == 10.0 and lanes.left_s(20.0) == 40.0
    lanes.update(26.0, [4.0])  # then two more in 6 s
    assert lanes.per_unit(0) == 3.0 and lanes.left_s(26.0) == 6.0


def test_the_rtl_bar_measures_from_the_shards_start_not_from_the_build(monkeypatch):
    from workbench.rtl_shards import Progress

    clock = Clock(0.0)
    bar = Progress([2, 2], "RTL (icarus, 2 jobs)", enabled=False, clock=clock)
    clock.t = 600.0  # a 10-minute build
    assert bar.postfix() == Progress.WAITING
    bar.start()
    clock.t = 640.0
    bar.show([0.5, 0.7])
    assert bar.postfix() == Progress.WAITING  # nothing finished: no time left shown
    clock.t = 650.0
    bar.show([1.0, 0.9])  # 50 s for the first image, not 650
    assert bar.postfix() == f"~{duration(50.0)} left"
    bar.show([2.0, 2.0])
    assert bar.postfix() == "" and bar.bar.n == 4
    bar.close()


# -- the search: lanes (Ray Tune trials) of two phases -----------------------------------------
def test_search_phases_say_nothing_before_their_first_epoch():
    lanes = {f"t{i}": (20, 3) for i in range(3)}  # 3 trials: 20 super epochs, then 3 seeds each
    ph = SearchPhases(lanes, parallel=2)
    assert ph.left_s() == {} and ph.line() == "" and ph.total_s() is None
    ph.super_epoch("t0", 12.0)
    ph.super_epoch("t1", 18.0)
    # 19 + 19 + 20 epochs left at 15 s, two trials at a time
    assert ph.left_s() == {SearchPhases.SUPER: 58 * 15.0 / 2}
    assert ph.line() == f"left: super networks ~{duration(58 * 15.0 / 2)}"
    assert ph.total_s() is None  # the final trainings' length is not known yet
    # a final training's epochs are measured, but its length is known once one has finished
    for _ in range(4):
        ph.final_epoch("t0", 0, 5.0)  # t0's super network is over (its final trainings began)
    assert SearchPhases.FINAL not in ph.left_s()
    ph.final_epoch("t0", 1, 7.0)  # t0's first training is done (4 epochs); its second at 7 s
    # 19 + 20 epochs left in two trials: the longer one (20 epochs) decides
    assert ph.left_s()[SearchPhases.SUPER] == max(20 * 15.0, (19 + 20) * 15.0 / 2) == 300.0
    mean = (4 * 5.0 + 7.0) / 5
    t0 = 3 * 7.0 + 1 * 4 * mean  # its running training's 3 epochs at its own 7 s, one more to come
    t1 = t2 = 3 * 4 * mean
    assert ph.left_s()[SearchPhases.FINAL] == pytest.approx((t0 + t1 + t2) / 2)
    lanes = [t0, t1 + 19 * 15.0, t2 + 20 * 15.0]  # each trial's work in both phases
    assert ph.total_s() == pytest.approx(max(max(lanes), sum(lanes) / 2))
    ph.lane_done("t0")
    assert ph.left_s()[SearchPhases.FINAL] == pytest.approx((t1 + t2) / 2)


def test_a_trials_seeds_run_one_after_the_other():
    """One trial, 3 seeds, 4 trials at a time: its first training took 4 epochs at 5 s, the
    second has run one: 3 + 4 epochs at 5 s are left in the trial, one after the other (35 s;
    shared among the 2 trainings left as if they ran at once it would be 17.5 s)."""
    ph = SearchPhases({"t": (0, 3)}, parallel=4)
    for _ in range(4):
        ph.final_epoch("t", 0, 5.0)
    ph.final_epoch("t", 1, 5.0)  # the first training is done (4 epochs), the second 1 epoch in
    assert ph.left_s() == {SearchPhases.FINAL: 35.0} and ph.total_s() == 35.0
    ph.final_epoch("t", 2, None)  # the third began (its first epoch not measured)
    assert ph.left_s() == {SearchPhases.FINAL: 15.0}
    ph.lane_done("t")
    assert ph.left_s() == {} and ph.total_s() == 0.0


def test_trials_running_side_by_side_share_the_time():
    """4 trials of 10 epochs, 4 at a time, each halfway at 6 s per epoch: 30 s left, not 60."""
    ph = SearchPhases({f"t{i}": (10, 0) for i in range(4)}, parallel=4)
    for _ in range(5):
        for i in range(4):
            ph.super_epoch(f"t{i}", 6.0)
    assert ph.left_s() == {SearchPhases.SUPER: 30.0} and ph.total_s() == 30.0
    # two at a time: the 4 trials' 20 epochs at 6 s on 2 lanes
    ph.parallel = 2
    assert ph.left_s() == {SearchPhases.SUPER: 60.0}


def test_the_last_trial_has_no_parallel_help():
    ph = SearchPhases({"a": (10, 0), "b": (10, 0)}, parallel=4)
    for _ in range(10):
        ph.super_epoch("a", 2.0)
    for _ in range(5):
        ph.super_epoch("b", 2.0)
    assert ph.left_s() == {SearchPhases.SUPER: 5 * 2.0}  # one trial left: one at a time


def test_a_trials_done_line_says_the_time_left_in_all_from_the_same_model(tmp_path, monkeypatch, capsys):
    pytest.importorskip("ray.tune")
    from workbench.search import ray_backend
    from workbench.search.trial import TrialConfig

    clock = Clock(0.0)
    monkeypatch.setattr(ray_backend, "time", SimpleNamespace(perf_counter=clock))
    monkeypatch.setattr(ray_backend, "write_pareto", lambda opts: None)
    res = {
        "arch_text": "c8",
        "accuracy": {"val": 0.5},
        "finals": [{}],
        "costs": {"cycles": 900.0},
        "budget_ratio": 0.9,
    }
    monkeypatch.setattr(ray_backend, "read_result", lambda out: res)
    opts = SimpleNamespace(cpus=2, cost="cycles", out=str(tmp_path))
    cfgs = [
        TrialConfig(
            "sac", "cycles", 1000, 1.0, s, epochs=2, final_seeds=1, out=str(tmp_path / f"t{s}"), name=f"t{s}"
        )
        for s in range(2)
    ]
    progress = ray_backend.Progress(opts, 2, 0.0, cfgs)
    trials = {
        c.name: SimpleNamespace(
            config={"name": c.name, "kind": "trial", "trial": {"epochs": 2, "out": c.out}}, last_result={}
        )
        for c in cfgs
    }

    def result(name, **kw):
        progress.on_trial_result(0, [], trials[name], {"final": False, "val_accuracy": 0.5, **kw})

    epoch = {"phase": "search", "cost": 900.0, "arch": "c8"}
    final = {"phase": "final", "desc": "integer", "epochs": 3}
    for name in ("t0", "t1"):
        result(name, epoch=1, seconds=10.0, **epoch)
    result("t0", epoch=2, seconds=10.0, **epoch)
    for e in (1, 2, 3):
        clock.t += 4.0
        result("t0", epoch=e, seconds=4.0, training=0, **final)
    capsys.readouterr()
    progress.on_trial_complete(0, [], trials["t0"])
    # t1: one super epoch at 10 s, then a training of 3 epochs at 4 s
    line = capsys.readouterr().out.strip()
    assert line.endswith(f"; {about(10.0 + 3 * 4.0)} left in all"), line
    assert not hasattr(ray_backend, "eta_seconds")  # one model of the time left


def test_the_search_progress_lines_end_with_the_time_left(tmp_path, monkeypatch, capsys):
    pytest.importorskip("ray.tune")
    from workbench.search import ray_backend
    from workbench.search.trial import TrialConfig

    clock = Clock(0.0)
    monkeypatch.setattr(ray_backend, "time", SimpleNamespace(perf_counter=clock))
    opts = SimpleNamespace(cpus=1, cost="cycles", out=str(tmp_path))
    cfg = TrialConfig(
        "sac", "cycles", 1000, 1.0, 0, epochs=2, final_seeds=2, out=str(tmp_path / "t"), name="t"
    )
    progress = ray_backend.Progress(opts, 1, 0.0, [cfg])
    trial = SimpleNamespace(config={"name": "t", "kind": "trial", "trial": {"epochs": 2}})

    def result(**kw):
        progress.on_trial_result(0, [], trial, {"final": False, "val_accuracy": 0.5, **kw})
        return capsys.readouterr().out.strip()

    epoch = {"phase": "search", "cost": 900.0, "arch": "c8"}
    assert result(epoch=1, seconds=30.0, **epoch).endswith("; left: super networks ~30 s")
    final = {"phase": "final", "desc": "float twin", "epochs": 2}
    clock.t = 100.0
    line = result(epoch=1, seconds=10.0, training=0, **final)
    assert "final trainings" not in line  # no training finished yet: its length is unknown
    clock.t = 112.0
    result(epoch=2, seconds=22.0, training=0, **final)
    clock.t = 150.0  # (a trial's final-training lines come every FINAL_LINE_S at most)
    line = result(epoch=1, seconds=8.0, training=1, **final)  # the first training is done
    # its one epoch left at its own 8 s (the first training: 10 and 12 s per epoch); the
    # trial's super network is over since its final trainings began
    assert line.endswith("; left: final trainings ~8 s")


def test_a_rerun_is_said_to_resume():
    from workbench.search.driver import resume_line

    line = resume_line(Path("out/search/x"))
    assert line.startswith("[search]") and "the same command resumes" in line and "out/search/x" in line


# -- builds: said when they start, timed, their logs kept ----------------------------------------
class FakeRunner:
    """Stands in for cocotb's runner: a build that writes its log and takes `seconds` of the
    fake clock."""

    def __init__(self, clock: Clock, seconds: float):
        self.clock, self.seconds = clock, seconds

    def build(self, log_file, build_dir, **kwargs):
        Path(log_file).write_text("built\n")
        (Path(build_dir) / "sim").write_text("built")
        self.clock.t += self.seconds


def test_a_build_says_so_only_when_it_starts_with_the_last_builds_time(tmp_path, monkeypatch, capfd):
    from tb import sim

    clock = Clock(1000.0)
    monkeypatch.setattr(sim, "BUILD", tmp_path / "sim")
    monkeypatch.setattr(sim, "CLOCK", clock)
    monkeypatch.setattr(sim, "_runner", lambda _sim: FakeRunner(clock, 42.0))
    bdir = sim.build("sac_cell", "icarus", {"X": 1})
    err = capfd.readouterr().err
    assert "building the icarus simulator of sac_cell (no earlier build of it timed" in err
    record = json.loads((bdir / sim.BUILD_TIME).read_text())
    assert record["seconds"] == 42.0 and record["parameters"] == {"X": 1}
    assert sim.last_build(bdir, "icarus")["seconds"] == 42.0  # read back

    sim.build("sac_cell", "icarus", {"X": 1})  # complete and current: no build, no line
    assert capfd.readouterr().err == ""

    (bdir / ".build-complete").write_text("older sources")  # this configuration again
    sim.build("sac_cell", "icarus", {"X": 1})
    assert "(its last build on this machine took 42 s; log: " in capfd.readouterr().err

    monkeypatch.setattr(sim, "_runner", lambda _sim: FakeRunner(clock, 300.0))
    other = sim.build("sac_cell", "icarus", {"X": 2})  # another configuration: the newest other
    assert "the last icarus build of it on this machine, of another configuration, took 42 s" in (
        capfd.readouterr().err
    )
    assert sim.last_build(other, "icarus")["seconds"] == 300.0
    assert sim.last_build(tmp_path / "sim" / "sac_cell" / "verilator-x", "verilator") is None


def test_an_unreadable_record_is_no_record(tmp_path):
    from tb import sim

    bdir = tmp_path / "top" / "icarus-abc"
    bdir.mkdir(parents=True)
    (bdir / sim.BUILD_TIME).write_text("{not json")
    assert sim.last_build(bdir, "icarus") is None
    msg = sim.build_message("top", "icarus", Path("/x.log"), None)
    assert (
        msg
        == "building the icarus simulator of top (no earlier build of it timed on this machine; log: /x.log)"
    )


@pytest.mark.skipif(shutil.which("iverilog") is None, reason="no iverilog (make setup installs it)")
def test_the_compare_jobs_build_prints_a_log_path_that_stays(tmp_path, monkeypatch, capfd):
    """The compare job's build runs in a child process: its line comes through once, when the
    build starts, naming a log under the build root that is there after the build."""
    from tb import sim
    from workbench import rtl_shards

    monkeypatch.setattr(sim, "BUILD", tmp_path / "build" / "sim")
    bdir = rtl_shards._supervised_build("sac_cell", "icarus", {}, None)
    lines = capfd.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("building the icarus simulator of sac_cell (")
    log = Path(lines[0].split("log: ")[1].rstrip(")"))
    assert log.is_file() and log.is_relative_to(tmp_path / "build" / "sim" / "logs")
    assert (bdir / sim.BUILD_TIME).is_file()
    assert rtl_shards._supervised_build("sac_cell", "icarus", {}, None) == bdir
    assert capfd.readouterr().err == ""  # built: nothing said
