"""cocotb benches, one per RTL module (`test_<module>.py`), and their helpers: `sim` (build and
run a bench on Icarus or Verilator), `seeds` (the seed of each run, printed and replayable),
`bitserial` and `cell_driver` (bit-level stimulus), `host_port` (the accelerator's host port as
a models/fpga executor device), `programs` (the whole-top benches' random programs), `rtl_job`
(runs a compiled program's images for the compare job). Uses `models` and `fpga` only."""
