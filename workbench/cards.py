"""Model cards: the JSON written next to every trained ONNX file (models/zoo/*.json).

Besides accuracy and the training command, a card holds what the model costs once compiled:

* every network: cycles per image on the SAC array, from the compiler (``fpga.compiler``) and
  the cycle model (``fpga.cycle_model``, which the RTL meets cycle for cycle), on an 8x8 and a
  128x64 array with memories sized by ``fitted_config``; for SAC networks also whether the
  default 8x8 ``ArrayConfig`` holds it;
* BNNs: the GPU mapping (``gpu_kernels.mapper``: HEP-BNN's Algorithm 1 and the transfer-aware
  DP) over a *modelled* profile (:class:`ModelledGpuProfile`), so the card is the same on every
  machine; measured profiles (``scripts/map_bnn.py``) vary from run to run and, without a GPU,
  time the CPU emulation rather than a GPU.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from pathlib import Path

import numpy as np
import onnx
import torch

from models.datasets import load_dataset
from models.onnx.export import export_onnx
from models.onnx.ort import run as ort_run
from models.train.recipes import GOLDEN_CHUNK, golden_scores
from safeio import atomic_path, write_json_atomic
from safeio.staged import signals_deferred

# (rows, cols, data-buffer banks): the RTL's default 8x8 and the seed paper's 128x64 (with as
# many banks as benchmarks/cifar_cycles.py gives it: 64 banks cannot hold 128-row tiles)
ARRAYS = ((8, 8, 64), (128, 64, 1024))
GPU_BATCHES = (64, 128, 256, 512, 1024)
GPU_IMAGES = 10_000
SUBSET = 1000  # tests recompute the golden hits on these test images


def _pct(x: float) -> float:
    return round(100.0 * float(x), 2)


# ---------------------------------------------------------------------------------------------
# SAC array: compile and count cycles
# ---------------------------------------------------------------------------------------------
def cycles_per_image(prog) -> int:
    """Cycles of one image on the array: every segment's instructions up to its HALT, from the
    cycle model (host layers between segments are not array cycles)."""
    from fpga.cycle_model import total_cycles

    return sum(
        total_cycles(prog.instructions[s.start_pc : s.start_pc + s.n_instr], prog.config)
        for s in prog.segments
    )


def array_cost(net, rows: int, cols: int, cmax: int = 64, clock_dir=None) -> dict:
    """Compile `net` for a rows x cols array with fitted memories: sizes, program, cycles, and
    the latency at the clock fpga/clock.py gives this configuration (with where it comes from:
    a routed Fmax recorded in `clock_dir`, by default build/timing, or the paper's, not routed)."""
    from fpga.clock import clock_for
    from fpga.compiler import CompileError, compile_network, fitted_config

    try:
        cfg = fitted_config(net, rows, cols, cmax)
        prog = compile_network(net, cfg)
    except CompileError as exc:
        return {"array": f"{rows}x{cols}", "error": str(exc)}
    cycles = cycles_per_image(prog)
    clock = clock_for(cfg, None, clock_dir)
    return {
        "array": f"{rows}x{cols}",
        "config": dict(cfg.__dict__),
        "instructions": len(prog.instructions),
        "segments": len(prog.segments),
        "weight_words": int(prog.wmem.shape[0]),
        "biases": int(prog.bmem.shape[0]),
        "dbuf_entries": int(prog.dbuf_used),
        "pbuf_entries": int(prog.pbuf_used),
        "host_layers": list(prog.host_layers),
        "cycles_per_image": int(cycles),
        "latency_ms": round(cycles / (clock.mhz * 1e3), 4),
        "clock": clock.as_dict(),
    }


def default_array_fit(net) -> dict:
    """Whether the default ArrayConfig (8x8 and its default memories) holds the network."""
    from fpga.arch import ArrayConfig
    from fpga.compiler import CompileError, compile_network

    try:
        prog = compile_network(net, ArrayConfig())
    except CompileError as exc:
        return {"array": "default ArrayConfig (8x8)", "fits": False, "error": str(exc)}
    return {
        "array": "default ArrayConfig (8x8)",
        "fits": True,
        "instructions": len(prog.instructions),
        "weight_words": int(prog.wmem.shape[0]),
        "biases": int(prog.bmem.shape[0]),
        "dbuf_entries": int(prog.dbuf_used),
        "pbuf_entries": int(prog.pbuf_used),
    }


# ---------------------------------------------------------------------------------------------
# GPU: a modelled profile for the mapper
# ---------------------------------------------------------------------------------------------
class ModelledGpuProfile:
    """A deterministic profile source for ``gpu_kernels.mapper.map_network``, so that a card is
    the same on every machine. The GPU configurations, their host issue time and the copies are
    ``gpu_kernels.gpu_model`` (the occupancy model of an H200 the compare job maps with, calibrated
    against the H200's measured layer times); the CPU implementation takes ``cpu_overhead_s``
    plus its word operations at ``cpu_ops_per_s`` (IntConv2d 9C multiply-adds, BinConv2d
    9 ceil(C/B) xor-popcounts, BinDense ceil(K/B), Step B compares, MaxPool 4, Flatten B bit
    moves per output), the rate the vectorised CPU implementation reached on this machine's 2
    cores (docs/gpu.md: about 5e9 word operations per second)."""

    def __init__(self, word_bits: int = 32, cpu_ops_per_s: float = 5e9, cpu_overhead_s: float = 1e-5):
        self.word_bits = word_bits
        self.cpu_ops_per_s, self.cpu_overhead_s = cpu_ops_per_s, cpu_overhead_s

    def constants(self) -> dict:
        from gpu_kernels import gpu_model

        return {
            **self.__dict__,
            "gpu": gpu_model.ModelledProfile.source,
            "gpu_calibration": dict(gpu_model.CALIBRATION),
            "gpu_calibration_other": gpu_model.CALIBRATION_OTHER,
        }

    def _ops_per_output(self, op) -> int:
        from models import ir
        from models.numerics.bnn import words_for

        layer, b = op.layer, self.word_bits
        if isinstance(layer, ir.IntConv2d):
            return 9 * op.fin.channels
        if isinstance(layer, ir.BinConv2d):
            return 9 * words_for(op.fin.channels, b)
        if isinstance(layer, ir.BinDense):
            return words_for(int(np.prod(op.fin.shape)), b)
        if isinstance(layer, ir.MaxPool2d):
            return 4
        return b if op.fin.kind == "binary" or isinstance(layer, ir.Step) else 1

    def _cpu_s(self, op, n: int) -> float:
        if op.kernel is None:
            return 0.0
        w = op.work(n)
        return self.cpu_overhead_s + w.n * w.p * w.f * self._ops_per_output(op) / self.cpu_ops_per_s

    def profile(self, net, batch_sizes):
        from gpu_kernels import gpu_model
        from gpu_kernels.configs import CONFIGS, CPU, IMPLS
        from gpu_kernels.layer_ops import prepare
        from gpu_kernels.profiling import Profile

        ops = prepare(net, self.word_bits)
        gpu = gpu_model.ModelledProfile(self.word_bits).profile(net, batch_sizes, ops)
        layer_s, host_s = {}, {}
        for b in batch_sizes:
            layer_s[b] = [
                [self._cpu_s(op, b) if m == CPU else row[CONFIGS.index(m)] for m in IMPLS]
                for op, row in zip(ops, gpu.layer_s[b], strict=True)
            ]
            host_s[b] = [
                [None if m == CPU else row[CONFIGS.index(m)] for m in IMPLS] for row in gpu.host_s[b]
            ]
        return Profile(
            net.name,
            gpu.layers,
            list(batch_sizes),
            layer_s,
            gpu.h2d_s,
            gpu.d2h_s,
            list(IMPLS),
            "modelled (workbench.cards.ModelledGpuProfile)",
            {"word_bits": self.word_bits, "model": self.constants()},
            host_s,
        )


def gpu_mapping(net) -> dict:
    """The mapper's two choices for the BNN over the modelled profile (10,000 images)."""
    from gpu_kernels.mapper import map_network

    source = ModelledGpuProfile()
    mapping = map_network(net, list(GPU_BATCHES), source, n_images=GPU_IMAGES)

    def choice(ch):
        return {
            "batch": ch.batch,
            "impls": list(ch.impls),
            "predicted_ms_for_10000_images": round(1e3 * ch.total_s, 3),
        }

    return {
        "profile": "modelled, not measured (workbench.cards.ModelledGpuProfile: "
        "gpu_kernels.gpu_model's calibrated H200 model, the CPU from operation "
        "counts; docs/models.md)",
        "model": source.constants(),
        "batch_sizes": list(GPU_BATCHES),
        "images": GPU_IMAGES,
        "algorithm1": choice(mapping.algorithm1),
        "dp": choice(mapping.dp),
        "layers": [layer.describe() for layer in net.layers],
    }


def compiled_cost(net, family: str, clock_dir=None) -> dict:
    """The card's "compiled" section."""
    cost = {"sac_array": {f"{r}x{c}": array_cost(net, r, c, m, clock_dir) for r, c, m in ARRAYS}}
    if family == "sac":
        cost["default_8x8"] = default_array_fit(net)
    if family == "bnn":
        cost["gpu_mapping"] = gpu_mapping(net)
    return cost


# ---------------------------------------------------------------------------------------------
# The card
# ---------------------------------------------------------------------------------------------
def onnxruntime_scores(model, net, images, chunk: int = GOLDEN_CHUNK) -> np.ndarray:
    """onnxruntime's scores, `chunk` images at a time (10,000 Fashion images at once through a
    64-channel 28x28 first layer hold about 8 GB of intermediate tensors)."""
    return np.concatenate(
        [ort_run(model, net, images[i : i + chunk])[0] for i in range(0, len(images), chunk)]
    )


def _machine(settings: dict) -> str:
    """Where the training ran (its times are that machine's)."""
    text = f"{platform.machine()}, torch {torch.__version__}, {settings['threads']} thread(s)"
    if settings.get("device", "cpu") == "cuda":
        name = torch.cuda.get_device_name() if torch.cuda.is_available() else "a CUDA device"
        return f"{text}, trained on {name}"
    return f"{text}; times measured on a shared 2-core machine (pessimistic)"


def write_model_and_card(result, out: Path, command: str) -> dict:
    """Export `result.net` to `out` (.onnx), check onnxruntime == golden on the test split, and
    write the card to `out` with suffix .json. Returns the card.

    Nothing is written until both are ready and checked; then each goes to a temporary sibling
    flushed to disk and is renamed over the old one, the two renames back to back with signals
    held: a failure (a full disk, an exception, Ctrl-C) leaves the previous model and card as
    they were."""
    out = Path(out)
    model = export_onnx(result.net)
    data = model.SerializeToString()
    test = load_dataset(result.settings["data"], "test")
    ref_scores = golden_scores(result.net, test.images)
    ort_scores = onnxruntime_scores(model, result.net, test.images)
    agree = bool(np.array_equal(ort_scores, ref_scores.astype(np.float32)))
    from models.numerics.bnn import argmax

    hits = argmax(ref_scores.reshape(len(test), -1)) == test.labels
    acc = result.accuracy
    card = {
        "name": result.net.name,
        "family": result.family,
        "file": out.name,
        "sha256": hashlib.sha256(data).hexdigest(),
        "dataset": {
            "spec": result.settings["data"],
            "test_images": len(test),
            "input": f"uint8 pixels {list(result.net.input_shape)} (NCHW)",
        },
        "architecture": {"summary": result.net.summary().splitlines(), "config": result.config},
        "accuracy_percent": {
            "quantized_test": _pct(acc["quantized_test"]),
            "float_twin_test": _pct(acc["float_test"]),
            "gap_points": round(_pct(acc["float_test"]) - _pct(acc["quantized_test"]), 2),
            "quantized_val": _pct(acc["quantized_val"]),
            "float_twin_val": _pct(acc["float_val"]),
            "golden_test": _pct(acc["golden_test"]),
        },
        "test_subset": {
            "images": f"the first {min(SUBSET, len(test))} test images",
            "golden_correct": int(hits[:SUBSET].sum()),
        },  # as subset_hits
        "exactness": {
            "onnxruntime_equals_golden_on_test_scores": agree,
            "scores": "pre-softmax integers: the last layer's int32 outputs",
        },
        "training": {
            "command": command,
            "seed": result.settings["seed"],
            "seconds": round(result.seconds, 1),
            "settings": result.settings,
            "machine": _machine(result.settings),
        },
        "onnx": {
            "opset": model.opset_import[0].version,
            "ir_version": model.ir_version,
            "nodes": len(model.graph.node),
            "bytes": len(data),
        },
    }
    if result.family == "sac":
        card["column_combining"] = result.extra.get("column_combining")
        card["qat_stages"] = result.extra.get("stages")
        card["activation_scales"] = result.extra.get("activation_scales")
    card["compiled"] = compiled_cost(result.net, result.family)
    if not agree:
        raise RuntimeError(f"{out}: onnxruntime scores differ from the golden executor")
    onnx.checker.check_model(model)
    # both on disk first; then the two renames together, no signal between them
    with signals_deferred(), atomic_path(out) as model_tmp, atomic_path(out.with_suffix(".json")) as card_tmp:
        _write_synced(model_tmp, data)
        _write_synced(card_tmp, (json.dumps(card, indent=2) + "\n").encode())
    return card


def _write_synced(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:  # scratch: an atomic_path temporary file
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def card_of(onnx_path) -> dict | None:
    """The card next to a model this workbench wrote (`NAME.json`, naming `NAME.onnx` and its
    digest), or None when there is no such card."""
    onnx_path = Path(onnx_path)
    try:
        card = json.loads(onnx_path.with_suffix(".json").read_text())
    except (OSError, ValueError):
        return None
    if not (
        isinstance(card, dict)
        and card.get("file") == onnx_path.name
        and isinstance(card.get("sha256"), str)
        and "family" in card
    ):
        return None
    return card


def subset_hits(net, spec: str) -> dict:
    """The card's "test_subset": golden hits on the first SUBSET test images."""
    from models.datasets import load_for_network
    from models.numerics.bnn import argmax

    x, labels = load_for_network(spec, net, "test")
    scores = golden_scores(net, x[:SUBSET])
    hits = argmax(scores.reshape(len(scores), -1)) == labels[:SUBSET]
    return {"images": f"the first {len(scores)} test images", "golden_correct": int(hits.sum())}


def refresh_card(onnx_path) -> dict:
    """Recompute a card's derived sections (test_subset, compiled) from its ONNX file, without
    retraining: for cards written before a section existed, or after the compiler or cycle model
    changed. Accuracy and training fields stay as trained. Refuses a card of another file."""
    from models.onnx.importer import import_onnx

    onnx_path = Path(onnx_path)
    card_path = onnx_path.with_suffix(".json")
    card = json.loads(card_path.read_text())
    digest = hashlib.sha256(onnx_path.read_bytes()).hexdigest()
    if card.get("sha256") != digest:
        raise ValueError(
            f"{card_path}: its sha256 {card.get('sha256')} is not that of "
            f"{onnx_path} ({digest}); retrain instead"
        )
    net = import_onnx(onnx_path)
    card["test_subset"] = subset_hits(net, card["dataset"]["spec"])
    card.pop("compile", None)  # the section "compiled" replaced it
    card["compiled"] = compiled_cost(net, card["family"])
    write_json_atomic(card_path, card)
    return card


def main(argv=None) -> int:
    """python -m workbench.cards MODEL.onnx ...: refresh the cards of trained models."""
    import argparse
    import sys

    ap = argparse.ArgumentParser(
        prog="python -m workbench.cards", description=refresh_card.__doc__.split("\n")[0]
    )
    ap.add_argument("models", nargs="+", type=Path, help="ONNX files with a card next to them")
    args = ap.parse_args(argv)
    for path in args.models:
        try:
            card = refresh_card(path)
        except (OSError, ValueError, KeyError) as exc:
            print(f"error: {path}: {exc}", file=sys.stderr)
            return 2
        cycles = {k: v.get("cycles_per_image") for k, v in card["compiled"]["sac_array"].items()}
        print(f"{path.with_suffix('.json')}: cycles per image {cycles}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
