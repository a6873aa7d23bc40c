"""The master's side of scheduling against a real SQLite database: gangs over two agents (start orders,
RUNNING only when all containers run, one failure per gang), preemption timeouts, jobs, draining."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from stalwart.api.errors import ConfigError, InvalidRequest
from stalwart.config.master import parse_master_config
from stalwart.context import pack_context
from stalwart.db import tables as t
from stalwart.master.allocations import lifecycle
from stalwart.master.cluster import agents, credentials
from stalwart.master.experiments import experiments
from stalwart.master.scheduling import jobs, scheduling
from stalwart.master.service import Master
from stalwart.master.settings import MasterSettings

CONFIG = """
name: {name}
entrypoint: python3 train.py
hyperparameters: {{lr: 0.1}}
searcher: {{name: single, metric: acc, max_length: {{batches: 10}}}}
resources: {{slots_per_trial: {slots}, priority: {priority}}}
max_restarts: 3
preemption_timeout: {timeout}
checkpoint_storage: {{type: shared_fs, host_path: /tmp/unused}}
"""


@pytest.fixture
def archive(tmp_path):
    d = tmp_path / "ctx"
    d.mkdir()
    (d / "train.py").write_text("print('x')\n")
    return pack_context(d).data


def _master(tmp_path, cluster_yaml: dict | None = None) -> Master:
    cfg = parse_master_config(cluster_yaml or {})
    return Master(MasterSettings(db_url=f"sqlite:///{tmp_path / 'm.db'}", home=tmp_path, cluster=cfg))


def _create(m, archive, name="e", slots=1, priority=42, timeout=3600) -> int:
    text = CONFIG.format(name=name, slots=slots, priority=priority, timeout=timeout)
    return experiments.create_experiment(m, text, archive, activate=True, owner="me")[0]


def _allocs(m, **where) -> list[dict]:
    with m.db.begin() as conn:
        q = sa.select(t.allocations)
        for k, v in where.items():
            q = q.where(t.allocations.c[k] == v)
        return [dict(r) for r in conn.execute(q.order_by(t.allocations.c.created_at)).mappings()]


def _trial(m, exp_id) -> dict:
    with m.db.begin() as conn:
        return dict(conn.execute(sa.select(t.trials).where(t.trials.c.experiment_id == exp_id)).mappings().one())


def test_gang_over_two_agents_gets_ranks_and_runs_only_when_both_started(tmp_path, archive):
    m = _master(tmp_path)
    agents.register(m, {"agent_id": "a0", "slots": 1, "hostname": "h0"}, "127.0.0.1", caller=credentials.IN_PROCESS)
    agents.register(m, {"agent_id": "a1", "slots": 1, "hostname": "h1"}, "10.0.0.7", caller=credentials.IN_PROCESS)
    exp = _create(m, archive, slots=2)
    scheduling.tick(m)
    [alloc] = _allocs(m)
    assert alloc["state"] == "ASSIGNED" and alloc["agent_id"] == "a0" and 29500 <= alloc["rendezvous_port"] < 30500
    orders = {a: agents.pending_actions(m, a)["start"][0] for a in ("a0", "a1")}
    for rank, a in enumerate(("a0", "a1")):
        env, info = orders[a]["env"], orders[a]["info"]
        assert env["STALWART_CONTAINER_RANK"] == env["DET_CONTAINER_RANK"] == str(rank)
        assert env["STALWART_NUM_CONTAINERS"] == "2"
        assert json.loads(env["STALWART_CONTAINER_ADDRS"]) == json.loads(env["DET_CONTAINER_ADDRS"]) == [
            "127.0.0.1", "10.0.0.7"]
        assert env["STALWART_RENDEZVOUS_PORT"] == str(alloc["rendezvous_port"])
        assert info["container_rank"] == rank and info["slot_ids"] == [0] and info["agent_id"] == a
        assert orders[a]["allocation_id"] == alloc["id"]
    lifecycle.mark_started(m, "a0", alloc["id"], 11)
    assert _allocs(m)[0]["state"] == "ASSIGNED"  # not until every container runs
    lifecycle.mark_started(m, "a1", alloc["id"], 12)
    assert _allocs(m)[0]["state"] == "RUNNING" and _allocs(m)[0]["pid"] == 11

    lifecycle.mark_exited(m, "a1", alloc["id"], 1)  # one worker dies: the chief is told to die
    assert agents.pending_actions(m, "a0") == {"start": [], "kill": [alloc["id"]]}
    assert _allocs(m)[0]["state"] == "RUNNING"
    lifecycle.mark_exited(m, "a0", alloc["id"], -9)
    ended = _allocs(m)[0]
    assert ended["state"] == "TERMINATED" and ended["exit_code"] == 1 and ended["exit_reason"] == "EXITED"
    assert _trial(m, exp)["restarts"] == 1  # one failure for the gang
    m.db.dispose()


def test_preemption_timeout_kills_and_requeues_without_counting_a_restart(tmp_path, archive):
    m = _master(tmp_path)
    agents.register(m, {"agent_id": "a0", "slots": 1}, caller=credentials.IN_PROCESS)
    exp = _create(m, archive, timeout=0)
    scheduling.tick(m)
    [alloc] = _allocs(m)
    lifecycle.mark_started(m, "a0", alloc["id"], 5)
    with m.db.begin() as conn:
        lifecycle.request_preemption(m, conn, alloc["id"])
        conn.execute(t.allocations.update().values(preempt_at=1.0))
    scheduling.tick(m)
    assert agents.pending_actions(m, "a0")["kill"] == [alloc["id"]]
    lifecycle.mark_exited(m, "a0", alloc["id"], -9)
    assert _allocs(m)[0]["exit_reason"] == "PREEMPTED"
    trial = _trial(m, exp)
    assert trial["state"] == "ACTIVE" and trial["restarts"] == 0
    scheduling.tick(m)
    assert [a["state"] for a in _allocs(m)] == ["TERMINATED", "ASSIGNED"]
    m.db.dispose()


def test_priority_preemption_from_the_master_config_and_draining(tmp_path, archive):
    m = _master(tmp_path, {"resource_manager": {"scheduler": {"priority": {"preemption": True}}}})
    agents.register(m, {"agent_id": "a0", "slots": 1}, caller=credentials.IN_PROCESS)
    low = _create(m, archive, "low", priority=60)
    scheduling.tick(m)
    [low_alloc] = _allocs(m)
    high = _create(m, archive, "high", priority=5)
    scheduling.tick(m)
    assert _allocs(m, id=low_alloc["id"])[0]["preempt_requested"] is True
    assert [j["entity_id"] for j in jobs.list_jobs(m)] == [high, low]

    agents.set_enabled(m, "a0", False, drain=True)
    lifecycle.mark_exited(m, "a0", low_alloc["id"], 0)  # it checkpointed and left
    scheduling.tick(m)
    assert all(a["state"] in ("PENDING", "TERMINATED") for a in _allocs(m))  # draining: nothing new starts
    agents.set_enabled(m, "a0", True)
    scheduling.tick(m)
    assert [j["state"] for j in jobs.list_jobs(m)] == ["SCHEDULED", "QUEUED"]
    m.db.dispose()


def test_job_updates_validate_and_unknown_pools_are_refused(tmp_path, archive):
    m = _master(tmp_path, {"resource_pools": [{"pool_name": "cpu"}, {"pool_name": "gpu"}],
                           "resource_manager": {"default_compute_resource_pool": "gpu"}})
    exp = _create(m, archive)
    [job] = jobs.list_jobs(m)
    assert job["resource_pool"] == "gpu" and job["reason"] is None
    with pytest.raises(InvalidRequest, match="priority: expected an integer from 1"):
        jobs.update_job(m, job["job_id"], {"priority": 0})
    with pytest.raises(InvalidRequest, match="weight: expected a number > 0"):
        jobs.update_job(m, job["job_id"], {"weight": -1})
    with pytest.raises(InvalidRequest, match="cannot update colour"):
        jobs.update_job(m, job["job_id"], {"colour": 1})
    with pytest.raises(ConfigError, match="unknown resource pool 'tpu'; this cluster's pools are: cpu, gpu"):
        jobs.update_job(m, job["job_id"], {"resource_pool": "tpu"})
    assert jobs.update_job(m, job["job_id"], {"resource_pool": "cpu", "max_slots": 2})["resource_pool"] == "cpu"
    with pytest.raises(ConfigError, match="resources.resource_pool: unknown resource pool 'default'"):
        experiments.create_experiment(m, CONFIG.format(name="x", slots=1, priority=42, timeout=1).replace(
            "priority: 42", "priority: 42, resource_pool: default"), archive, activate=True, owner="me")
    with pytest.raises(InvalidRequest, match="no pool 'default'"):
        agents.register(m, {"agent_id": "a0", "slots": 1}, caller=credentials.IN_PROCESS)
    assert exp
    m.db.dispose()


SEARCH = """
name: {name}
entrypoint: python3 train.py
hyperparameters: {{lr: {{type: double, minval: 0.01, maxval: 0.1}}}}
searcher: {{name: random, metric: acc, max_trials: {n}, max_concurrent_trials: {n}, max_length: {{batches: 10}}}}
checkpoint_storage: {{type: shared_fs, host_path: /tmp/unused}}
"""


def test_fair_share_pool_splits_slots_by_demand_then_by_weight_on_the_next_pass(tmp_path, archive):
    """The seed's fair-share example through the master: 8 slots, 10 and 30 trials → 2 and 6; after
    `e set weight` 3 and 1, the next pass preempts the larger one down to 4 and the smaller gets 4."""
    m = _master(tmp_path, {"resource_manager": {"scheduler": {"type": "fair_share"}}})
    agents.register(m, {"agent_id": "a0", "slots": 8}, caller=credentials.IN_PROCESS)
    small = experiments.create_experiment(m, SEARCH.format(name="small", n=10), archive, activate=True, owner="me")[0]
    large = experiments.create_experiment(m, SEARCH.format(name="large", n=30), archive, activate=True, owner="me")[0]
    scheduling.tick(m)
    scheduling.tick(m)

    def held() -> dict[int, int]:
        return {j["entity_id"]: j["slots_allocated"] for j in jobs.list_jobs(m)}

    assert held() == {small: 2, large: 6}
    for exp_id, weight in ((small, 3), (large, 1)):
        with m.db.begin() as conn:
            job_id = jobs.job_of(conn, jobs.EXPERIMENT, exp_id)["id"]
        jobs.update_job(m, job_id, {"weight": weight})
    scheduling.tick(m)
    leaving = [a for a in _allocs(m) if a["preempt_requested"]]
    assert len(leaving) == 2
    for a in leaving:
        lifecycle.mark_exited(m, "a0", a["id"], 0)  # as if they checkpointed and left
    scheduling.tick(m)
    assert held() == {small: 4, large: 4}
    m.db.dispose()
