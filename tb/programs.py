"""The random programs the whole-top benches run (tb/test_accelerator.py on the simple host port,
tb/test_accelerator_axi.py through the buses): one definition, so one seed gives both benches
the same networks and images."""

from __future__ import annotations

from fpga.arch import ArrayConfig
from models.random_networks import random_bnn_network, random_images, random_sac_network

BNN_CASE = "random BNN"


def compiled_network_cases(rng, cfg: ArrayConfig):
    """(label, network, image): SAC networks larger than the array (several filter and channel
    tiles) in every final mode with the channel shift on and off, a chain of layers on 1x1
    frames, then a BNN lowered onto the array (segments with max pooling and flatten on the
    host)."""
    for final in ("pixel_sum", "raw", "binary", "relu_quant"):
        for shift in (True, False):
            net = random_sac_network(
                rng,
                in_shape=(3 * cfg.cols + 1, 4, 4),
                widths=(cfg.rows + 3,),
                groups=(3, 2),
                shift=shift,
                final=final,
                classes=cfg.rows + 2,
                s2d=1,
            )
            image = random_images(rng, 1, net.input_shape, zero_fraction=0.5)[0]
            yield f"{final}, shift={shift}", net, image
    # 1x1 frames: each MATMUL's only pixel is read in its DECODE, in the cycle in which the
    # MATMUL before (the layer before) writes its last byte to the same entry of its last bank
    net = random_sac_network(
        rng,
        in_shape=(2 * cfg.cols + 1, 1, 1),
        widths=(cfg.rows, cfg.rows + 1),
        groups=(1,),
        shift=False,
        final="relu_quant",
        classes=cfg.rows + 2,
        s2d=1,
    )
    yield "1x1 frames", net, random_images(rng, 1, net.input_shape, zero_fraction=0.2)[0]
    net = random_bnn_network(rng)
    yield BNN_CASE, net, random_images(rng, 1, net.input_shape, zero_fraction=0.2)[0]
