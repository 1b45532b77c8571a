"""Fold the register after an ECP5 block RAM's read port into the block RAM's own output register.

A DP16KD read without its output register (REGMODE NOREG, all yosys' `synth_ecp5` ever maps)
has 5.83 ns from clock to data in nextpnr's model: a lone read into a register next to it routes
at 145 MHz (`benchmarks/ecp5_bram_clock.py`). With REGMODE OUTREG the data leaves a register
inside the block RAM a cycle later, which is what a plain register after the read does anyway;
yosys' memory library has no such option, so this pass does what a vendor tool's register
packing does, on the netlist between yosys and nextpnr.

A read port is folded only when the result is the same circuit: every data output it uses drives
exactly one flip-flop's D input and nothing else (no other cell, no top-level port), those
flip-flops are clocked by the port's clock with no inversion, have no reset in use (LSR tied to
0), share one clock enable (which becomes the port's output clock enable, OCE) and the port
itself reads every cycle (CE tied to 1) and is never reset (RST tied to 0). Anything else is left
as yosys wrote it.
"""

from __future__ import annotations

from collections import defaultdict

# the read-port pins of a DP16KD, per port: data outputs, clock, clock enable, output clock
# enable, reset, and the port's two parameters
DP16KD_PORTS = {
    p: {
        "data": [f"DO{p}{i}" for i in range(18)],
        "clk": f"CLK{p}",
        "ce": f"CE{p}",
        "oce": f"OCE{p}",
        "rst": f"RST{p}",
        "regmode": f"REGMODE_{p}",
        "clkmux": f"CLK{p}MUX",
    }
    for p in ("A", "B")
}


def _param(cell: dict, name: str, default: str = "") -> str:
    # yosys writes some string parameters padded with a space ("1 ")
    return str(cell["parameters"].get(name, default)).strip()


def _sinks(module: dict) -> dict:
    """net bit -> [(cell name, input port)] over every cell of the module."""
    sinks = defaultdict(list)
    for name, cell in module["cells"].items():
        for port, bits in cell["connections"].items():
            if cell["port_directions"].get(port) == "input":
                for bit in bits:
                    if isinstance(bit, int):
                        sinks[bit].append((name, port))
    return sinks


def _port_bits(module: dict) -> set:
    return {b for port in module["ports"].values() for b in port["bits"] if isinstance(b, int)}


def _foldable(module: dict, ram: dict, pins: dict, sinks: dict, top_bits: set) -> tuple | None:
    """(the read port's (data pin, flip-flop name) pairs, their shared clock enable as a
    connection) when the port can be folded, else None."""
    conn = ram["connections"]
    if _param(ram, pins["regmode"], "NOREG") != "NOREG":
        return None
    if _param(ram, pins["clkmux"], pins["clk"]) != pins["clk"]:  # an inverted clock
        return None
    if conn.get(pins["ce"]) != ["1"] or conn.get(pins["rst"]) != ["0"]:
        return None
    clk = conn.get(pins["clk"])
    pairs, enables = [], set()
    for pin in pins["data"]:
        bits = conn.get(pin)
        if not bits or not isinstance(bits[0], int):
            continue  # an unused output
        bit = bits[0]
        users = sinks.get(bit, [])
        if not users and bit not in top_bits:
            continue  # a net nothing reads (the width's spare bits)
        if bit in top_bits or len(users) != 1 or users[0][1] != "DI":
            return None
        ff_name = users[0][0]
        ff = module["cells"][ff_name]
        if ff["type"] != "TRELLIS_FF" or ff["connections"].get("CLK") != clk:
            return None
        if _param(ff, "CLKMUX") != "CLK" or _param(ff, "GSR", "DISABLED") != "DISABLED":
            return None
        if _param(ff, "LSRMUX") != "LSR" or ff["connections"].get("LSR") != ["0"]:  # a reset in use
            return None
        cemux = _param(ff, "CEMUX")
        if cemux == "1":
            enables.add("1")
        elif cemux == "CE":
            enables.add(tuple(ff["connections"]["CE"]))
        else:  # an inverted or constant-0 enable
            return None
        pairs.append((pin, ff_name))
    if not pairs or len(enables) != 1:
        return None
    enable = enables.pop()
    return pairs, ["1"] if enable == "1" else list(enable)


def fold_output_registers(netlist: dict) -> int:
    """Fold, in place, every DP16KD read port of the netlist's modules that qualifies (see the
    module's docstring); returns how many ports were folded."""
    folded = 0
    for module in netlist["modules"].values():
        cells = module.get("cells", {})
        rams = [c for c in cells.values() if c["type"] == "DP16KD"]
        if not rams:
            continue
        sinks, top_bits = _sinks(module), _port_bits(module)
        for ram in rams:
            for pins in DP16KD_PORTS.values():
                found = _foldable(module, ram, pins, sinks, top_bits)
                if found is None:
                    continue
                pairs, enable = found
                ram["parameters"][pins["regmode"]] = "OUTREG"
                ram["connections"][pins["oce"]] = enable
                for pin, ff_name in pairs:
                    # the block RAM now drives what the flip-flop drove; the net between them
                    # is left without driver or load
                    ram["connections"][pin] = list(cells[ff_name]["connections"]["Q"])
                    del cells[ff_name]
                folded += 1
    return folded
