"""fpga/energy.py, the FPGA path's energy per image: the operation counts of docs/energy.md's
table (per LOAD_WEIGHTS: rows x cols weight bytes and rows bias words; per MATMUL: pixels x tile
columns x G data-buffer bytes read, pixels x tile rows bytes written in modes 0/1, partial-sum
words read with acc_in, written per pixel in raw mode and once per row in pixel-sum mode) and
their energies (Horowitz, ISSCC 2014: 0.1 pJ per accumulation, 1.25 pJ per data or weight byte,
5 pJ per 32-bit partial sum or bias). Programs are hand-made instruction lists (the counts read
nothing else of a program), with every count distinct so that a swapped term shows."""

from types import SimpleNamespace

import numpy as np
import pytest

from fpga import energy
from fpga.arch import ArrayConfig
from fpga.compiler import compile_network
from fpga.energy import EnergyCounts, energy_uj_per_image, program_counts
from fpga.isa import Halt, LoadWeights, Matmul
from models.numerics.sac import OutputMode
from models.random_networks import random_sac_network


def program(*instructions):
    return SimpleNamespace(instructions=list(instructions))


def mm(mode, height=2, width=5, group=3, acc_in=False):
    return Matmul(height=height, width=width, in_addr=0, out_addr=0, mode=mode, group=group, acc_in=acc_in)


def test_energies_per_operation_are_the_documented_horowitz_figures():
    assert energy.PJ_ADD32 == 0.1
    assert energy.PJ_SRAM_BYTE == 1.25
    assert energy.PJ_SRAM_WORD32 == 5.0


def test_picojoules_price_each_count_with_its_own_energy():
    c = EnergyCounts(
        active_pairs=3, data_reads=5, data_writes=7, psum_accesses=11, weight_bytes=13, bias_words=17
    )
    parts = c.picojoules()
    assert list(parts) == ["accumulate", "data_buffer", "partial_sums", "weights", "total"]
    assert parts["accumulate"] == pytest.approx(3 * 0.1)
    assert parts["data_buffer"] == pytest.approx((5 + 7) * 1.25)
    assert parts["partial_sums"] == pytest.approx(11 * 5.0)
    assert parts["weights"] == pytest.approx(13 * 1.25 + 17 * 5.0)
    assert parts["total"] == pytest.approx(0.3 + 15 + 55 + 16.25 + 85)


def test_no_operations_cost_nothing():
    assert EnergyCounts().picojoules() == {
        "accumulate": 0,
        "data_buffer": 0,
        "partial_sums": 0,
        "weights": 0,
        "total": 0,
    }


def test_counts_as_dict_names_every_count():
    c = EnergyCounts(
        active_pairs=2.5, data_reads=1, data_writes=2, psum_accesses=3, weight_bytes=4, bias_words=5
    )
    assert c.as_dict() == {
        "active_pairs": 2.5,
        "data_reads": 1,
        "data_writes": 2,
        "psum_accesses": 3,
        "weight_bytes": 4,
        "bias_words": 5,
    }


def test_load_weights_counts_rows_times_cols_bytes_and_rows_biases():
    c = program_counts(program(LoadWeights(rows=3, cols=2), LoadWeights(rows=4, cols=7), Halt()), 0)
    assert (c.weight_bytes, c.bias_words) == (3 * 2 + 4 * 7, 3 + 4)
    assert (c.data_reads, c.data_writes, c.psum_accesses) == (0, 0, 0)


def test_activity_is_the_accumulation_count():
    c = program_counts(program(Halt()), 12.5)
    assert c.active_pairs == 12.5
    assert c.as_dict() == {**EnergyCounts().as_dict(), "active_pairs": 12.5}


@pytest.mark.parametrize("mode", [OutputMode.RELU_QUANT, OutputMode.BINARY])
def test_quantised_matmul_reads_pixels_cols_group_and_writes_pixels_rows_bytes(mode):
    c = program_counts(program(LoadWeights(rows=3, cols=2), mm(mode, height=2, width=5, group=3)), 0)
    assert c.data_reads == 10 * 2 * 3
    assert c.data_writes == 10 * 3
    assert c.psum_accesses == 0


def test_raw_matmul_writes_one_partial_sum_per_pixel_and_row():
    c = program_counts(
        program(LoadWeights(rows=3, cols=2), mm(OutputMode.RAW, height=2, width=5, group=3)), 0
    )
    assert (c.data_reads, c.data_writes, c.psum_accesses) == (10 * 2 * 3, 0, 10 * 3)


def test_pixel_sum_matmul_writes_one_partial_sum_per_row():
    c = program_counts(
        program(LoadWeights(rows=3, cols=2), mm(OutputMode.PIXEL_SUM, height=2, width=5, group=3)), 0
    )
    assert (c.data_reads, c.data_writes, c.psum_accesses) == (10 * 2 * 3, 0, 3)


@pytest.mark.parametrize(
    ("mode", "writes", "psums"),
    [
        (OutputMode.RELU_QUANT, 10 * 3, 10 * 3),
        (OutputMode.BINARY, 10 * 3, 10 * 3),
        (OutputMode.RAW, 0, 10 * 3 + 10 * 3),
        (OutputMode.PIXEL_SUM, 0, 10 * 3 + 3),
    ],
)
def test_acc_in_reads_one_partial_sum_per_pixel_and_row(mode, writes, psums):
    c = program_counts(program(LoadWeights(rows=3, cols=2), mm(mode, acc_in=True)), 0)
    assert (c.data_reads, c.data_writes, c.psum_accesses) == (10 * 2 * 3, writes, psums)


def test_k_tiles_accumulate_partial_sums_over_the_program():
    # a layer in three K-tiles: raw, raw with acc_in, then the last one with acc_in and relu
    c = program_counts(
        program(
            LoadWeights(rows=3, cols=2),
            mm(OutputMode.RAW),
            LoadWeights(rows=3, cols=2),
            mm(OutputMode.RAW, acc_in=True),
            LoadWeights(rows=3, cols=2),
            mm(OutputMode.RELU_QUANT, acc_in=True),
        ),
        0,
    )
    assert c.psum_accesses == 30 + (30 + 30) + 30
    assert (c.data_reads, c.data_writes) == (3 * 60, 30)


def test_matmul_counts_follow_the_last_loaded_tile():
    c = program_counts(
        program(
            LoadWeights(rows=3, cols=2),
            mm(OutputMode.RELU_QUANT, height=1, width=1, group=1),
            LoadWeights(rows=5, cols=4),
            mm(OutputMode.RELU_QUANT, height=1, width=1, group=1),
            Halt(),
        ),
        0,
    )
    assert (c.data_reads, c.data_writes) == (2 + 4, 3 + 5)
    assert (c.weight_bytes, c.bias_words) == (6 + 20, 8)


def test_matmul_without_a_loaded_tile_moves_no_data():
    # no LOAD_WEIGHTS yet: the tile has no rows and no columns (a checked program never does
    # this, error NOWEIGHTS; the count follows the tile all the same)
    c = program_counts(program(mm(OutputMode.RAW, acc_in=True), mm(OutputMode.RELU_QUANT)), 0)
    assert c.as_dict() == EnergyCounts().as_dict()


def test_energy_per_image_is_the_total_in_microjoules_at_the_mean_activity():
    prog = program(LoadWeights(rows=3, cols=2), mm(OutputMode.RELU_QUANT, acc_in=True), Halt())
    uj, breakdown = energy_uj_per_image(prog, [10, 30])
    counts = program_counts(prog, 20.0)
    assert breakdown == {"picojoules": counts.picojoules(), "counts": counts.as_dict()}
    assert breakdown["counts"]["active_pairs"] == 20.0
    assert uj == pytest.approx(counts.picojoules()["total"] / 1e6)
    assert uj == pytest.approx((20 * 0.1 + (60 + 30) * 1.25 + 30 * 5 + 6 * 1.25 + 3 * 5) * 1e-6)


def test_energy_of_a_compiled_network_counts_its_instructions():
    rng = np.random.default_rng(7)
    net = random_sac_network(rng, in_shape=(6, 4, 4), widths=(5,), groups=(2,), final="pixel_sum", classes=3)
    prog = compile_network(net, ArrayConfig(rows=4, cols=3, cmax=32, ddepth=256, pdepth=64))
    loads = [i for i in prog.instructions if isinstance(i, LoadWeights)]
    c = program_counts(prog, 0)
    assert c.weight_bytes == sum(i.rows * i.cols for i in loads) > 0
    assert c.bias_words == sum(i.rows for i in loads)
    uj, _ = energy_uj_per_image(prog, np.array([0.0]))
    assert uj == pytest.approx(c.picojoules()["total"] * 1e-6) and uj > 0
