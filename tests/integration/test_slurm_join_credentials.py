"""Who a Slurm job's agents are (issue 30): the master's single-use join credential, through a real Slurm
(tests/slurm_server.py, partitions `rmconf_a` of 1-CPU nodes and `rmconf_b`) and the master's real routes
(`create_app` on SQLite, fastapi's TestClient).

The job runs a stand-in for the one-shot agent that writes what it was given (its environment) and holds its node;
the test then enrolls as the job's agents over HTTP with that credential:
- it reaches the job through sbatch's environment, never its script; the master's environment (where its cluster
  token may be) does not reach the job;
- an agent that comes before the master's poll has placed its job is asked to enroll again in a moment;
- it enrolls only the agent ids of its own allocation, each once, and is spent when all have;
- an agent of its own cannot join a pool Slurm runs, with the cluster token or without."""

from __future__ import annotations

import base64
import pathlib
import time

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from helpers_auth import as_admin, bearer
from stalwart.config.master import parse_master_config
from stalwart.context import pack_context
from stalwart.db import tables as t
from stalwart.master.app import create_app
from stalwart.master.scheduling import scheduling
from stalwart.master.settings import MasterSettings

pytestmark = pytest.mark.integration
POOLS = ("rmconf_a", "rmconf_b")
CONFIG = """
name: join
entrypoint: python3 train.py
searcher: {name: single, metric: loss, max_length: {batches: 10}}
resources: {slots_per_trial: 2, resource_pool: rmconf_a}
slurm: {slots_per_node: 1}
"""


def _standin(out: pathlib.Path) -> list[str]:
    """A one-shot agent's stand-in: records its environment per node (whole once the file is there: written
    aside, then renamed), then holds the node."""
    return ["sh", "-c", f'env > {out}/.env-$SLURM_NODEID && mv {out}/.env-$SLURM_NODEID {out}/env-$SLURM_NODEID; '
            'exec sleep 600', "--"]


@pytest.fixture
def world(slurm_cluster, tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf_path))
    out = tmp_path / "job"
    out.mkdir()
    rm = {"type": "slurm", "slot_type": "cpu", "user_name": "root", "agent_command": _standin(out),
          "poll_interval": 0, "job_name_prefix": f"join-{time.time_ns() % 10**9}-"}
    cluster = parse_master_config({"resource_manager": rm, "resource_pools": [{"pool_name": p} for p in POOLS],
                                   "security": {"allow_root_tasks": True}})
    with slurm_cluster.exclusive(*POOLS):
        app = create_app(MasterSettings(db_url=f"sqlite:///{tmp_path / 'm.db'}", home=tmp_path, cluster=cluster,
                                        ui_metrics_index=False, agent_timeout_s=3600))
        monkeypatch.setenv("STALWART_CLUSTER_TOKEN", app.state.master.cluster_token)  # must not reach a job
        http = TestClient(app, client=("127.0.0.1", 50000), raise_server_exceptions=False)
        as_admin(http)
        yield app.state.master, http, out, slurm_cluster
        http.close()
        for p in POOLS:
            for job in slurm_cluster.squeue(p):
                slurm_cluster.cancel(job["job_id"])
        app.state.master.db.dispose()


def _placed(m, timeout: float = 30) -> tuple[str, str, list[str]]:
    """Tick until the run is placed on its job's agents: (allocation id, job id, agent ids by rank)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        scheduling.tick(m)
        with m.db.begin() as conn:
            alloc = conn.execute(sa.select(t.allocations)).mappings().first()
            agents = conn.execute(sa.select(t.allocation_containers.c.agent_id).order_by(
                t.allocation_containers.c.container_rank)).scalars().all()
        if alloc is not None and agents:
            return alloc["id"], alloc["engine_job_id"], list(agents)
        time.sleep(0.3)
    raise AssertionError("the run was not placed on its job's agents")


def _create(http: TestClient, tmp_path: pathlib.Path) -> None:
    ctx = tmp_path / "ctx"
    ctx.mkdir(exist_ok=True)
    (ctx / "train.py").write_text("print('never runs: the test is the agent')\n")
    context = base64.b64encode(pack_context(ctx).data).decode()
    created = http.post("/api/v1/experiments", json={"config": CONFIG, "context": context})
    assert created.status_code == 200, created.text


def _env(path: pathlib.Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def test_a_jobs_join_credential_is_single_use_for_its_own_agents_and_only_in_its_environment(world, tmp_path):
    m, http, out, slurm = world
    _create(http, tmp_path)
    scheduling.tick(m)  # submitted; the job starts before the next pass has seen it
    for rank in (0, 1):
        deadline = time.monotonic() + 20
        while not (out / f"env-{rank}").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
    envs = [_env(out / f"env-{rank}") for rank in (0, 1)]
    token = envs[0]["STALWART_JOIN_TOKEN"]
    early = http.post("/api/v1/agents", json={"agent_id": "slurm-1-0", "slots": 1, "resource_pool": "rmconf_a"},
                      headers=bearer(token))
    assert early.status_code == 409 and "enroll again in a moment" in early.json()["error"]["message"], early.text
    allocation_id, job_id, agent_ids = _placed(m)
    assert agent_ids == [f"slurm-{job_id}-0", f"slurm-{job_id}-1"]
    assert token and envs[1]["STALWART_JOIN_TOKEN"] == token
    for env in envs:
        assert "STALWART_CLUSTER_TOKEN" not in env and m.cluster_token not in "".join(env.values())
    script = slurm.run("scontrol", "write", "batch_script", job_id, "-").stdout
    assert "slurm_job" in script or "sleep" in script
    assert token not in script and m.cluster_token not in script

    def enroll(agent_id: str, credential: str = token):
        return http.post("/api/v1/agents", json={"agent_id": agent_id, "slots": 1, "resource_pool": "rmconf_a"},
                         headers=bearer(credential))

    other = enroll("slurm-999-0")
    assert other.status_code == 403 and f"allocation {allocation_id}" in other.json()["error"]["message"], other.text
    first = enroll(agent_ids[0])
    assert first.status_code == 200 and first.json()["credential"], first.text
    again = enroll(agent_ids[0])
    assert again.status_code == 403 and "single-use" in again.json()["error"]["message"], again.text
    second = enroll(agent_ids[1])
    assert second.status_code == 200 and second.json()["credential"] != first.json()["credential"]
    spent = enroll(agent_ids[1])
    assert spent.status_code == 403, spent.text  # every agent joined: the join credential is no longer known
    own = http.post("/api/v1/agents", json={"agent_id": agent_ids[0], "slots": 8, "resource_pool": "rmconf_b"},
                    headers=bearer(first.json()["credential"]))
    assert own.status_code == 200, own.text  # the agent re-registers (a master restart) with its own credential
    with m.db.begin() as conn:
        stored = conn.execute(sa.select(t.allocations.c.join_token_hash)
                              .where(t.allocations.c.id == allocation_id)).scalar_one()
        row = conn.execute(sa.select(t.agents).where(t.agents.c.id == agent_ids[0])).mappings().one()
    assert stored is None
    assert (row["resource_pool"], row["slots"]) == ("rmconf_a", 1)  # a job's agent cannot move or grow itself


def test_an_agent_of_its_own_cannot_join_a_pool_slurm_runs(world):
    m, http, _out, _slurm = world
    reply = http.post("/api/v1/agents", json={"agent_id": "rogue", "slots": 4, "resource_pool": "rmconf_a"},
                      headers=bearer(m.cluster_token))
    assert reply.status_code == 400, reply.text
    assert "run by the slurm resource manager" in reply.json()["error"]["message"]
    assert "agents cannot join it" in reply.json()["error"]["message"]
