"""Seeds of the randomized benches: one per simulation, printed, and the printed value is the one
that replays it.

cocotb's convention: the seed of a simulation is `COCOTB_RANDOM_SEED`; cocotb seeds Python's
`random` from it, prints "Seeding Python random module with N" and, when a test fails, says
"Test failed with COCOTB_RANDOM_SEED=N". The benches follow it:

* On the pytest side, each bench function asks :func:`bench_seed` for its seed, naming its
  bench (the file's name without `test_`) and, where configurations should get different
  stimulus, its parameter set. The seed is the value of `TB_SEED` or `COCOTB_RANDOM_SEED` from
  the environment when one is set (the two name the same seed; set either), else the default
  :func:`default_seed` derives from BASE_SEED, the bench's name and the parameters: the one
  place bench seeds come from. `bench_seed` prints it and the bench passes it to the cocotb
  runner (`tb.sim.run(..., seed=...)`), which hands it to the simulation as
  `COCOTB_RANDOM_SEED`.
* Inside the simulation, :func:`seeded_rng` reads that seed back, logs
  `seed N (TB_SEED=N replays this run)` and returns numpy's generator for it.

So every number a bench prints as its seed (ours or cocotb's regression seed) is the seed that
was used, and `TB_SEED=N pytest tb/test_<module>.py -k <id>` runs exactly that stimulus again.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np

SEED_VARIABLES = ("TB_SEED", "COCOTB_RANDOM_SEED")
# Every bench's default seed derives from this one (default_seed); a new value gives every
# bench new stimulus, a set TB_SEED gives every bench that seed
BASE_SEED = 1618


class SeedError(ValueError):
    """A seed variable that is not a non-negative integer, or two that disagree."""


def _parse(name: str, text: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise SeedError(f"{name}={text!r} is not an integer seed") from None
    if not 0 <= value < 2**63:
        raise SeedError(f"{name}={text!r}: a seed must be in 0 .. 2^63-1")
    return value


def seed_from_environment(env=None) -> int | None:
    """The seed the user set (TB_SEED or COCOTB_RANDOM_SEED), or None; SeedError when a value
    is not an integer or the two are set to different values."""
    env = os.environ if env is None else env
    found = {name: _parse(name, env[name]) for name in SEED_VARIABLES if env.get(name, "").strip()}
    if len(set(found.values())) > 1:
        raise SeedError(
            "TB_SEED and COCOTB_RANDOM_SEED are set to different seeds "
            f"({found['TB_SEED']} and {found['COCOTB_RANDOM_SEED']}): set one"
        )
    return next(iter(found.values()), None)


def default_seed(bench: str, *params: int | str) -> int:
    """The default seed of one bench run: derived from BASE_SEED, the bench's name and the
    parameter set (ints or strings), the same on every run, machine and Python (a SHA-256 of
    their text, not Python's salted hash), below 2^31."""
    if not bench or not all(isinstance(p, int | str) for p in params):
        raise SeedError(f"a bench seed needs a bench name and int or str parameters: {bench!r}, {params!r}")
    text = repr((BASE_SEED, bench, *params))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big") >> 1


def bench_seed(bench: str, *params: int | str) -> int:
    """The seed of one bench run (pytest side), printed: the one set in the environment (TB_SEED
    or COCOTB_RANDOM_SEED), else :func:`default_seed` of the bench and its parameter set."""
    chosen = seed_from_environment()
    label = bench + "".join(f"-{p}" for p in params)
    if chosen is None:
        seed, origin = default_seed(bench, *params), f"derived from base seed {BASE_SEED}"
    else:
        seed, origin = chosen, "set in the environment"
    print(f"bench {label}: seed {seed}, {origin}; TB_SEED={seed} replays it")
    return seed


def simulation_seed() -> int:
    """The seed of the running simulation (cocotb side), as the runner passed it."""
    text = os.environ.get("COCOTB_RANDOM_SEED", "").strip()
    if not text:
        raise SeedError(
            "COCOTB_RANDOM_SEED is not set: run the bench through pytest "
            "(pytest tb/test_<module>.py), which passes its seed to the simulation"
        )
    return _parse("COCOTB_RANDOM_SEED", text)


def seeded_rng(log, stream: int = 0) -> np.random.Generator:
    """numpy's generator for this simulation's seed, logged. A module with several cocotb tests
    gives each its own `stream` (0, 1, ...): independent stimulus, all replayed by one seed."""
    seed = simulation_seed()
    log.info(f"seed {seed} (TB_SEED={seed} replays this run)")
    return np.random.default_rng(seed if stream == 0 else [seed, stream])


def stimulus_digest(*arrays) -> str:
    """A short fingerprint of stimulus values, which benches log so that two runs can be
    compared (tests/test_seeds.py)."""
    h = hashlib.sha1()
    for a in arrays:
        h.update(np.ascontiguousarray(np.asarray(a, dtype=np.int64)).tobytes())
    return h.hexdigest()[:12]
