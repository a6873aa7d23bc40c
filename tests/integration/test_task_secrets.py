"""What a task can see holds none of the master's secrets (issue 19, acceptance 4).

A real local cluster runs a tiny trial and a command of ann (a user, not an admin), each running
`task_probe/probe.py`: it writes down its environment and the text of every file under its working directory,
its run directory, any directory the master or the agent named to it, and any file any variable names. None of
it holds the cluster token, the master's secret (the key that signs allocation tokens), the admin's session, its
agent's own credential, or a path into the master's home other than the task's own directories. It does hold its
allocation's token and a session of its owner: that session answers GET /api/v1/me with ann's name, lets the SDK
inside the trial read its experiment with ann's rights, and is refused (401) once the allocation has ended.
"""

from __future__ import annotations

import base64
import json
import os
import pathlib
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from helpers_auth import bearer
from stalwart.client import Client
from stalwart.context import pack_context
from stalwart.master.identity import tokens
from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

PROBE = pathlib.Path(__file__).resolve().parent / "task_probe"
OWNER, PASSWORD = "ann", "ann-secret-pw"
CONFIG = """name: secrets
entrypoint: python3 probe.py {out}
searcher: {{name: single, metric: loss, max_length: {{batches: 1}}}}
max_restarts: 0
"""


@dataclass
class Secrets:
    """What no task may see, and where the master keeps it."""

    home: pathlib.Path
    cluster_token: str
    master_secret: str
    admin_session: str
    agent_credential: str

    def named(self) -> dict[str, str]:
        return {"the cluster token": self.cluster_token, "the master's secret": self.master_secret,
                "the admin's session": self.admin_session, "the agent's credential": self.agent_credential}


@dataclass
class Probed:
    """What one task recorded, and the allocation it ran in."""

    record: dict[str, Any]
    allocation_id: str
    experiment_id: int | None = None

    @property
    def env(self) -> dict[str, str]:
        env: dict[str, str] = self.record["env"]
        return env


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalTestCluster]:
    with LocalTestCluster(tmp_path_factory.mktemp("secrets") / "home") as c:
        c.client().create_user(OWNER, password=PASSWORD)
        yield c


@pytest.fixture(scope="module")
def secrets(cluster: LocalTestCluster) -> Secrets:
    with sqlite3.connect(cluster.home / "master.db") as db:
        (secret,) = db.execute("SELECT value FROM cluster_info WHERE key = 'secret'").fetchone()
    assert cluster.admin_token is not None
    return Secrets(cluster.home, cluster.cluster_token(), str(secret), cluster.admin_token,
                   cluster.agent_credential(0))


@pytest.fixture(scope="module")
def ann(cluster: LocalTestCluster) -> Iterator[Client]:
    client = cluster.client(session_token=None)
    client.login(OWNER, PASSWORD)
    yield client
    client.close()


@pytest.fixture(scope="module")
def context_b64() -> str:
    return base64.b64encode(pack_context(PROBE).data).decode()


@pytest.fixture(scope="module")
def trial(cluster: LocalTestCluster, ann: Client, context_b64: str,
          tmp_path_factory: pytest.TempPathFactory) -> Probed:
    out = tmp_path_factory.mktemp("trial-probe") / "seen.json"
    created = ann.create_experiment(CONFIG.format(out=out), context_b64).experiment
    assert created is not None
    exp_id = created.id
    cluster.wait_for(lambda: ann.get_experiment(exp_id).experiment.state.value in ("COMPLETED", "ERROR", "CANCELED"),
                     what="the probe experiment to end")
    trial_id = ann.get_experiment(exp_id).trials[0].id
    cluster.wait_for(lambda: all(r.state.value == "TERMINATED" for r in ann.get_trial(trial_id).runs),
                     what="the probe trial's run to end")
    assert ann.get_experiment(exp_id).experiment.state.value == "COMPLETED", cluster.log("agent-0.log")[-3000:]
    assert out.exists(), "the probe wrote nothing"
    return Probed(json.loads(out.read_text()), ann.get_trial(trial_id).runs[0].id, exp_id)


@pytest.fixture(scope="module")
def command(cluster: LocalTestCluster, ann: Client, context_b64: str,
            tmp_path_factory: pytest.TempPathFactory) -> Probed:
    out = tmp_path_factory.mktemp("command-probe") / "seen.json"
    cmd = ann.create_command({"entrypoint": ["python3", "probe.py", str(out)]}, context_b64).command
    cluster.wait_for(lambda: ann.get_command(cmd.id).command.state == "TERMINATED",
                     what="the probe command to end")
    assert out.exists(), f"the probe wrote nothing: {ann.get_command(cmd.id).command}"
    record = json.loads(out.read_text())
    return Probed(record, record["env"]["STALWART_ALLOCATION_ID"])


def _leaks(probed: Probed, secrets: Secrets) -> list[str]:
    """Each place a secret shows up in what the task saw."""
    places = {f"${key}": value for key, value in probed.env.items()}
    places.update(probed.record["files"])
    return [f"{what} in {where}" for where, text in places.items() for what, secret in secrets.named().items()
            if secret in text]


def _paths_into_the_home(probed: Probed, secrets: Secrets) -> list[str]:
    """Environment values naming a path in the master's home outside the task's own allocation directory."""
    own = pathlib.Path(probed.env["DET_WORKDIR"]).parent
    out = []
    for key, value in probed.env.items():
        for item in value.split(os.pathsep):
            path = pathlib.Path(item)
            if path.is_absolute() and path.is_relative_to(secrets.home) and not path.is_relative_to(own):
                out.append(f"${key}={item}")
    return out


@pytest.mark.parametrize("kind", ["trial", "command"])
def test_a_task_sees_no_secret_of_the_master(kind: str, request: pytest.FixtureRequest, secrets: Secrets) -> None:
    probed: Probed = request.getfixturevalue(kind)
    assert len(probed.record["files"]) >= 2, probed.record["files"].keys()  # probe.py and the info file at least
    assert _leaks(probed, secrets) == []
    assert _paths_into_the_home(probed, secrets) == []
    for key in ("STALWART_HOME", "STALWART_CLUSTER_TOKEN", "DET_MASTER_CERT_FILE"):
        assert key not in probed.env, f"{kind} has ${key}"


@pytest.mark.parametrize("kind", ["trial", "command"])
def test_a_task_has_its_allocation_token_and_a_session_of_its_owner(kind: str, request: pytest.FixtureRequest,
                                                                     secrets: Secrets) -> None:
    probed: Probed = request.getfixturevalue(kind)
    env = probed.env
    assert env["STALWART_ALLOCATION_TOKEN"] == tokens.allocation_token(secrets.master_secret, probed.allocation_id)
    assert env["STALWART_USER_TOKEN"] == env["DET_USER_TOKEN"]
    if kind == "command":  # what the task proxy sends a task's server in place of the caller's credentials
        assert env["STALWART_SERVICE_TOKEN"] == tokens.service_token(secrets.master_secret, probed.allocation_id)
    info = json.loads(probed.record["files"][env["STALWART_INFO_FILE"]])
    assert info["user_token"] == env["STALWART_USER_TOKEN"]
    me = probed.record["me"]
    assert me["status"] == 200, me
    assert me["body"]["user"]["username"] == OWNER


def test_the_sdk_inside_a_trial_reads_its_experiment_as_its_owner(trial: Probed) -> None:
    assert trial.record["sdk"] == {"id": trial.experiment_id, "owner": OWNER, "name": "secrets"}


@pytest.mark.parametrize("kind", ["trial", "command"])
def test_the_owner_session_ends_with_the_allocation(kind: str, request: pytest.FixtureRequest,
                                                    cluster: LocalTestCluster) -> None:
    probed: Probed = request.getfixturevalue(kind)
    reply = httpx.get(f"{cluster.url}/api/v1/me", headers=bearer(probed.env["STALWART_USER_TOKEN"]), timeout=30)
    assert reply.status_code == 401, reply.text
