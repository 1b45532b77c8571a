"""The README's first screen tells a new user what the project is, the two commands and what
each costs in time, and how to run the benches as cocotb users do; the make targets it names
exist."""

import re

from tests.helpers import ROOT

README = (ROOT / "README.md").read_text()
FIRST_SCREEN = "\n".join(README.splitlines()[:70])


def test_first_screen_has_the_commands_their_times_and_the_activated_environment():
    for text in (
        "make demo",
        "make test",
        "source .venv/bin/activate",
        "pytest tb/",
        "No module named 'cocotb'",
        "TB_SEED",
        "make sim",
    ):
        assert text in FIRST_SCREEN, text
    rows = {
        m.group(1): m.group(2)
        for m in re.finditer(r"^\| `([^`]+)`[^|]*\|[^|]*\| ([^|]+) \|$", FIRST_SCREEN, re.M)
    }
    for command in ("make demo", "make test", "pytest tb/"):
        assert re.search(r"\d+ (s|min)", rows.get(command, "")), f"no time for {command}: {rows}"


def test_make_targets_named_in_the_readme_exist():
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z][a-z-]*):", makefile, re.M))
    named = set(re.findall(r"\bmake ([a-z][a-z-]*)\b", README))
    assert named and named <= targets, f"README names missing targets: {named - targets}"


def test_the_exit_status_table_is_the_contract():
    """README "Exit status" shows the one contract, workbench/commands/args.py's: the table as
    the contract writes it, and every status the constants name."""
    from workbench.commands import args

    section = README.split("## Exit status", 1)[1].split("\n## ", 1)[0]
    table = "\n".join(line for line in section.splitlines() if line.startswith("|"))
    assert table == args.exit_status_markdown()
    codes = sorted(int(c) for row in re.findall(r"^\| ([\d, ]+) \|", table, re.M) for c in row.split(","))
    contract = sorted({args.OK, args.MISMATCH, args.BAD_INPUT, args.FAILURE, *args.INTERRUPTED.values()})
    assert codes == contract, (codes, contract)
    for code in contract:
        assert str(code) in args.EXIT_STATUS, code
