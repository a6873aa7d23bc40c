"""Users and sessions through the CLI and the SDK on a real master (issue 19, acceptance 2): two users each own
their experiments, may read but not change each other's, an admin may do both; logins, access tokens,
deactivation, passwords from the environment, and the audit log.

Each user works from a home of its own (STALWART_HOME), so each has its own auth file, as two people on two
machines would. The experiments are created paused and never run: the cluster has no agent.
"""

from __future__ import annotations

import json
import pathlib

import pytest

from cli_runs import fails, ok, run
from stalwart.api.errors import AuthError, ForbiddenError
from stalwart.api.states import ExperimentState
from stalwart.experimental import client as sdk
from stalwart.experimental._stalwart import Stalwart
from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

CONFIG = """name: {name}
entrypoint: python3 main.py
searcher: {{name: single, metric: loss, max_length: 1}}
max_restarts: 0
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    with LocalTestCluster(tmp_path_factory.mktemp("users") / "home", agents=0) as c:
        yield c


@pytest.fixture(scope="module")
def context(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    path = tmp_path_factory.mktemp("context")
    (path / "main.py").write_text("print('never runs here')\n")
    return path


def new_user(c: LocalTestCluster, name: str, password: str, *flags: str) -> None:
    """The admin creates `name`, giving its password at the prompt (twice)."""
    out = ok(c.env, "user", "create", name, "--password", *flags, stdin=f"{password}\n{password}\n")
    assert f"Created user {name}" in out


def home_of(c: LocalTestCluster, name: str) -> dict[str, str]:
    """The environment of a person with a home (and so an auth file) of their own, logged in as no one yet."""
    home = c.home.parent / f"home-of-{name}"
    home.mkdir(exist_ok=True)
    return {**c.env, "STALWART_HOME": str(home)}


def logged_in(c: LocalTestCluster, name: str, password: str) -> dict[str, str]:
    env = home_of(c, name)
    assert f"Logged in as {name}" in ok(env, "user", "login", name, stdin=f"{password}\n")
    return env


def create_paused(env: dict[str, str], context: pathlib.Path, name: str) -> int:
    config = context.parent / f"{name}.yaml"
    config.write_text(CONFIG.format(name=name))
    out = json.loads(ok(env, "e", "create", str(config), str(context), "--paused", "--json"))
    return int(out["experiment"]["id"])


def described(env: dict[str, str], exp_id: int) -> dict:
    return json.loads(ok(env, "e", "describe", str(exp_id), "--json"))["experiment"]


def ended(c: LocalTestCluster, exp_id: int) -> None:
    with c.client() as admin:
        c.wait_for(lambda: admin.get_experiment(exp_id).experiment.state.terminal, timeout=60,
                   what=f"experiment {exp_id} to end")


def test_login_whoami_list_and_wrong_passwords(cluster: LocalTestCluster) -> None:
    c = cluster
    new_user(c, "ann", "ann-pw")
    env = home_of(c, "ann")
    err = fails(env, 5, "user", "whoami")  # no session yet: the master's 401, one line, exit 5
    assert "not logged in" in err and "stalwart user login" in err
    assert "invalid credentials" in fails(env, 5, "user", "login", "ann", stdin="not-it\n")
    assert "Logged in as ann" in ok(env, "user", "login", "ann", stdin="ann-pw\n")
    assert "logged in as user 'ann'" in ok(env, "user", "whoami")
    assert json.loads(ok(env, "user", "whoami", "--json"))["username"] == "ann"

    listed = {u["username"]: u for u in json.loads(ok(env, "user", "list", "--json"))["users"]}
    assert {"admin", "determined", "ann"} <= set(listed)
    assert listed["ann"]["admin"] is False and listed["ann"]["hasPassword"] is True
    assert listed["admin"]["admin"] is True
    err = fails(env, 5, "user", "create", "someone")
    assert "manage_users" in err and "only admins" in err

    assert "Logged out ann" in ok(env, "user", "logout")
    assert "not logged in" in fails(env, 5, "user", "whoami")
    assert "nothing to log out" in ok(env, "user", "logout")


def test_each_user_changes_only_their_own_experiments_and_an_admin_changes_all(
        cluster: LocalTestCluster, context: pathlib.Path) -> None:
    c = cluster
    new_user(c, "alice", "alice-pw")
    new_user(c, "bob", "bob-pw")
    alice = logged_in(c, "alice", "alice-pw")
    bob = {**home_of(c, "bob"), "DET_USER": "bob", "DET_PASS": "bob-pw"}  # a script's login: Determined's names

    mine = create_paused(alice, context, "alices")
    theirs = create_paused(bob, context, "bobs")
    assert described(alice, mine)["owner"] == "alice" and described(bob, theirs)["owner"] == "bob"

    ok(alice, "e", "kill", str(mine))
    err = fails(alice, 5, "e", "kill", str(theirs))
    assert "alice lacks edit_experiments" in err and f"experiment {theirs} belongs to bob" in err
    err = fails(alice, 5, "e", "delete", str(theirs), "--yes")
    assert "alice lacks delete_experiments" in err
    assert described(alice, theirs)["name"] == "bobs"  # reading it is allowed
    assert described(alice, theirs)["state"] == "PAUSED"

    # -u: one command as another user, in the admin's home; the admin stays the active user there
    err = fails(c.env, 5, "-u", "alice", "e", "kill", str(theirs), stdin="alice-pw\n")
    assert "alice lacks edit_experiments" in err
    assert "logged in as user 'admin'" in ok(c.env, "user", "whoami")

    ok(c.env, "e", "kill", str(theirs))  # the admin may
    ended(c, mine)
    ended(c, theirs)
    ok(c.env, "e", "delete", str(theirs), "--yes")
    ok(c.env, "e", "delete", str(mine), "--yes")
    fails(alice, 3, "e", "describe", str(theirs))

    # a kept session is used as long as the master takes it (as Determined's CLI does); without one, a wrong
    # password in the environment is a clear error
    wrong = {**home_of(c, "bob-elsewhere"), "DET_USER": "bob", "DET_PASS": "wrong"}
    assert "invalid credentials" in fails(wrong, 5, "user", "whoami")


def test_an_access_token_works_until_revoked(cluster: LocalTestCluster) -> None:
    c = cluster
    new_user(c, "tom", "tom-pw")
    tom = logged_in(c, "tom", "tom-pw")
    res = run(tom, "token", "create", "--lifespan", "1h", "--description", "ci job")
    assert res.returncode == 0, res.stderr
    token = res.stdout.strip()  # standard output holds the token alone; the notes go to standard error
    assert "shown only now" in res.stderr and "\n" not in token
    listed = json.loads(ok(tom, "token", "list", "--json"))["tokens"]
    assert [(t["username"], t["description"]) for t in listed] == [("tom", "ci job")]
    token_id = listed[0]["id"]

    script = {**home_of(c, "tom-script"), "STALWART_USER_TOKEN": token}
    assert "logged in as user 'tom'" in ok(script, "user", "whoami")
    assert "manage_all_tokens" in fails(tom, 5, "token", "list", "--all")
    assert "from 1 minute" in fails(tom, 2, "token", "create", "--lifespan", "30s")

    assert f"Revoked access token {token_id} of user tom" in ok(tom, "token", "revoke", str(token_id))
    assert "log in again" in fails(script, 5, "user", "whoami")
    everyone = json.loads(ok(c.env, "token", "list", "--all", "--json"))["tokens"]
    assert {t["id"]: t["revoked"] for t in everyone}[token_id] is True

    made = json.loads(ok(c.env, "token", "create", "--user", "tom", "--json"))  # an admin's token for tom
    assert made["tokenInfo"]["username"] == "tom"
    assert "logged in as user 'tom'" in ok({**script, "STALWART_USER_TOKEN": made["token"]}, "user", "whoami")


def test_deactivating_a_user_ends_their_session_at_once(cluster: LocalTestCluster) -> None:
    c = cluster
    new_user(c, "dan", "dan-pw")
    dan = logged_in(c, "dan", "dan-pw")
    token = run(dan, "token", "create").stdout.strip()
    assert "User dan (not an admin, inactive)" in ok(c.env, "user", "deactivate", "dan")
    assert "log in again" in fails(dan, 5, "user", "whoami")
    assert "log in again" in fails({**home_of(c, "dan-script"), "STALWART_USER_TOKEN": token}, 5, "user", "whoami")
    assert "not active" in fails(dan, 5, "user", "login", "dan", stdin="dan-pw\n")
    assert "dan" not in [u["username"] for u in json.loads(ok(c.env, "user", "list", "--json"))["users"]]
    assert "dan" in [u["username"] for u in json.loads(ok(c.env, "user", "list", "--all", "--json"))["users"]]

    ok(c.env, "user", "activate", "dan")
    ok(dan, "user", "login", "dan", stdin="dan-pw\n")
    assert "User dan (an admin" not in ok(c.env, "user", "edit", "dan", "--display-name", "Dan D.")
    assert "User dan (admin, active" in ok(c.env, "user", "edit", "dan", "--admin")
    assert "logged in as user 'dan' (an admin)" in ok(dan, "user", "whoami")
    ok(c.env, "user", "edit", "dan", "--no-admin", "--deactivate")
    assert "nothing to change" in fails(c.env, 2, "user", "edit", "dan")
    assert "not found" in fails(c.env, 3, "user", "activate", "nobody")


def test_changing_passwords(cluster: LocalTestCluster) -> None:
    c = cluster
    new_user(c, "pat", "old-pw")
    pat = logged_in(c, "pat", "old-pw")
    assert "wrong" in fails(pat, 5, "user", "change-password", stdin="not-it\nnew-pw\nnew-pw\n")
    assert "differ" in fails(pat, 2, "user", "change-password", stdin="old-pw\nnew-pw\nother\n")
    ok(pat, "user", "change-password", stdin="old-pw\nnew-pw\nnew-pw\n")
    assert "logged in as user 'pat'" in ok(pat, "user", "whoami")  # the session stays
    assert "invalid credentials" in fails(pat, 5, "user", "login", "pat", stdin="old-pw\n")
    ok(pat, "user", "login", "pat", stdin="new-pw\n")
    ok(c.env, "user", "change-password", "pat", stdin="admin-set\nadmin-set\n")  # an admin needs no current one
    ok(pat, "user", "login", "pat", stdin="admin-set\n")
    assert "edit_own_account" in fails(pat, 5, "user", "change-password", "admin", stdin="x\nx\n")


def test_the_audit_log_shows_who_did_what(cluster: LocalTestCluster, context: pathlib.Path) -> None:
    c = cluster
    new_user(c, "eve", "eve-pw")
    eve = logged_in(c, "eve", "eve-pw")
    exp_id = create_paused(eve, context, "eves")
    ok(c.env, "e", "kill", str(exp_id))
    fails(eve, 5, "user", "create", "mallory")

    entries = json.loads(ok(c.env, "audit", "list", "--user", "eve", "--since", "1h", "--json"))["entries"]
    seen = [(e["method"], e["path"], e["outcome"]) for e in entries]
    assert ("POST", "/api/v1/auth/login", "ok") in seen
    assert ("POST", "/api/v1/users", "refused") in seen
    assert any(m == "POST" and p.startswith("/api/v1/experiments") and o == "ok" for m, p, o in seen), seen
    kills = json.loads(ok(c.env, "audit", "list", "--user", "admin", "--json"))["entries"]
    assert any(e["target"] == f"experiment {exp_id}" and e["path"].endswith("/kill") for e in kills), kills
    assert len(json.loads(ok(c.env, "audit", "list", "--limit", "1", "--json"))["entries"]) == 1
    assert "Outcome" in ok(c.env, "audit", "list", "--since", "2020-01-01T00:00")
    assert "view_audit" in fails(eve, 5, "audit", "list")
    assert "expected a time ago" in fails(c.env, 2, "audit", "list", "--since", "yesterday")


def test_the_sdk_acts_as_the_user_it_logged_in_as(cluster: LocalTestCluster, context: pathlib.Path,
                                                   tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    c = cluster
    monkeypatch.setenv("STALWART_HOME", str(tmp_path / "sdk-home"))  # this process's auth file
    new_user(c, "sue", "sue-pw")
    new_user(c, "sam", "sam-pw")
    config = {"name": "sdk", "entrypoint": "python3 main.py", "max_restarts": 0,
              "searcher": {"name": "single", "metric": "loss", "max_length": 1}}

    with pytest.raises(AuthError, match="invalid credentials"):
        sdk.login(c.url, "sue", "wrong")
    sams = Stalwart(c.url, "sam", "sam-pw").create_experiment(config, context, activate=False)

    sue = sdk.login(c.url, "sue", "sue-pw")
    mine = sdk.create_experiment(config, context, activate=False)
    mine.kill()
    with pytest.raises(ForbiddenError, match=f"sue lacks edit_experiments .*experiment {sams.id} belongs to sam"):
        sue.get_experiment(sams.id).kill()
    theirs = sdk.get_experiment(sams.id)
    assert theirs.state is ExperimentState.PAUSED
    ended(c, mine.id)
    assert sdk.get_experiment(mine.id).state is ExperimentState.CANCELED
