"""Cloud-storage credentials (issue 29): an S3 secret key and an Azure connection string in `checkpoint_storage`
reach the trial that writes checkpoints (its info file's `checkpoint_storage`) and nothing else: not its
`trial.config` nor DET_EXPERIMENT_CONFIG, the checkpoint views (a checkpoint row stores its experiment's storage),
the experiment's config and config text, `e config`, `e describe --json`, `checkpoint describe`, the UI's answers
and pages, a workspace's storage default (API, `workspace describe`, UI), the stored task logs or master.log. A fork by
the experiment's owner keeps the secret (another user's must give its own); a workspace default given back with the
placeholder keeps its own.

No storage server is needed: the configs are stored and shown, the test is the agent (container_world.OrderTaker)
and reports checkpoints through the API as a trial would."""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterator

import httpx
import pytest
import yaml
from container_world import BASE_CONFIG, OrderTaker, context_of, create, first_trial

from helpers_auth import bearer, log_in
from stalwart.api.errors import ConfigError
from stalwart.api.models.agents import StartOrder
from stalwart.client import Client
from stalwart.config.secrets import PLACEHOLDER
from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

S3_SECRET = "s3-SECRET-7d1e0c55aa"
AZ_CONN = "DefaultEndpointsProtocol=http;AccountName=devacct;AccountKey=QXp1cml0ZS1rZXktOTk=;BlobEndpoint=http://x"
WS_SECRET = "ws-SECRET-3b8e4471"
S3 = {"type": "s3", "bucket": "ckpts", "access_key": "AKIAFAKE", "secret_key": S3_SECRET,
      "endpoint_url": "http://127.0.0.1:1", "prefix": "runs"}
AZURE = {"type": "azure", "container": "ckpts", "connection_string": AZ_CONN}
WS_STORAGE = {"type": "s3", "bucket": "team", "access_key": "AKIATEAM", "secret_key": WS_SECRET}
SECRETS = (S3_SECRET, AZ_CONN, WS_SECRET, "QXp1cml0ZS1rZXktOTk=")


def _config(name: str, storage: dict | None = None, **extra: str) -> str:
    text = BASE_CONFIG.format(name=name) + "".join(f"{k}: {v}\n" for k, v in extra.items())
    return text + (yaml.safe_dump({"checkpoint_storage": storage}) if storage else "")


def _hides(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text


class World:
    def __init__(self, cluster: LocalTestCluster, context: str) -> None:
        self.cluster, self.context = cluster, context
        self.agent = OrderTaker(cluster, "box", pool="default", slot_type="cpu")
        self.http = httpx.Client(base_url=cluster.url, headers=bearer(cluster.admin_token or ""), timeout=30)
        self.s3_exp = create(cluster, _config("s3-storage", S3), context)
        self.azure_exp = create(cluster, _config("azure-storage", AZURE), context)
        self.ws = cluster.client().create_workspace("secure", checkpoint_storage_config=WS_STORAGE)
        self.checkpoints = [self.report_checkpoint(self.s3_exp), self.report_checkpoint(self.azure_exp)]

    def order_of(self, exp_id: int) -> StartOrder:
        return self.agent.order(trial_id=first_trial(self.cluster, exp_id))

    def report_checkpoint(self, exp_id: int) -> str:
        """A checkpoint reported by the experiment's trial (its allocation token), as the harness does."""
        order = self.order_of(exp_id)
        ckpt = str(uuid.uuid4())
        with Client(self.cluster.url, allocation_token=order.env["STALWART_ALLOCATION_TOKEN"]) as trial:
            trial.register_checkpoint(order.trial_id, ckpt, resources={"model.bin": 3},
                                      metadata={"steps_completed": 1})
        return ckpt

    def text(self, path: str) -> str:
        reply = self.http.get(path)
        assert reply.status_code == 200, f"GET {path}: {reply.status_code} {reply.text[:300]}"
        return reply.text


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    home = tmp_path_factory.mktemp("storage-secrets")
    with LocalTestCluster(home, agents=0) as cluster:
        w = World(cluster, context_of(home))
        yield w
        w.http.close()
        w.agent.close()


def test_the_trial_alone_gets_the_credentials(world: World) -> None:
    for exp_id, storage in ((world.s3_exp, S3), (world.azure_exp, AZURE)):
        order = world.order_of(exp_id)
        assert order.info["checkpoint_storage"] == {**order.info["checkpoint_storage"], **storage}
        shown = dict(order.info)
        del shown["checkpoint_storage"]
        _hides(json.dumps(order.env) + json.dumps(shown))  # DET_EXPERIMENT_CONFIG, the info file's trial.config
        key = "secret_key" if storage is S3 else "connection_string"
        assert order.info["trial"]["config"]["checkpoint_storage"][key] == PLACEHOLDER
        assert json.loads(order.env["DET_EXPERIMENT_CONFIG"])["checkpoint_storage"][key] == PLACEHOLDER


def test_no_answer_of_the_api_or_the_ui_holds_them(world: World) -> None:
    s3_ckpt, azure_ckpt = world.checkpoints
    view = json.loads(world.text(f"/api/v1/checkpoints/{s3_ckpt}"))["checkpoint"]
    assert view["storage"]["secret_key"] == PLACEHOLDER and view["storage"]["bucket"] == "ckpts"
    azure_view = json.loads(world.text(f"/api/v1/checkpoints/{azure_ckpt}"))["checkpoint"]
    assert azure_view["storage"]["connection_string"] == PLACEHOLDER
    for exp_id in (world.s3_exp, world.azure_exp):
        trial_id = first_trial(world.cluster, exp_id)
        for path in (f"/api/v1/experiments/{exp_id}", f"/api/v1/experiments/{exp_id}/checkpoints",
                     f"/api/v1/trials/{trial_id}", f"/api/v1/trials/{trial_id}/checkpoints",
                     f"/api/v1/ui/experiments/{exp_id}", f"/api/v1/ui/trials/{trial_id}", f"/experiments/{exp_id}",
                     f"/trials/{trial_id}"):
            _hides(world.text(path))
        page = json.loads(world.text(f"/api/v1/ui/experiments/{exp_id}"))
        assert PLACEHOLDER in page["config_yaml"]  # the config tab
    for path in ("/api/v1/experiments?limit=50", "/api/v1/ui/experiments", "/experiments",
                 "/api/v1/workspaces", f"/api/v1/workspaces/{world.ws.id}", f"/workspaces/{world.ws.id}"):
        _hides(world.text(path))
    ws = json.loads(world.text(f"/api/v1/workspaces/{world.ws.id}"))["workspace"]
    assert ws["checkpointStorageConfig"]["secret_key"] == PLACEHOLDER


def test_the_cli_shows_them_hidden(world: World) -> None:
    for exp_id in (world.s3_exp, world.azure_exp):
        config = world.cluster.cli("e", "config", str(exp_id), check=True).stdout
        _hides(config)
        _hides(world.cluster.cli("e", "describe", str(exp_id), "--json", check=True).stdout)
        assert PLACEHOLDER in json.dumps(yaml.safe_load(config)["checkpoint_storage"])
    for ckpt in world.checkpoints:
        _hides(world.cluster.cli("checkpoint", "describe", ckpt, "--json", check=True).stdout)
    for fmt in ((), ("--json",)):
        _hides(world.cluster.cli("workspace", "describe", "secure", *fmt, check=True).stdout)


def test_logs_and_the_stored_text_never_hold_them(world: World) -> None:
    order = world.order_of(world.s3_exp)
    world.agent.log(order, f"boto: 403 for AKIAFAKE signed with {S3_SECRET}")
    lines = world.cluster.wait_for(lambda: [e.log for e in world.cluster.client().stream_trial_logs(order.trial_id)
                                            if "boto: 403" in (e.log or "")], what="the trial's line")
    assert lines == [f"boto: 403 for AKIAFAKE signed with {PLACEHOLDER}"]
    with sqlite3.connect(world.cluster.home / "master.db") as db:
        texts = [t for (t,) in db.execute("SELECT config_text FROM experiments")]
    _hides("\n".join(texts))
    _hides(world.cluster.log("master.log"))


def test_a_fork_keeps_the_secret(world: World) -> None:
    forked = world.cluster.cli("e", "fork", str(world.s3_exp), "--config", "name=the-fork", "--json", check=True)
    fork_id = int(json.loads(forked.stdout)["experiment"]["id"])
    assert world.order_of(fork_id).info["checkpoint_storage"]["secret_key"] == S3_SECRET
    _hides(world.text(f"/api/v1/experiments/{fork_id}"))
    with sqlite3.connect(world.cluster.home / "master.db") as db:
        (stored,) = db.execute("SELECT config FROM experiments WHERE id = ?", (fork_id,)).fetchone()
    assert PLACEHOLDER not in stored and S3_SECRET in stored  # the placeholder is never saved as the secret


def test_a_workspace_default_keeps_its_secret_given_the_placeholder(world: World) -> None:
    client = world.cluster.client()
    shown = client.get_workspace(world.ws.id).checkpointStorageConfig
    assert shown is not None and shown["secret_key"] == PLACEHOLDER
    client.edit_workspace(world.ws.id, checkpoint_storage_config={**shown, "prefix": "moved"})
    exp_id = create(world.cluster, _config("in-secure", workspace="secure", project="Uncategorized"), world.context)
    storage = world.order_of(exp_id).info["checkpoint_storage"]
    assert (storage["secret_key"], storage["prefix"], storage["bucket"]) == (WS_SECRET, "moved", "team")
    _hides(world.text(f"/api/v1/experiments/{exp_id}"))
    _hides(world.cluster.cli("e", "config", str(exp_id), check=True).stdout)


def test_another_users_fork_does_not_get_the_owners_credentials(world: World) -> None:
    """A fork's trials run its owner's code with the storage credentials: the parent's are kept for its owner only."""
    world.cluster.client().create_user("bob", password="bob-pw-51")
    with httpx.Client(base_url=world.cluster.url) as http:
        bob = world.cluster.client(session_token=log_in(http, "bob", "bob-pw-51"))
    shown = bob.get_experiment(world.s3_exp).config
    text = yaml.safe_dump({**shown, "name": "bobs-fork"})
    with pytest.raises(ConfigError, match=r"checkpoint_storage\.secret_key: .*only its owner's forks keep") as refused:
        bob.create_experiment(text, world.context, parent_id=world.s3_exp)
    _hides(refused.value.full_message())
    own = yaml.safe_dump({**shown, "name": "bobs-fork", "checkpoint_storage": {**shown["checkpoint_storage"],
                                                                              "secret_key": "bobs-own-key"}})
    created = bob.create_experiment(own, world.context, parent_id=world.s3_exp).experiment
    assert created is not None
    assert world.order_of(int(created.id)).info["checkpoint_storage"]["secret_key"] == "bobs-own-key"
