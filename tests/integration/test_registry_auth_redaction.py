"""A registry password given in `environment.registry_auth` (issue 28) reaches the agent that pulls the image and
nothing else: not the API's answers, `e config`, `e describe --json`, the UI's page models and pages, a trial's
environment and info file, the stored task logs, the master's own log, nor the config text the master keeps. A
fork (`e fork`, which sends the config as shown, with the placeholder) keeps the secret; a config with the
placeholder and no parent, or one that would send the kept secret to another registry, is refused.

A real master over HTTP whose agent is the test (container_world.OrderTaker)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator

import httpx
import pytest
import yaml
from container_world import BASE_CONFIG, OrderTaker, context_of, create, first_trial

from helpers_auth import bearer
from stalwart.api.errors import ConfigError
from stalwart.config.secrets import PLACEHOLDER
from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

PW = "pw-9f3c1e77-registry"
AUTH = "YW5uOnB3LTlmM2MxZTc3"
IMAGE = "registry.local:5000/team/img:1"
CONFIG = BASE_CONFIG.format(name="private-image") + yaml.safe_dump({"environment": {
    "image": IMAGE, "registry_auth": {"username": "ann", "password": PW, "auth": AUTH,
                                      "serveraddress": "registry.local:5000"}}})


class World:
    def __init__(self, cluster: LocalTestCluster, context: str) -> None:
        self.cluster, self.context = cluster, context
        self.agent = OrderTaker(cluster, "box", pool="default", slot_type="cpu")
        self.exp_id = create(cluster, CONFIG, context)
        self.trial_id = first_trial(cluster, self.exp_id)
        self.http = httpx.Client(base_url=cluster.url, headers=bearer(cluster.admin_token or ""), timeout=30)

    def text(self, path: str) -> str:
        reply = self.http.get(path)
        assert reply.status_code == 200, f"GET {path}: {reply.status_code} {reply.text[:300]}"
        return reply.text


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    home = tmp_path_factory.mktemp("registry-auth")
    with LocalTestCluster(home, agents=0) as cluster:
        w = World(cluster, context_of(home))
        yield w
        w.http.close()
        w.agent.close()


def _hides(text: str) -> None:
    assert PW not in text and AUTH not in text


def test_the_agent_alone_gets_the_password(world: World) -> None:
    order = world.agent.order(trial_id=world.trial_id)
    assert order.container is not None and order.container.image == IMAGE
    assert order.container.registry_auth == {"username": "ann", "password": PW, "auth": AUTH,
                                             "serveraddress": "registry.local:5000"}
    _hides(json.dumps(order.env))  # DET_EXPERIMENT_CONFIG among them
    _hides(json.dumps(order.info))  # the info file's trial.config
    shown = json.loads(order.env["DET_EXPERIMENT_CONFIG"])["environment"]["registry_auth"]
    assert shown["password"] == PLACEHOLDER and shown["username"] == "ann"
    assert order.info["trial"]["config"]["environment"]["registry_auth"]["auth"] == PLACEHOLDER


def test_no_answer_of_the_api_or_the_ui_holds_it(world: World) -> None:
    detail = world.text(f"/api/v1/experiments/{world.exp_id}")
    _hides(detail)
    assert json.loads(detail)["config"]["environment"]["registry_auth"]["password"] == PLACEHOLDER
    for path in ("/api/v1/experiments?limit=50", f"/api/v1/experiments/{world.exp_id}/trials",
                 f"/api/v1/trials/{world.trial_id}", f"/api/v1/ui/experiments/{world.exp_id}",
                 f"/api/v1/ui/experiments/{world.exp_id}/hparams", f"/api/v1/ui/trials/{world.trial_id}",
                 "/api/v1/ui/experiments", f"/experiments/{world.exp_id}", f"/trials/{world.trial_id}",
                 "/experiments"):
        _hides(world.text(path))
    page = json.loads(world.text(f"/api/v1/ui/experiments/{world.exp_id}"))
    assert PLACEHOLDER in page["config_yaml"] and "registry.local:5000" in page["config_yaml"]


def test_the_cli_shows_it_hidden(world: World) -> None:
    config = world.cluster.cli("e", "config", str(world.exp_id), check=True).stdout
    described = world.cluster.cli("e", "describe", str(world.exp_id), "--json", check=True).stdout
    for out in (config, described):
        _hides(out)
    assert yaml.safe_load(config)["environment"]["registry_auth"]["password"] == PLACEHOLDER


def test_logs_and_the_stored_text_never_hold_it(world: World) -> None:
    order = world.agent.order(trial_id=world.trial_id)
    world.agent.log(order, f"docker: login to registry.local:5000 as ann with {PW} failed")
    client = world.cluster.client()
    lines = world.cluster.wait_for(lambda: [e.log for e in client.stream_trial_logs(world.trial_id)
                                            if "login to registry" in (e.log or "")], what="the agent's line")
    assert lines == [f"docker: login to registry.local:5000 as ann with {PLACEHOLDER} failed"]
    with sqlite3.connect(world.cluster.home / "master.db") as db:
        (text,) = db.execute("SELECT config_text FROM experiments WHERE id = ?", (world.exp_id,)).fetchone()
    _hides(text)
    _hides(world.cluster.log("master.log"))


def test_a_fork_keeps_the_secret(world: World) -> None:
    forked = world.cluster.cli("e", "fork", str(world.exp_id), "--config", "name=the-fork", "--json", check=True)
    fork_id = int(json.loads(forked.stdout)["experiment"]["id"])
    order = world.agent.order(trial_id=first_trial(world.cluster, fork_id))
    assert order.container is not None and order.container.registry_auth is not None
    assert (order.container.registry_auth["password"], order.container.registry_auth["auth"]) == (PW, AUTH)
    _hides(world.text(f"/api/v1/experiments/{fork_id}"))


def test_the_placeholder_alone_or_sent_elsewhere_is_refused(world: World) -> None:
    shown = world.cluster.client().get_experiment(world.exp_id).config
    text = yaml.safe_dump(shown)
    with pytest.raises(ConfigError, match=r"^environment\.registry_auth\.password: '\*{8}' .*no parent"):
        world.cluster.client().create_experiment(text, world.context)
    shown["environment"]["registry_auth"]["serveraddress"] = "evil.example.com"
    with pytest.raises(ConfigError, match="registry_auth.serveraddress stays the same") as refused:
        world.cluster.client().create_experiment(yaml.safe_dump(shown), world.context, parent_id=world.exp_id)
    _hides(refused.value.full_message())


def test_a_commands_password_reaches_its_agent_only(world: World) -> None:
    client = world.cluster.client()
    cmd = client.create_command({"entrypoint": ["true"], "environment": {
        "image": IMAGE, "registry_auth": {"username": "ann", "password": PW}}}, world.context).command
    order = world.agent.order(task_id=f"command-{cmd.id}")
    assert order.container is not None and order.container.registry_auth == {"username": "ann", "password": PW}
    _hides(json.dumps(order.env) + json.dumps(order.info))
    for path in (f"/api/v1/commands/{cmd.id}", f"/api/v1/tasks/command-{cmd.id}", "/api/v1/tasks", "/tasks"):
        _hides(world.text(path))
    client.kill_command(cmd.id)
