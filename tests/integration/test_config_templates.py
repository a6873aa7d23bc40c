"""Configuration templates end to end (issue 32, acceptance 4 and 6) on a real master served in a thread (SQLite,
rbac mode; no agent: nothing runs): `template set` then `experiment create --template` and `cmd run --template`
store the merged config, and changing the template afterwards changes nothing stored; a missing template is a
clear error; secrets are hidden in `template describe` and `template list` (and a hidden one set again keeps the
stored value); who may view and change a template is decided by its workspace's roles; bad input gets a 400/404/409
naming what is wrong."""

from __future__ import annotations

import json
import pathlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from click.testing import CliRunner, Result
from in_thread import serving

from helpers_auth import as_admin, as_user
from stalwart.cli.main import cli
from stalwart.config.master import parse_master_config
from stalwart.db import tables as t, task_tables as tt
from stalwart.master.app import create_app
from stalwart.master.settings import MasterSettings

pytestmark = pytest.mark.integration

PASSWORD = "templates-pw"
TP = "/api/v1/templates"
EXPERIMENT = """name: mine
description: from the config
entrypoint: python3 train.py
searcher: {name: single, metric: loss, max_length: {batches: 2}}
environment: {environment_variables: [MINE=1]}
"""
TEMPLATE = """description: from the template
max_restarts: 7
labels: [from-template]
environment: {environment_variables: [TEAM=a], image: python:3.11}
bind_mounts: [{host_path: /tmp, container_path: /scratch, read_only: true}]
"""
SECRETS = """environment:
  registry_auth: {username: bot, password: hunter2-registry, serveraddress: registry.example}
checkpoint_storage: {type: s3, bucket: b, access_key: AKIA1, secret_key: s3-secret-value}
"""


@dataclass
class Master:
    url: str
    app: Any
    home: pathlib.Path
    admin: httpx.Client
    users: dict[str, httpx.Client]

    def cli(self, *args: str, user: str = "admin") -> Result:
        """`stalwart -m URL ARGS...` in-process as `user`."""
        password = "" if user == "admin" else PASSWORD
        return CliRunner().invoke(cli, ["-m", self.url, *args], env={
            "STALWART_HOME": str(self.home / f"cli-{user}"), "DET_USER": user, "DET_PASS": password})

    def file(self, name: str, text: str) -> str:
        path = self.home / name
        path.write_text(text)
        return str(path)

    def stored(self, table: sa.Table, row_id: int) -> dict[str, Any]:
        """The config a row stores, as the database holds it (secrets and all)."""
        with self.app.state.master.db.begin() as conn:
            return dict(conn.execute(sa.select(table.c.config).where(table.c.id == row_id)).scalar_one())


def _ok(result: Result) -> str:
    assert result.exit_code == 0, f"exit {result.exit_code}\n{result.output}\n{result.exception!r}"
    return result.output


def _fails(result: Result, *words: str) -> None:
    """The command failed, saying each of `words` (in its output or its error, as `stalwart` prints it)."""
    said = f"{result.output} {result.exception}"
    assert result.exit_code != 0, said
    for word in words:
        assert word in said, (word, said)


def _says(reply: httpx.Response, status: int, *words: str) -> None:
    assert reply.status_code == status, f"{reply.status_code} {reply.text[:400]}"
    for word in words:
        assert word in reply.text, (word, reply.text[:400])


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Master]:
    """Workspaces team-a and team-b; users viewer-a (Viewer of team-a), editor-a (Editor of team-a) and viewer-b
    (Viewer of team-b); a context directory `ctx` with train.py."""
    home = tmp_path_factory.mktemp("templates")
    cluster = parse_master_config({"security": {"authz": {"type": "rbac"}},
                                   "task_container_policy": {"allowed_host_paths": ["/tmp"]}})
    app = create_app(MasterSettings(db_url=f"sqlite:///{home / 'm.db'}", home=home, cluster=cluster,
                                    ui_metrics_index=False, agent_timeout_s=3600))
    (home / "ctx").mkdir()
    (home / "ctx" / "train.py").write_text("print('never runs: no agent')\n")
    with serving(app, "templates-master") as url, httpx.Client(base_url=url, timeout=30) as admin:
        as_admin(admin)
        spaces = {}
        for name in ("team-a", "team-b"):
            spaces[name] = admin.post("/api/v1/workspaces", json={"name": name}).json()["workspace"]["id"]
            assert admin.post(f"/api/v1/workspaces/{spaces[name]}/projects", json={"name": "p"}).status_code == 200
        users = {}
        for user, role, where in (("viewer-a", "Viewer", "team-a"), ("editor-a", "Editor", "team-a"),
                                  ("viewer-b", "Viewer", "team-b")):
            assert admin.post("/api/v1/users", json={"username": user, "password": PASSWORD}).status_code == 200
            assert admin.post("/api/v1/rbac/assignments", json={
                "role": role, "username": user, "workspaceId": spaces[where]}).status_code == 200
            users[user] = httpx.Client(base_url=url, timeout=30)
            as_user(users[user], user, PASSWORD)
        yield Master(url, app, home, admin, users)
        for client in users.values():
            client.close()


def test_experiment_and_command_store_the_merged_config_and_keep_it(master: Master) -> None:
    out = _ok(master.cli("template", "set", "team-defaults", master.file("t.yaml", TEMPLATE), "-w", "team-a"))
    assert "Created template team-defaults in workspace team-a" in out
    config = master.file("e.yaml", EXPERIMENT)
    out = _ok(master.cli("e", "create", config, str(master.home / "ctx"), "--template", "team-defaults", "--paused"))
    exp_id = int(out.split("Created experiment ")[1].split()[0])
    stored = master.stored(t.experiments, exp_id)
    assert (stored["name"], stored["description"], stored["max_restarts"]) == ("mine", "from the config", 7)
    assert stored["labels"] == ["from-template"]
    assert stored["environment"]["environment_variables"]["cpu"] == ["TEAM=a", "MINE=1"]
    assert stored["environment"]["image"]["cpu"] == "python:3.11"
    assert [m["container_path"] for m in stored["bind_mounts"]] == ["/scratch"]
    cmd_out = _ok(master.cli("cmd", "run", "--template", "team-defaults", "-d", "python3", "-c", "print(1)"))
    cmd_id = int(cmd_out.split("Launched command ")[1].split()[0])
    command = master.stored(t.commands, cmd_id)
    assert command["entrypoint"] == ["python3", "-c", "print(1)"]
    assert command["environment"]["environment_variables"]["cpu"] == ["TEAM=a"]
    assert "max_restarts" not in command and "labels" not in command  # experiments' keys: a command leaves them
    assert [m["container_path"] for m in command["bind_mounts"]] == ["/scratch"]
    # the template changes: what was created with it does not
    _ok(master.cli("tpl", "set", "team-defaults", master.file("t2.yaml", "max_restarts: 1\n")))
    assert master.stored(t.experiments, exp_id) == stored
    assert master.stored(t.commands, cmd_id) == command
    assert json.loads(_ok(master.cli("e", "describe", str(exp_id), "--json")))  # still describable
    assert master.admin.get(f"{TP}/team-defaults").json()["template"]["config"] == {"max_restarts": 1}


def test_a_missing_template_is_named_with_where_to_look(master: Master) -> None:
    config = master.file("e-missing.yaml", EXPERIMENT)
    _fails(master.cli("e", "create", config, str(master.home / "ctx"), "--template", "no-such", "--paused"),
           "no-such", "stalwart template list")
    reply = master.admin.post("/api/v1/commands", json={"config": {"entrypoint": ["true"]}, "template": "no-such"})
    _says(reply, 400, "no-such", "stalwart template list")
    _fails(master.cli("template", "describe", "no-such"), "no-such", "not found")


def test_secrets_are_hidden_in_describe_and_list_and_kept_when_set_again(master: Master) -> None:
    _ok(master.cli("template", "set", "with-secrets", master.file("s.yaml", SECRETS), "-w", "team-a"))
    described = _ok(master.cli("template", "describe", "with-secrets"))
    listed = _ok(master.cli("template", "list", "--json")) + _ok(master.cli("template", "list", "--details"))
    for text in (described, listed, master.admin.get(TP).text, master.admin.get(f"{TP}/with-secrets").text):
        assert "hunter2-registry" not in text and "s3-secret-value" not in text
        assert "********" in text and "AKIA1" in text
    # describe's output set again: the hidden secrets keep their stored values
    _ok(master.cli("template", "set", "with-secrets", master.file("s2.yaml", described)))
    with master.app.state.master.db.begin() as conn:
        kept = conn.execute(sa.select(tt.config_templates.c.config)
                            .where(tt.config_templates.c.name == "with-secrets")).scalar_one()
    assert kept["environment"]["registry_auth"]["password"] == "hunter2-registry"
    assert kept["checkpoint_storage"]["secret_key"] == "s3-secret-value"
    _says(master.admin.post(TP, json={"name": "fresh-secret", "config": described}), 400, "********")


def test_who_may_view_and_change_a_template_is_its_workspaces_roles(master: Master) -> None:
    aw = master.admin.post(TP, json={"name": "team-a-only", "config": {"max_restarts": 2}, "workspace": "team-a"})
    assert aw.status_code == 200, aw.text
    viewer_b, viewer_a, editor_a = (master.users[u] for u in ("viewer-b", "viewer-a", "editor-a"))
    _says(viewer_b.get(f"{TP}/team-a-only"), 403, "view_templates")
    assert "team-a-only" not in viewer_b.get(TP).text
    _says(viewer_b.post("/api/v1/commands", json={"config": {"entrypoint": ["true"], "workspace": "team-b",
                                                             "project": "p"}, "template": "team-a-only"}),
          403, "view_templates")
    assert viewer_a.get(f"{TP}/team-a-only").json()["template"]["config"] == {"max_restarts": 2}
    assert "team-a-only" in viewer_a.get(TP).text
    _says(viewer_a.put(f"{TP}/team-a-only", json={"config": {"max_restarts": 3}}), 403, "edit_templates")
    _says(viewer_a.delete(f"{TP}/team-a-only"), 403, "edit_templates")
    assert editor_a.put(f"{TP}/team-a-only", json={"config": {"max_restarts": 3}}).status_code == 200
    _says(editor_a.put(f"{TP}/team-a-only", json={"config": {"max_restarts": 3}, "workspace": "team-b"}), 403,
          "edit_templates")  # moving it needs edit_templates in team-b too
    _says(editor_a.post(TP, json={"name": "into-b", "config": {}, "workspace": "team-b"}), 403, "edit_templates")
    result = master.cli("template", "remove", "team-a-only", user="editor-a")
    assert "Removed template team-a-only" in _ok(result)


def test_bad_input_gets_a_clear_error(master: Master) -> None:
    admin = master.admin
    _says(admin.post(TP, json={"name": "list", "config": "- a\n- b\n"}), 400, "must be a mapping", "a list")
    _says(admin.post(TP, json={"name": "bad/name", "config": {}}), 400, "bad/name", "not valid")
    _says(admin.post(TP, json={"name": "x", "config": "a: [unclosed"}), 400, "malformed YAML")
    _says(admin.post(TP, json={"name": "x", "config": {}, "workspace": "nowhere"}), 404, "nowhere")
    _says(admin.post(TP, json={"name": "x", "config": {"template": "y"}}), 400, "another template")
    assert admin.post(TP, json={"name": "taken", "config": {}}).status_code == 200
    _says(admin.post(TP, json={"name": "taken", "config": {}}), 409, "taken", "template set")
    _says(admin.put(f"{TP}/never-made", json={"config": {}}), 404, "never-made")
    _says(admin.delete(f"{TP}/never-made"), 404, "never-made")
    _fails(master.cli("template", "set", "x", str(master.home / "no-such-file.yaml")), "no-such-file.yaml")
    team_b = next(w["id"] for w in admin.get("/api/v1/workspaces").json()["workspaces"] if w["name"] == "team-b")
    assert admin.post(TP, json={"name": "holds-b", "config": {}, "workspace": "team-b"}).status_code == 200
    _says(admin.delete(f"/api/v1/workspaces/{team_b}"), 409, "holds-b", "templates")
