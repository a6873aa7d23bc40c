"""Access control is not switched off by a restart (issue 25, hole 8), with `stalwart up` and `down` as a user runs
them, in a fresh $STALWART_HOME.

`stalwart up --config rbac.yaml`, then `down`, then `up` used to bring the master back in basic mode without a
word, the role assignments still in its database, so a Viewer could create things. Now the home keeps the config
it was given; a master whose config does not say `security.authz.type` refuses to start while role assignments
exist (an explicit `basic` starts); `rbac assign-role` in basic mode is refused, saying how to turn RBAC on; and
`up --config F` on a running cluster is refused unless F is the config it runs with.
"""

from __future__ import annotations

import json
import os
import pathlib

import pytest

from cli_runs import fails, ok
from stalwart.testing import free_port

pytestmark = pytest.mark.integration

RBAC = "security:\n  authz:\n    type: rbac\n"
DEFAULT_BASIC = "resource_pools:\n  - pool_name: default\n"  # says nothing of security.authz.type
EXPLICIT_BASIC = "security:\n  authz:\n    type: basic\n"


@pytest.fixture
def home(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("STALWART_MASTER", "DET_MASTER", "DET_USER", "DET_PASS")}
    env["STALWART_HOME"] = str(tmp_path / "home")
    yield env
    ok(env, "down")


def _file(tmp_path: pathlib.Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _viewer(env: dict[str, str], tmp_path: pathlib.Path, url: str) -> dict[str, str]:
    """User vic (Viewer of Uncategorized), logged in from a home of its own."""
    ok(env, "user", "create", "vic", "--password", stdin="vic-pw\nvic-pw\n")
    ok(env, "rbac", "assign-role", "Viewer", "--username-to-assign", "vic", "--workspace-name", "Uncategorized")
    vic = {**env, "STALWART_HOME": str(tmp_path / "vic-home"), "STALWART_MASTER": url}
    ok(vic, "user", "login", "vic", stdin="vic-pw\n")
    return vic


def test_rbac_survives_down_and_up_and_basic_must_be_said(home, tmp_path) -> None:
    port = str(free_port())
    url = f"http://127.0.0.1:{port}"
    rbac = _file(tmp_path, "rbac.yaml", RBAC)
    ok(home, "up", "--config", rbac, "--port", port)
    vic = _viewer(home, tmp_path, url)
    fails(vic, 5, "project", "create", "Uncategorized", "mine")  # a Viewer creates nothing

    # a running cluster takes no other config; the same one is nothing to do
    other = _file(tmp_path, "other.yaml", EXPLICIT_BASIC)
    refused = fails(home, 4, "up", "--config", other)
    assert "already running" in refused and "was not applied" in refused and "stalwart down" in refused
    assert "nothing to do" in ok(home, "up", "--config", rbac)

    # down, then up without --config (the file is even gone): the home kept it, RBAC is still on
    ok(home, "down")
    pathlib.Path(rbac).unlink()
    ok(home, "up", "--port", port)
    fails(vic, 5, "project", "create", "Uncategorized", "mine")
    ok(home, "down")

    # a config that does not say the mode is refused while roles are assigned; an explicit basic starts
    refused = fails(home, 1, "up", "--config", _file(tmp_path, "plain.yaml", DEFAULT_BASIC), "--port", port)
    assert "refusing to start in basic mode" in refused and "security.authz.type: basic" in refused
    # a config the master refused was not kept: a command that starts the cluster by itself brings RBAC back
    assert json.loads(ok(home, "rbac", "my-permissions", "--json"))["mode"] == "rbac"
    ok(home, "down")
    ok(home, "up", "--config", _file(tmp_path, "basic.yaml", EXPLICIT_BASIC), "--port", port)
    ok(vic, "project", "create", "Uncategorized", "mine")  # basic mode: every user may, as the config says
    refused = fails(home, 4, "rbac", "assign-role", "Editor", "--username-to-assign", "vic")
    assert "not assigned" in refused and "basic mode" in refused and "type: rbac" in refused
