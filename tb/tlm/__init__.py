"""Transaction-level bench components, in the shape of cocotb's `matrix_multiplier` example:
per interface a driver (turns transactions into pin activity), a monitor (turns pin activity
back into transactions, with the cycle each was seen) and a scoreboard (asks the golden models
what each input transaction must produce and compares the monitor's transactions with it).
Tests describe transactions; the cycle-exactness checks stay (the scoreboards compare the cycle
each result appears with the documented latency or fpga.cycle_model).

* tb.tlm.scoreboard: the generic in-order scoreboard.
* tb.tlm.relu_quant: the ReLU & quantization output of an array row (rtl/relu_quant.v).
* tb.tlm.axi: the AXI top (rtl/accelerator_axi.v): bus transactions (stream writes and reads),
  whole images through a compiled program.
"""
