"""The interpreter vectorised across images: running images in several batches, or one
at a time, gives exactly what one batch gives (every layer, every instruction's cycles and
per-image activity), for a SAC network (channel shift, pixel sums) and a BNN lowered onto the
array (host layers between segments), and equals the golden executor."""

import numpy as np
import pytest

from fpga.arch import ArrayConfig
from fpga.compiler import compile_network
from fpga.execute import interpret
from models import golden
from models.random_networks import random_bnn_network, random_images, random_sac_network

SEED = 1200


def networks():
    rng = np.random.default_rng(SEED)
    sac = random_sac_network(
        rng, in_shape=(7, 5, 4), widths=(11,), groups=(3, 2), shift=True, final="pixel_sum", classes=6, s2d=1
    )
    bnn = random_bnn_network(rng)
    return {
        "sac": (sac, ArrayConfig(rows=4, cols=3, cmax=32, ddepth=256, pdepth=64)),
        "bnn": (
            bnn,
            ArrayConfig(
                rows=4, cols=3, cmax=32, ddepth=512, pdepth=64, wdepth=2048, bdepth=512, imem_depth=2048
            ),
        ),
    }


@pytest.mark.parametrize("name", ["sac", "bnn"])
def test_batches_equal_one_batch_and_golden(name):
    net, cfg = networks()[name]
    prog = compile_network(net, cfg)
    x = random_images(np.random.default_rng(SEED + 1), 7, net.input_shape, zero_fraction=0.4)
    whole = interpret(prog, x, batch=7)
    ref = golden.run(net, x)
    for i, out in whole.outputs.items():
        assert np.array_equal(out, ref.outputs[i]), f"layer {i}"
    for batch in (1, 3):
        part = interpret(prog, x, batch=batch)
        assert part.outputs.keys() == whole.outputs.keys()
        for i in whole.outputs:
            assert np.array_equal(part.outputs[i], whole.outputs[i]), (batch, i)
        for a, b in zip(part.segments, whole.segments, strict=True):
            assert a.cycles == b.cycles
            # per instruction: an int (the same for every image) or one count per image
            assert all(
                np.array_equal(np.broadcast_to(p, (7,)), np.broadcast_to(q, (7,)))
                for p, q in zip(a.activity, b.activity, strict=True)
            ), batch
    single = interpret(prog, x[:1])
    assert all(isinstance(a, int) for st in single.segments for a in st.activity)
