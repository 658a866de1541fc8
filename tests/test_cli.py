"""The entry point: every subcommand loads, and a subcommand that cannot be imported is a
bug reported as one (exit 1, the exception named) — never an absent feature that a test
could skip on."""

from __future__ import annotations

import pytest

from hplsim.cli import SUBCOMMANDS
from helpers import assert_one_line_error, run_cli


@pytest.mark.parametrize("name", list(SUBCOMMANDS))
def test_every_subcommand_imports_and_shows_its_help(name, tmp_path):
    r = run_cli(name, "--help", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"Usage: hplsim {name}"), r.stdout[:200]
    assert r.stderr == ""


def test_a_broken_import_fails_loudly(monkeypatch, tmp_path):
    monkeypatch.setitem(SUBCOMMANDS, "ghost", ("hplsim.no_such_stage", "ghost", "A stage whose import fails."))
    r = run_cli("ghost", cwd=tmp_path)
    message = assert_one_line_error(r, r"internal error \(ModuleNotFoundError: No module named 'hplsim\.no_such_stage'",
                                    code=1)
    assert "not available" not in message


def test_a_missing_attribute_fails_loudly(monkeypatch, tmp_path):
    monkeypatch.setitem(SUBCOMMANDS, "ghost", ("hplsim.cli", "no_such_command", "A name the table gets wrong."))
    r = run_cli("ghost", "--help", cwd=tmp_path)
    assert_one_line_error(r, r"internal error \(AttributeError: .*no_such_command", code=1)


def test_the_help_lists_the_pipeline_in_order(tmp_path):
    r = run_cli("--help", cwd=tmp_path)
    assert r.returncode == 0
    positions = [r.stdout.index(f"  {name} ") for name in SUBCOMMANDS]
    assert positions == sorted(positions)
