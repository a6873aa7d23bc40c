"""Issue 16, "the first hour": the CLI as a new user meets it, on a real local cluster (master + one 1-slot agent)."""

from __future__ import annotations

import pathlib

import pytest

from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

REPO = pathlib.Path(__file__).resolve().parents[2]
DIGITS = REPO / "examples" / "digits"


@pytest.fixture(scope="module")
def one_slot(tmp_path_factory):
    """A master and one agent with 1 slot, shared by this module's tests."""
    with LocalTestCluster(tmp_path_factory.mktemp("first-hour") / "home", slots=1) as c:
        yield c


def test_cmd_run_exits_with_the_commands_code_and_finished_commands_stay_listed(one_slot):
    c = one_slot
    res = c.cli("cmd", "run", "sh", "-c", "echo about to fail; exit 3")
    assert res.returncode == 3, res.stdout + res.stderr
    assert "about to fail" in res.stdout and "ERROR (exit code 3)" in res.stdout
    failed = res.stdout.split("Launched command ")[1].split()[0]
    res = c.cli("cmd", "run", "sh", "-c", "no-such-program-here")
    assert res.returncode == 127, res.stdout + res.stderr
    missing = res.stdout.split("Launched command ")[1].split()[0]
    res = c.cli("cmd", "run", "true")
    assert res.returncode == 0, res.stdout + res.stderr

    listing = c.cli("cmd", "list", check=True).stdout
    rows = {line.split("│")[1].strip(): line for line in listing.splitlines() if line.count("│") > 5}
    assert "ERROR" in rows[failed] and "│ 3 " in rows[failed], listing
    assert "ERROR" in rows[missing] and "│ 127 " in rows[missing], listing
    assert "Exit code" in listing
    assert c.cli("cmd", "list", "--active", check=True).stdout.count("ERROR") == 0
