"""Bit-exactness check of every kernel without pytest (for a GPU machine whose Python lacks
it): the matrix of tests/test_gpu_kernels.py plus whole networks, on a chosen backend,
against the golden executor.

    python -m gpu_kernels.selfcheck --backend cupy [--json results.json]
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from gpu_kernels.configs import CONFIGS
from gpu_kernels.errors import BuildError
from gpu_kernels.layer_cases import all_cases, case_seed, make_case
from gpu_kernels.progress import progress
from gpu_kernels.runner import run_network
from models import golden
from models.random_networks import cifar10_bnn, fashion_bnn, random_images

MIXED = ["cpu", "XYZ", "Y", "Z", "XY", "XZ", "YZ", "cpu", "X", "XYZ"]


def _equal(res, ref) -> bool:
    return all(a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(res.outputs, ref.outputs))


def run(backend: str) -> dict:
    failures, skipped, n = [], [], 0
    for case in progress(all_cases(CONFIGS), f"kernels on {backend}", "case"):
        kind, config, bits, variant, pad, batch = case
        net, x = make_case(kind, bits, variant, pad, batch, case_seed(kind, bits, variant, pad, batch))
        res = run_network(net, x, [config], backend=backend, word_bits=bits)
        n += 1
        if not _equal(res, golden.run(net, x)):
            failures.append("-".join(map(str, case)))
    for name, build, shape_seed, mapping in (("fashion", fashion_bnn, 31, MIXED),
                                             ("fashion", fashion_bnn, 31, "XYZ"),
                                             ("cifar10", cifar10_bnn, 33, "X")):
        net = build(shape_seed)
        x = random_images(shape_seed + 1, 3, net.input_shape)
        ref = golden.run(net, x)
        for bits in (32, 64):
            try:
                res = run_network(net, x, mapping, backend=backend, word_bits=bits, batch=2)
            except BuildError as exc:          # a mapping with CPU layers needs g++
                skipped.append(f"{name}-mixed-w{bits}: {exc}")
                continue
            n += 1
            if not (_equal(res, ref) and np.array_equal(res.predictions, ref.predictions)):
                failures.append(f"{name}-{mapping if isinstance(mapping, str) else 'mixed'}-w{bits}")
    return {"backend": backend, "checks": n, "failures": failures, "skipped": skipped}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", default="auto", choices=("auto", "cupy", "emulation"))
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    out = run(args.backend)
    out["seconds"] = time.perf_counter() - t0
    print(f"{out['checks']} checks on {out['backend']}, {len(out['failures'])} failures "
          f"({out['seconds']:.1f} s)" + "".join(f"\n  FAIL {f}" for f in out["failures"]))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
    return 1 if out["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
