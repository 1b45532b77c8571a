"""Transaction-level bench of the AXI top (rtl/accelerator_axi.v, tb.tlm.axi): the test is a
list of transactions (bursts of bus writes and reads over every memory region, images through
compiled networks); the stream monitor turns the pins back into transactions, the memory
scoreboard holds every read to the last write, the image scoreboard asks the golden executor,
the cycle model and the interpreter for every layer, retire cycle and activity."""

import cocotb
import pytest

from models.random_networks import random_bnn_network, random_images, random_sac_network
from tb.host_port import R_DBUF
from tb.seeds import bench_seed, seeded_rng
from tb.sim import SIMULATORS, run
from tb.test_accelerator_axi import CONFIGS, random_writes
from tb.tlm.axi import AxiEnv, BusRead, BusWrite, ImageJob, TrackedAxiPort


@cocotb.test()
async def random_transactions(dut):
    from fpga.arch import ArrayConfig

    cfg = ArrayConfig.from_env()
    rng = seeded_rng(dut._log)
    port = await TrackedAxiPort.create(dut, cfg)
    env = AxiEnv(dut, port, cfg)
    env.start()
    nets = [
        random_sac_network(
            rng,
            in_shape=(2 * cfg.cols + 1, 3, 3),
            widths=(cfg.rows + 1,),
            groups=(2, 1),
            shift=shift,
            final=final,
            classes=cfg.rows + 1,
            s2d=1,
        )
        for shift, final in ((True, "relu_quant"), (False, "pixel_sum"))
    ]
    nets.append(random_bnn_network(rng))
    for step in range(6):
        writes = [BusWrite(a, v) for a, v, _ in random_writes(rng, cfg, int(rng.integers(1, 200)))]
        await env.write(writes)
        await env.read([BusRead(writes[i].addr) for i in rng.permutation(len(writes))[:100]])
        net = nets[step % len(nets)]
        image = random_images(rng, 1, net.input_shape, zero_fraction=0.4)[0]
        await env.image(ImageJob(net, image, f"image {step}"))
        # data-buffer words written before the run: the run may have changed them, so the
        # first read learns them and the second must agree with it
        again = [BusRead(t.addr) for t in writes if t.addr >> 28 == R_DBUF][:20]
        await env.read(again + again)
    counts = await env.check()
    assert counts["images"] == 6
    assert counts["writes seen"] == port.words_written and counts["reads seen"] == port.words_read, (
        counts,
        port.words_written,
        port.words_read,
    )
    dut._log.info(f"transactions: {counts}")


@pytest.mark.parametrize("sim", SIMULATORS)
def test_accelerator_axi_tlm(sim):
    cfg, _ = CONFIGS[sim]
    run(
        "accelerator_axi",
        "tb.tlm.test_accelerator_axi_tlm",
        sim,
        cfg.hdl_parameters(),
        seed=bench_seed("accelerator_axi_tlm"),
    )
