"""Quantization-aware training: the pieces agree with the golden numerics, and a tiny model trained
for an epoch or two evaluates identically in PyTorch (eval mode), onnxruntime and the golden
executor; training is deterministic for a seed; scripts/train.py writes the model and its card."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch

from fpga.compiler import compile_network
from models import golden
from models.datasets import load_digits
from models.numerics import sac as sac_num
from models.onnx import ort as onnx_ort
from models.onnx.importer import import_onnx
from models.train import bnn as bnn_train
from models.train import sac as sac_train
from models.train.common import random_shift, seed_everything, to_tensors, training_session
from models.train.recipes import train_bnn, train_sac

SEED = 8080
ROOT = Path(__file__).resolve().parents[1]


def test_pow2_ste_equals_golden_quantizer():
    rng = np.random.default_rng(SEED)
    print("seed", SEED)
    w = (rng.standard_normal(20000) * rng.choice([1e-3, 0.05, 0.5, 3], 20000)).astype(np.float32)
    w[:4] = [0.0, 1.0, -(2.0**-6), 2.0**-7]
    q = sac_train.Pow2STE.apply(torch.from_numpy(w)).numpy().astype(np.float64)
    ref = sac_num.quantize_pow2(w.astype(np.float64), overflow="saturate").values
    assert np.array_equal(q, ref)


def test_combine_mask_equals_keep_largest():
    rng = np.random.default_rng(SEED + 1)
    print("seed", SEED + 1)
    w_int = sac_num.quantize_pow2(rng.standard_normal((12, 21)) * 0.3, overflow="saturate").w_int
    for g in (1, 2, 3, 4, 8):
        mask = sac_train.combine_mask(
            torch.from_numpy(w_int.astype(np.float32)), torch.ones(12, 21), g
        ).numpy()
        ref = sac_num.decode_packed(sac_num.combine_columns(w_int, g, "keep_largest").packed, g, 21)
        assert np.array_equal(w_int * (mask > 0), ref), g


def test_torch_data_transforms_equal_golden():
    rng = np.random.default_rng(SEED + 2)
    print("seed", SEED + 2)
    x = rng.integers(0, 256, (3, 5, 8, 8)).astype(np.uint8)
    t = torch.from_numpy(x.astype(np.float64))
    assert np.array_equal(sac_train.space_to_depth(t, 2).numpy(), sac_num.space_to_depth(x, 2))
    d = rng.integers(0, 9, 5)
    got = sac_train.channel_shift(t, sac_train.shift_kernel(d)).numpy()
    assert np.array_equal(got, sac_num.channel_shift(x, d))
    gen = torch.Generator().manual_seed(1)
    moved = random_shift(t, gen)
    assert moved.shape == t.shape and set(np.unique(moved.numpy())) <= set(np.unique(x)) | {0}


def three_way(model, net, x):
    """PyTorch eval scores, golden scores and onnxruntime scores of the exported file."""
    from models.onnx.export import export_onnx

    model.eval()
    with torch.no_grad():
        t = model(torch.from_numpy(x.astype(np.float32))).double().numpy()
    ref = golden.run(net, x)
    onnx_model = export_onnx(net)
    ort = onnx_ort.run(onnx_model, net, x)[0]
    unit = 64.0 if net.meta.get("family") == "sac" else 1.0  # SAC torch scores are acc / 64
    assert np.array_equal(t * unit, ref.scores.astype(np.float64))
    assert np.array_equal(ort, ref.scores.astype(np.float32))
    return ref, onnx_model


@pytest.fixture(scope="module")
def tiny_bnn():
    return train_bnn(
        "digits",
        epochs=2,
        float_epochs=1,
        seed=SEED,
        progress=False,
        cfg=bnn_train.BnnConfig(channels=(8, 16), hidden=16),
    )


@pytest.fixture(scope="module")
def tiny_sac():
    return train_sac(
        "digits",
        epochs=1,
        float_epochs=1,
        seed=SEED,
        progress=False,
        stages=2,
        cfg=sac_train.SacConfig(widths=(8, 16), groups=(1, 2), final_group=2),
    )


def test_bnn_training_torch_golden_ort_agree(tiny_bnn):
    rng = np.random.default_rng(SEED + 3)
    print("seed", SEED + 3)
    r = tiny_bnn
    d = load_digits("test")
    ref, _ = three_way(r.model, r.net, d.images)
    assert (
        r.accuracy["quantized_test"]
        == r.accuracy["golden_test"]
        == float((ref.predictions == d.labels).mean())
    )
    three_way(r.model, r.net, rng.integers(0, 256, (50, 1, 8, 8)).astype(np.uint8))
    back = bnn_train.BnnNet.from_network(import_onnx(three_way(r.model, r.net, d.images[:5])[1]))
    three_way(back, r.net, d.images)


def test_sac_training_torch_golden_ort_agree(tiny_sac):
    rng = np.random.default_rng(SEED + 4)
    print("seed", SEED + 4)
    r = tiny_sac
    d = load_digits("test")
    three_way(r.model, r.net, d.images)
    three_way(r.model, r.net, rng.integers(0, 256, (50, 1, 8, 8)).astype(np.uint8))
    # column combining reached the target groups; the network runs on the default array
    groups = [layer.weights.group for layer in r.net.layers if hasattr(layer, "weights")]
    assert groups == [1, 2, 2]
    for stats in r.extra["column_combining"]:
        f, k = stats["shape"]
        kc = -(-k // stats["group"])
        assert stats["nonzero_after_quantization"] <= f * kc
    compile_network(r.net)
    back = sac_train.SacNet.from_network(r.net)
    three_way(back, r.net, d.images)


def test_training_is_deterministic(tiny_bnn):
    again = train_bnn(
        "digits",
        epochs=2,
        float_epochs=1,
        seed=SEED,
        progress=False,
        cfg=bnn_train.BnnConfig(channels=(8, 16), hidden=16),
    )
    for a, b in zip(tiny_bnn.net.layers, again.net.layers, strict=True):
        for k in ("weight", "bias", "threshold", "direction"):
            if hasattr(a, k):
                assert np.array_equal(getattr(a, k), getattr(b, k)), (a.type_name, k)
    assert again.accuracy == tiny_bnn.accuracy


@pytest.mark.parametrize(
    "device",
    [
        "cpu",
        pytest.param(
            "cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
        ),
    ],
)
def test_bnn_trains_on_each_device_into_the_exact_integer_network(device):
    """The BNN recipe on `device` (--device cuda in a search): the quantized model evaluated
    there gives the golden network's scores exactly (TF32 would round them), and the models
    come back on the CPU."""
    seed = SEED + 5
    print("seed", seed)
    r = train_bnn(
        "digits",
        epochs=1,
        float_epochs=1,
        seed=seed,
        progress=False,
        device=device,
        cfg=bnn_train.BnnConfig(channels=(8, 16), hidden=16),
    )
    assert r.settings["device"] == device
    assert next(r.model.parameters()).device.type == "cpu"
    images = np.concatenate(
        [
            load_digits("val").images,
            np.random.default_rng(seed).integers(0, 256, (50, 1, 8, 8)).astype(np.uint8),
        ]
    )
    model = r.model.to(device).eval()
    with torch.no_grad():
        scores = model(torch.from_numpy(images.astype(np.float32)).to(device)).cpu().double()
    assert np.array_equal(scores.numpy(), golden.run(r.net, images).scores.astype(np.float64))
    val = load_digits("val")
    assert r.accuracy["quantized_val"] == float(
        (golden.run(r.net, val.images).predictions == val.labels).mean()
    )


class _Interrupt(Exception):
    pass


@pytest.mark.parametrize(
    "family,stop_at", [("bnn", ("float twin", 1)), ("bnn", ("binary QAT", 1)), ("sac", ("QAT stage 2/2", 1))]
)
def test_interrupted_training_resumes_from_its_checkpoints_to_the_same_model(family, stop_at, tmp_path):
    """A recipe run with checkpoint_dir, interrupted after an epoch of one phase and run
    again, gives the network and accuracies of an uninterrupted run, to the bit (the optimizer,
    schedule, generator and best state are in the checkpoint)."""
    seed = SEED + 6
    print("seed", seed)
    if family == "bnn":
        run = lambda **kw: train_bnn(  # noqa: E731
            "digits",
            epochs=2,
            float_epochs=2,
            seed=seed,
            progress=False,
            **kw,
            cfg=bnn_train.BnnConfig(channels=(8, 16), hidden=16),
        )
    else:
        run = lambda **kw: train_sac(  # noqa: E731
            "digits",
            epochs=1,
            float_epochs=1,
            seed=seed,
            progress=False,
            stages=2,
            **kw,
            cfg=sac_train.SacConfig(widths=(8, 16), groups=(1, 2), final_group=2),
        )
    whole = run()
    seen = []

    def stop(entry):
        seen.append((entry["desc"], entry["epoch"]))
        if entry["desc"].startswith(stop_at[0]) and entry["epoch"] == stop_at[1]:
            raise _Interrupt

    with pytest.raises(_Interrupt):
        run(checkpoint_dir=tmp_path, on_epoch_end=stop)
    assert list(tmp_path.glob("*.pt")) and not list(tmp_path.glob("*.tmp"))
    resumed_epochs = []
    again = run(
        checkpoint_dir=tmp_path, on_epoch_end=lambda e: resumed_epochs.append((e["desc"], e["epoch"]))
    )
    assert not set(resumed_epochs) & set(seen)  # nothing trained twice
    assert again.accuracy == whole.accuracy
    for a, b in zip(whole.net.layers, again.net.layers, strict=True):
        for k in ("weight", "bias", "threshold", "direction", "weights"):
            if hasattr(a, k) and isinstance(getattr(a, k), np.ndarray):
                assert np.array_equal(getattr(a, k), getattr(b, k)), (a.type_name, k)
    assert (
        golden.run(whole.net, load_digits("test").images).scores.tolist()
        == golden.run(again.net, load_digits("test").images).scores.tolist()
    )


def test_checkpoints_of_another_training_run_are_refused(tmp_path):
    """checkpoint_dir holding another run's phases (here: another seed) is an error naming
    the setting, not a silent resume of the other model; nothing in the folder changes."""
    tiny = dict(
        epochs=1,
        float_epochs=1,
        progress=False,
        checkpoint_dir=tmp_path,
        cfg=bnn_train.BnnConfig(channels=(8, 16), hidden=16),
    )
    train_bnn("digits", seed=SEED, **tiny)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(ValueError, match=f"another training run \\(seed: was {SEED}, now {SEED + 1}\\)"):
        train_bnn("digits", seed=SEED + 1, **tiny)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_training_session_fixes_and_restores_settings():
    before = (torch.get_num_threads(), torch.are_deterministic_algorithms_enabled())
    with training_session(3, threads=1) as gen:
        assert torch.get_num_threads() == 1 and torch.are_deterministic_algorithms_enabled()
        a = torch.rand(3, generator=gen)
    assert (torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()) == before
    assert torch.equal(a, torch.rand(3, generator=seed_everything(3, torch.get_num_threads())))
    torch.use_deterministic_algorithms(before[1])
    x, y = to_tensors(load_digits("val"))
    assert x.dtype == torch.float32 and y.dtype == torch.int64 and x.max() == 255


def test_train_script_writes_model_and_card(tmp_path):
    out = tmp_path / "tiny_sac.onnx"
    cmd = [
        sys.executable,
        str(ROOT / "scripts" / "train.py"),
        "--family",
        "sac",
        "--data",
        "digits",
        "--epochs",
        "1",
        "--float-epochs",
        "1",
        "--seed",
        "5",
        "--out",
        str(out),
        "--no-progress",
    ]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    last = res.stdout.strip().splitlines()[-1]
    assert last.startswith("sac digits: quantized test accuracy ") and "seed 5" in last
    card = json.loads(out.with_suffix(".json").read_text())
    assert card["family"] == "sac" and card["training"]["seed"] == 5
    assert "--epochs 1" in card["training"]["command"]
    assert card["exactness"]["onnxruntime_equals_golden_on_test_scores"] is True
    assert card["compiled"]["default_8x8"]["fits"] and len(card["column_combining"]) == 5
    assert card["compiled"]["sac_array"]["8x8"]["cycles_per_image"] > 0
    assert card["test_subset"]["golden_correct"] > 0
    net = import_onnx(out)
    d = load_digits("test")
    acc = float((golden.run(net, d.images).predictions == d.labels).mean())
    assert round(100 * acc, 2) == card["accuracy_percent"]["quantized_test"]
    onnx.checker.check_model(str(out))
    bad = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "train.py"),
            "--family",
            "bnn",
            "--data",
            str(tmp_path / "nothing"),
            "--out",
            str(tmp_path / "o.onnx"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert bad.returncode == 2 and "nothing: no such file or directory" in bad.stderr
    assert not (tmp_path / "o.onnx").exists()


@pytest.mark.parametrize("family", ["bnn", "sac"])
def test_training_on_user_idx_files(family, tmp_path):
    """--data PATH: a tiny MNIST-format directory (written here) trains, exports and agrees."""
    import gzip

    rng = np.random.default_rng(SEED + 9)
    print("seed", SEED + 9)
    for prefix, n in (("train", 40), ("t10k", 12)):
        img = rng.integers(0, 256, (n, 12, 12)).astype(np.uint8)
        lab = rng.integers(0, 10, n).astype(np.uint8)
        for kind, arr in (("images-idx3", img), ("labels-idx1", lab)):
            head = bytes([0, 0, 8, arr.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in arr.shape)
            raw = gzip.compress(head + arr.tobytes())
            (tmp_path / f"{prefix}-{kind}-ubyte.gz").write_bytes(raw)
    if family == "bnn":
        r = train_bnn(
            tmp_path,
            epochs=1,
            float_epochs=1,
            seed=1,
            progress=False,
            cfg=bnn_train.BnnConfig(input_shape=(1, 12, 12), channels=(4, 8), hidden=8),
        )
    else:
        r = train_sac(
            tmp_path,
            epochs=1,
            float_epochs=1,
            seed=1,
            progress=False,
            stages=1,
            cfg=sac_train.SacConfig(input_shape=(1, 12, 12), widths=(8,), groups=(2,)),
        )
    assert r.net.input_shape == (1, 12, 12)
    x = rng.integers(0, 256, (6, 1, 12, 12)).astype(np.uint8)
    three_way(r.model, r.net, x)


@pytest.mark.parametrize("flatten_at", [None, 2])
def test_sac_with_max_pooling_runs_on_every_path(flatten_at):
    """A SAC CNN with a 2x2 max pooling between its layers, and optionally a dense head on the
    flattened map (the Fashion-MNIST model's shape): PyTorch eval, golden, onnxruntime, the ONNX
    round trip and the array (segments with the pooling and the flattening on the host between
    them) agree."""
    from fpga.compiler import fitted_config
    from fpga.execute import interpret

    r = train_sac(
        "digits",
        epochs=1,
        float_epochs=1,
        seed=SEED,
        progress=False,
        stages=1,
        cfg=sac_train.SacConfig(widths=(8, 16), groups=(1, 2), pools=(0,), flatten_at=flatten_at),
    )
    types = [layer.type_name for layer in r.net.layers]
    assert types[:3] == ["PointwiseConv", "MaxPool2d", "ChannelShift"]
    d = load_digits("test")
    _, model = three_way(r.model, r.net, d.images)
    back = sac_train.SacNet.from_network(import_onnx(model))
    assert back.cfg.pools == (0,) and back.cfg.flatten_at == flatten_at
    three_way(back, r.net, d.images)
    prog = compile_network(r.net, fitted_config(r.net, 8, 8))
    host = [
        i
        for i, layer in enumerate(r.net.layers)
        if layer.type_name in ("MaxPool2d", "SpaceToDepth") and i > 0
    ]
    assert prog.host_layers == host and len(prog.segments) == len(host) + 1
    run = interpret(prog, d.images[:40])
    assert np.array_equal(run.outputs[len(r.net.layers) - 1], golden.run(r.net, d.images[:40]).scores)


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--family", "sac", "--data", "fashion:train"], "training uses the train, val and test"),
        (["--family", "sac", "--channels", "8,16"], "--channels applies to --family bnn only"),
        (["--family", "bnn", "--pools", "1"], "--pools applies to --family sac only"),
        (["--family", "sac", "--widths", "8,16", "--groups", "1"], "one group per hidden layer"),
        (["--family", "sac", "--pools", "0,0"], "each hidden layer 0..3 at most once"),
        (["--family", "sac", "--pools", "0,1,2,3"], "poolings leave no pixels"),
        (["--family", "sac", "--s2d", "3"], "--s2d 3 does not divide the 8x8 images"),
        (["--family", "sac", "--max-shift", "8"], "--max-shift 8 must be less than the images' side"),
        (["--family", "sac", "--device", "cuda"], "--device cuda applies to --family bnn only"),
        pytest.param(
            ["--family", "bnn", "--device", "cuda"],
            "--device cuda: torch",
            marks=pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is here"),
        ),
    ],
)
def test_train_flags_are_checked(flags, message, capsys, tmp_path):
    from workbench.commands.train import main

    assert main(flags + ["--out", str(tmp_path / "x.onnx")]) == 2
    assert message in capsys.readouterr().err


def test_a_single_csv_file_is_refused_for_training_in_one_prefixed_line(capsys, tmp_path, no_training):
    """A HEP-BNN CSV is one file with no train split: one line, the command named."""
    from workbench.commands.train import main

    csv = tmp_path / "one.csv"
    csv.write_text(
        ",".join([f"p{i}" for i in range(64)] + ["label"]) + "\n" + ",".join(["0"] * 64 + ["3"]) + "\n"
    )
    assert main(["--family", "sac", "--data", str(csv), "--out", str(tmp_path / "x.onnx")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        f"sacbench train: error: {csv}: a single file has no 'train' split"
    ), err


def test_train_flags_reach_the_recipe():
    from workbench.commands.train import parse_args, recipe_kwargs

    args = parse_args(
        [
            "--family",
            "sac",
            "--data",
            "fashion",
            "--s2d",
            "2",
            "--widths",
            "8,16,16",
            "--groups",
            "1,2,4",
            "--pools",
            "1",
            "--batch",
            "256",
            "--max-shift",
            "2",
            "--lr",
            "0.005",
            "--out",
            "x.onnx",
        ]
    )
    kw = recipe_kwargs(args, (1, 28, 28))
    assert kw["cfg"] == sac_train.SacConfig(
        input_shape=(1, 28, 28), s2d=2, widths=(8, 16, 16), groups=(1, 2, 4), pools=(1,)
    )
    assert (kw["batch"], kw["max_shift"], kw["lr"]) == (256, 2, 0.005)
    args = parse_args(["--family", "bnn", "--channels", "64,128", "--hidden", "0", "--out", "x.onnx"])
    assert recipe_kwargs(args, (1, 28, 28))["cfg"] == bnn_train.BnnConfig(
        input_shape=(1, 28, 28), channels=(64, 128), hidden=0
    )


@pytest.fixture
def no_training(monkeypatch):
    """Training must not start: the checks come first."""
    from workbench.commands import train as cmd

    def refuse(*_, **__):
        raise AssertionError("training started before the flags were checked")

    monkeypatch.setattr(cmd, "train_bnn", refuse)
    monkeypatch.setattr(cmd, "train_sac", refuse)


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--epochs", "0"], "argument --epochs: --epochs must be at least 1, got 0"),
        (["--epochs", "-1"], "argument --epochs: --epochs must be at least 1, got -1"),
        (["--float-epochs", "0"], "argument --float-epochs: --float-epochs must be at least 1, got 0"),
        (["--threads", "0"], "argument --threads: --threads must be at least 1, got 0"),
        (["--seed", str(10**23)], "argument --seed: --seed must be at most 4,294,967,295"),
        (["--lr", "nan"], "argument --lr: --lr must be a finite number, got 'nan'"),
        (["--lr", "inf"], "argument --lr: --lr must be a finite number, got 'inf'"),
        (["--float-lr", "1e308"], "argument --float-lr: --float-lr must be at most 10"),
        (["--widths", "100000000"], "argument --widths: --widths must be at most 4,096"),
        (["--epochs", "1_0"], "argument --epochs: --epochs must be a whole number, got '1_0'"),
        (["--epochs", "\u0663"], "--epochs must be a whole number"),
        (["--kd-alpha", "2"], "--kd-alpha must be at most 1"),
    ],
)
def test_train_refuses_bad_counts(flags, message, capsys, tmp_path, no_training):
    from workbench.commands.train import main

    with pytest.raises(SystemExit) as exc:
        main(["--family", "bnn", "--out", str(tmp_path / "x.onnx")] + flags)
    assert exc.value.code == 2 and message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_train_checks_the_output_path_first(capsys, tmp_path, no_training):
    from workbench.commands.train import main

    def run(out, *extra):
        code = main(["--family", "sac", "--out", str(out), *extra])
        err = capsys.readouterr().err
        assert err.count("\n") == 1, err
        return code, err

    (tmp_path / "m.onnx").write_bytes(b"old model")
    (tmp_path / "c.json").write_text("{}")
    (tmp_path / "d.onnx").mkdir()
    (tmp_path / "file").write_text("x")
    cases = [
        (tmp_path / "m.onnx", "m.onnx exists; pass --force to replace it"),
        (tmp_path / "c.onnx", "c.json exists; pass --force to replace it"),
        (tmp_path / "d.onnx", "d.onnx: is a directory, not a file"),
        (tmp_path / "file" / "x.onnx", "file is a file, not a directory"),
        (tmp_path / "x.txt", "--out must end in .onnx"),
        ("/proc/x.onnx", "is under /proc, a virtual file system"),
    ]
    for out, message in cases:
        code, err = run(out)
        assert code == 2 and message in err, (out, err)
    # --force: refused for a model without its card (not one train wrote)
    code, err = run(tmp_path / "m.onnx", "--force")
    assert code == 2 and "is not a model or card this command wrote" in err, err
    assert (tmp_path / "m.onnx").read_bytes() == b"old model"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.json", "d.onnx", "file", "m.onnx"]
    # ... and lets the checks pass for one whose card names it with its digest (training would
    # start)
    import hashlib

    (tmp_path / "m.json").write_text(
        json.dumps({"file": "m.onnx", "family": "sac", "sha256": hashlib.sha256(b"old model").hexdigest()})
    )
    with pytest.raises(AssertionError, match="training started"):
        main(["--family", "sac", "--out", str(tmp_path / "m.onnx"), "--force"])


def test_epoch_counts_follow_epochs_and_quick():
    from workbench.commands.train import epoch_counts, parse_args

    def counts(*flags):
        return epoch_counts(parse_args(["--out", "x.onnx", *flags]))

    assert counts("--family", "bnn") == (100, 60)
    assert counts("--family", "sac") == (15, 40)
    assert counts("--family", "bnn", "--epochs", "10") == (10, 6)
    assert counts("--family", "bnn", "--epochs", "1") == (1, 1)
    assert counts("--family", "sac", "--epochs", "3") == (3, 8)
    assert counts("--family", "bnn", "--epochs", "10", "--float-epochs", "2") == (10, 2)
    assert counts("--family", "sac", "--quick") == (1, 1)
    assert counts("--family", "bnn", "--quick", "--epochs", "4") == (4, 2)
    assert counts("--family", "bnn", "--quick", "--float-epochs", "3") == (1, 3)
