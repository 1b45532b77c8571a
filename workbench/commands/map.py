"""Map a BNN's layers to the CPU or a GPU configuration (HEP-BNN Algorithm 1 and the
transfer-aware DP), print the table, write mapping.json and heatmap.png.

Examples:
  # measure on this machine (CuPy if a GPU is present, else the emulation: NOT GPU timings)
  .venv/bin/python scripts/map_bnn.py --network fashion --batch-exp 6 10 --out out/map
  # the HEP-BNN ONNX model, with a saved profile (no GPU needed)
  .venv/bin/python scripts/map_bnn.py --network tests/fixtures/hepbnn_fashion.onnx \\
      --profile out/map/mapping.json --out out/map2
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gpu_kernels.errors import BackendError, BuildError, GpuKernelError
from gpu_kernels.mapper import batch_range, map_network
from gpu_kernels.profiling import JsonProfile, MeasuredProfile
from models.random_networks import SHAPES, network_from_spec


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="map_bnn", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--network", default="fashion",
                    help=f"{' or '.join(SHAPES)} (seeded random parameters) or an .onnx file")
    ap.add_argument("--seed", type=int, default=0, help="parameter seed of a named shape")
    ap.add_argument("--profile", default="measured",
                    help="'measured' or a profile/mapping JSON written earlier")
    ap.add_argument("--backend", default="auto", choices=("auto", "cupy", "emulation"),
                    help="where GPU configurations are measured")
    ap.add_argument("--batch-exp", type=int, nargs=2, default=(0, 4), metavar=("BL", "BU"),
                    help="batch sizes 2^BL .. 2^BU (HEP-BNN's bl, bu)")
    ap.add_argument("--images", type=int, default=10_000, help="data set size the costs are for")
    ap.add_argument("--word-bits", type=int, default=32, choices=(32, 64))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=None, help="threads per block (default 256)")
    ap.add_argument("--out", type=Path, default=None, help="directory for mapping.json and heatmap.png")
    args = ap.parse_args(argv)

    try:
        net = network_from_spec(args.network, args.seed)
        if args.profile == "measured":
            source = MeasuredProfile(backend=args.backend, word_bits=args.word_bits,
                                     repeats=args.repeats, warmup=args.warmup,
                                     threads=args.threads, progress=True)
        else:
            source = JsonProfile(args.profile)
        mapping = map_network(net, batch_range(*args.batch_exp), source, n_images=args.images)
    except (GpuKernelError, BackendError, BuildError, ValueError) as exc:
        print(f"map_bnn: {exc}", file=sys.stderr)
        return 2
    print(net.summary())
    print()
    print(mapping.table())
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        # which network was measured: the search's gpu cost scales this profile to others
        mapping.profile.meta.update(network_spec=args.network, network_seed=args.seed)
        path = mapping.save(args.out / "mapping.json")
        png = mapping.heatmap(args.out / "heatmap.png")
        print(f"\nwrote {path}" + (f" and {png}" if png else " (no matplotlib: no heatmap)"))
    print(json.dumps({"algorithm1": {"batch": mapping.algorithm1.batch, "impls": mapping.algorithm1.impls},
                      "dp": {"batch": mapping.dp.batch, "impls": mapping.dp.impls}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
