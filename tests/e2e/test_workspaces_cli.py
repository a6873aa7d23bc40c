"""Workspaces, projects, roles, groups and pool bindings through the CLI and the SDK on a real master in rbac mode
(issue 20, acceptance 1, 2 and 3).

One cluster, no agent: experiments are created paused (or activated and left queued) and never run; they only need
to exist to be placed, moved, paused and killed. The master has two pools, `default` and `gpu`. Each person works
from a home of their own (their own auth file); the admin's is the cluster's.
"""

from __future__ import annotations

import json
import pathlib

import pytest

from cli_runs import fails, ok
from stalwart.api.errors import ForbiddenError, InvalidRequest
from stalwart.experimental._stalwart import Stalwart
from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

MASTER_CONFIG = """security:
  authz:
    type: rbac
resource_pools:
  - pool_name: default
  - pool_name: gpu
"""
CONFIG = """name: {name}
entrypoint: python3 main.py
searcher: {{name: single, metric: loss, max_length: 1}}
max_restarts: 0
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    with LocalTestCluster(tmp_path_factory.mktemp("workspaces") / "home", agents=0,
                          master_config=MASTER_CONFIG) as c:
        yield c


@pytest.fixture(scope="module")
def context(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    path = tmp_path_factory.mktemp("context")
    (path / "main.py").write_text("print('never runs here')\n")
    return path


def person(c: LocalTestCluster, name: str) -> dict[str, str]:
    """The admin creates `name` (password `NAME-pw`); the environment of that person, logged in, in a home of
    their own."""
    ok(c.env, "user", "create", name, "--password", stdin=f"{name}-pw\n{name}-pw\n")
    home = c.home.parent / f"home-of-{name}"
    home.mkdir(exist_ok=True)
    env = {**c.env, "STALWART_HOME": str(home)}
    ok(env, "user", "login", name, stdin=f"{name}-pw\n")
    return env


def config_file(context: pathlib.Path, name: str, **keys: str) -> pathlib.Path:
    path = context.parent / f"{name}.yaml"
    path.write_text(CONFIG.format(name=name) + "".join(f"{k}: {v}\n" for k, v in keys.items()))
    return path


def create(env: dict[str, str], context: pathlib.Path, name: str, **keys: str) -> int:
    """A paused experiment (config keys `keys`, e.g. workspace and project); its id."""
    out = json.loads(ok(env, "e", "create", str(config_file(context, name, **keys)), str(context), "--paused",
                        "--json"))
    return int(out["experiment"]["id"])


def refused(env: dict[str, str], code: int, context: pathlib.Path, name: str, **keys: str) -> str:
    return fails(env, code, "e", "create", str(config_file(context, name, **keys)), str(context), "--paused")


def described(env: dict[str, str], exp_id: int) -> dict:
    return json.loads(ok(env, "e", "describe", str(exp_id), "--json"))["experiment"]


def listed(env: dict[str, str], *filters: str) -> set[int]:
    return {e["id"] for e in json.loads(ok(env, "e", "list", *filters, "--json"))["experiments"]}


def workspaces(c: LocalTestCluster, *layout: tuple[str, str]) -> None:
    """The admin creates each workspace and project of `layout` ((workspace, project) pairs)."""
    made: set[str] = set()
    for ws, project in layout:
        if ws not in made:
            assert f"Created workspace {ws}" in ok(c.env, "workspace", "create", ws)
            made.add(ws)
        assert f"Created project {project}" in ok(c.env, "p", "create", ws, project, "--description", "a test")


def test_roles_per_workspace_and_through_groups(cluster: LocalTestCluster, context: pathlib.Path) -> None:
    c = cluster
    workspaces(c, ("W1", "P1"), ("W2", "P2"))
    amy, ben = person(c, "amy"), person(c, "ben")
    ok(c.env, "rbac", "assign-role", "Editor", "--username-to-assign", "amy", "--workspace-name", "W1")
    ok(c.env, "rbac", "assign-role", "Viewer", "-u", "amy", "-w", "W2")
    ok(c.env, "rbac", "assign-role", "Editor", "-u", "ben", "-w", "W2")
    roles = json.loads(ok(c.env, "rbac", "list-users-roles", "amy", "--json"))["assignments"]
    assert {(a["role"], a["workspaceName"]) for a in roles} == {("Editor", "W1"), ("Viewer", "W2")}
    mine = json.loads(ok(amy, "rbac", "my-permissions", "--json"))
    assert mine["mode"] == "rbac" and mine["admin"] is False
    assert "create_experiments" in mine["workspaces"]["W1"]
    assert "create_experiments" not in mine["workspaces"]["W2"] and "view_experiments" in mine["workspaces"]["W2"]

    amys = create(amy, context, "amys", workspace="W1", project="P1")
    err = refused(amy, 5, context, "amys-in-w2", workspace="W2", project="P2")
    assert "create_experiments" in err and "W2" in err, err
    bens = create(ben, context, "bens", workspace="W2", project="P2")
    ok(c.env, "e", "activate", str(bens))  # queued (no agent): pausing it is a real change

    assert described(amy, bens)["name"] == "bens"  # reading W2 is allowed
    assert bens in listed(amy, "--workspace", "W2") and amys not in listed(amy, "--workspace", "W2")
    for verb in ("pause", "kill"):
        err = fails(amy, 5, "e", verb, str(bens))
        assert "amy lacks edit_experiments" in err and "W2" in err, err
    ok(amy, "e", "pause", str(amys))  # her W1 one she may change

    # a role given to a group applies to its members, and stops applying when one leaves
    assert "Created user group w2-editors" in ok(c.env, "user-group", "create", "w2-editors", "--add-user", "amy")
    ok(c.env, "rbac", "assign-role", "Editor", "--group-name-to-assign", "w2-editors", "-w", "W2")
    assert json.loads(ok(c.env, "user-group", "describe", "w2-editors", "--json"))["members"] == ["amy"]
    ok(amy, "e", "pause", str(bens))
    ok(amy, "e", "activate", str(bens))
    ok(c.env, "user-group", "remove-user", "w2-editors", "amy")
    assert "amy lacks edit_experiments" in fails(amy, 5, "e", "kill", str(bens))
    ok(c.env, "user-group", "add-user", "w2-editors", "amy")
    ok(c.env, "rbac", "unassign-role", "Editor", "-g", "w2-editors", "-w", "W2")
    assert "amy lacks edit_experiments" in fails(amy, 5, "e", "pause", str(bens))

    # the SDK, as amy: the same rules
    sdk = Stalwart(c.url, "amy", "amy-pw")
    made = sdk.create_experiment(CONFIG.format(name="amys-sdk"), context, activate=False, workspace="W1",
                                 project="P1")
    assert (made.workspace, made.project) == ("W1", "P1")
    with pytest.raises(ForbiddenError, match="create_experiments"):
        sdk.create_experiment(CONFIG.format(name="amys-sdk-w2"), context, activate=False, workspace="W2",
                              project="P2")
    with pytest.raises(InvalidRequest, match="both workspace and project"):
        sdk.create_experiment(CONFIG.format(name="half"), context, activate=False, workspace="W1")
    theirs = sdk.get_experiment(bens)
    assert theirs.workspace == "W2"
    with pytest.raises(ForbiddenError, match="edit_experiments"):
        theirs.pause()
    with pytest.raises(ForbiddenError, match="edit_experiments"):
        theirs.kill()
    made.kill()
    sdk.close()

    ok(c.env, "e", "kill", str(bens))  # a ClusterAdmin (the admin) may do all
    ok(c.env, "e", "kill", str(amys))


def test_placing_and_moving_experiments(cluster: LocalTestCluster, context: pathlib.Path) -> None:
    c = cluster
    workspaces(c, ("M1", "Q1"), ("M2", "Q2"))
    cal = person(c, "cal")
    ok(c.env, "rbac", "assign-role", "Editor", "-u", "cal", "-w", "M1")
    ok(c.env, "rbac", "assign-role", "Viewer", "-u", "cal", "-w", "M2")

    placed = create(cal, context, "placed", workspace="M1", project="Q1")
    d = described(cal, placed)
    assert (d["workspace"], d["project"]) == ("M1", "Q1")
    assert "M1" in ok(cal, "e", "describe", str(placed)) and "Q1" in ok(cal, "e", "describe", str(placed))
    assert listed(cal, "--workspace", "M1", "--project", "Q1") == {placed}
    in_project = json.loads(ok(cal, "p", "list-experiments", "M1", "Q1", "--json"))["experiments"]
    assert [e["id"] for e in in_project] == [placed]
    plain = create(c.env, context, "unplaced")
    assert (described(c.env, plain)["workspace"], described(c.env, plain)["project"]) == (
        "Uncategorized", "Uncategorized")

    err = refused(cal, 2, context, "lost", workspace="M1", project="no-such-project")
    assert "no-such-project" in err, err
    err = refused(cal, 2, context, "lost", workspace="no-such-workspace", project="Q1")
    assert "no-such-workspace" in err, err

    ok(cal, "e", "pause", str(placed))
    assert "Moved experiment" in ok(c.env, "e", "move", str(placed), "--project", "M2/Q2")
    d = described(cal, placed)
    assert (d["workspace"], d["project"]) == ("M2", "Q2")
    assert placed in listed(cal, "--workspace", "M2", "--project", "Q2")
    err = fails(cal, 5, "e", "activate", str(placed))  # its permissions followed it: cal only views M2
    assert "cal lacks edit_experiments" in err and "M2" in err, err
    assert "WORKSPACE/PROJECT" in fails(c.env, 2, "e", "move", str(placed), "--project", "M1")
    assert "no-such-project" in fails(c.env, 3, "e", "move", str(placed), "--project", "M1/no-such-project")

    # back through the SDK, as the admin; then cal may change it again
    admin = Stalwart(c.url, "admin", "")
    exp = admin.get_experiment(placed)
    exp.move_to_project("M1", "Q1")
    assert (exp.workspace, exp.project) == ("M1", "Q1")
    admin.close()
    ok(cal, "e", "kill", str(placed))
    ok(c.env, "e", "kill", str(plain))

    # a workspace or project holding experiments is not deleted; an archived one takes no new experiments
    assert "Q1" in ok(cal, "workspace", "describe", "M1")
    assert fails(c.env, 4, "p", "delete", "M1", "Q1", "--yes")
    assert fails(c.env, 4, "workspace", "delete", "M1", "--yes")
    ok(c.env, "p", "archive", "M1", "Q1")
    refused(cal, 4, context, "into-archived", workspace="M1", project="Q1")
    ok(c.env, "p", "unarchive", "M1", "Q1")
    ok(c.env, "workspace", "create", "scratch")
    assert "scratch" in {w["name"] for w in json.loads(ok(c.env, "workspace", "list", "--json"))["workspaces"]}
    assert "scratch" not in ok(cal, "workspace", "list")  # in rbac mode one sees the workspaces one has a role in
    assert "Deleted workspace scratch" in ok(c.env, "workspace", "delete", "scratch", "--yes")
    assert "workspace 'scratch' not found" in fails(c.env, 3, "workspace", "describe", "scratch")


def test_a_pool_bound_to_one_workspace(cluster: LocalTestCluster, context: pathlib.Path) -> None:
    c = cluster
    workspaces(c, ("G1", "R1"), ("G2", "R2"))
    assert "bound to no workspace" in ok(c.env, "rp", "list-bindings", "gpu")
    assert "Pool gpu is bound to: G1" in ok(c.env, "resource-pool", "bind", "gpu", "G1")
    bound = json.loads(ok(c.env, "rp", "list-bindings", "gpu", "--json"))
    assert bound["workspaceNames"] == ["G1"]
    assert "gpu" in json.loads(ok(c.env, "workspace", "describe", "G1", "--json"))["boundPools"]

    gpu = "{resource_pool: gpu}"
    err = refused(c.env, 2, context, "wants-gpu", workspace="G2", project="R2", resources=gpu)
    assert "gpu" in err and "G2" in err, err
    fine = create(c.env, context, "gets-gpu", workspace="G1", project="R1", resources=gpu)
    other = create(c.env, context, "default-pool", workspace="G2", project="R2")  # an unbound pool is everyone's

    dan = person(c, "dan")
    ok(c.env, "rbac", "assign-role", "WorkspaceAdmin", "-u", "dan", "-w", "G1")  # a workspace's admin binds no pool
    assert "bind_pools" in fails(dan, 5, "rp", "unbind", "gpu", "G1")
    ok(c.env, "rp", "unbind", "gpu", "G1")
    late = create(c.env, context, "gets-gpu-now", workspace="G2", project="R2", resources=gpu)
    for exp_id in (fine, other, late):
        ok(c.env, "e", "kill", str(exp_id))
