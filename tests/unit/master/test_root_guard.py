"""A run whose OS user is root starts only where the master config allows root tasks (issue 25, hole 6), driven
directly against a real SQLite database: the start order an agent polls for is refused in a pool that does not
allow root (the run fails with the reason in its log) and delivered in one whose `allow_root_tasks` is true."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from stalwart.config.master import parse_master_config
from stalwart.db import tables as t
from stalwart.master.cluster import agents, credentials
from stalwart.master.scheduling import scheduling
from stalwart.master.service import Master
from stalwart.master.settings import MasterSettings
from stalwart.master.tasks import commands


@pytest.fixture
def m(tmp_path) -> Iterator[Master]:
    cluster = parse_master_config({"resource_pools": [{"pool_name": "default"},
                                                      {"pool_name": "trusted", "allow_root_tasks": True}]})
    master = Master(MasterSettings(db_url=f"sqlite:///{tmp_path / 'm.db'}", home=tmp_path, cluster=cluster))
    agents.register(master, {"agent_id": "a0", "slots": 1, "resource_pool": "default"}, peer="127.0.0.1",
                    caller=credentials.IN_PROCESS)
    agents.register(master, {"agent_id": "a1", "slots": 1, "resource_pool": "trusted"}, peer="127.0.0.1",
                    caller=credentials.IN_PROCESS)
    with master.db.begin() as conn:  # a root default made before the rule (links made now are checked)
        conn.execute(t.workspaces.update().where(t.workspaces.c.id == 1).values(
            agent_uid=0, agent_gid=0, agent_user="root", agent_group="root"))
    yield master
    master.db.dispose()


def _allocation(m: Master, cmd_id: int) -> dict:
    with m.db.begin() as conn:
        row = conn.execute(sa.select(t.allocations).where(t.allocations.c.command_id == cmd_id)).mappings().one()
        return dict(row)


def _logs(m: Master, allocation_id: str) -> list[str]:
    with m.db.begin() as conn:
        return list(conn.execute(sa.select(t.task_logs.c.log).where(t.task_logs.c.allocation_id == allocation_id))
                    .scalars())


def test_a_root_run_is_refused_where_root_is_not_allowed(m: Master) -> None:
    cmd_id = commands.create_command(m, {"entrypoint": ["true"]}, None, "ann")
    scheduling.tick(m)
    assert _allocation(m, cmd_id)["agent_id"] == "a0"
    assert agents.pending_actions(m, "a0") == {"start": [], "kill": []}
    alloc = _allocation(m, cmd_id)
    assert (alloc["state"], alloc["exit_code"]) == ("TERMINATED", 1)
    (line,) = _logs(m, alloc["id"])
    assert "refused to start this task as OS user root (uid 0, gid 0)" in line
    assert "resource pool default" in line and "allow_root_tasks" in line
    assert agents.pending_actions(m, "a0") == {"start": [], "kill": []}  # nothing more to start or kill


def test_a_pool_that_allows_root_gets_the_start_order(m: Master) -> None:
    cmd_id = commands.create_command(m, {"entrypoint": ["true"], "resources": {"resource_pool": "trusted"}}, None,
                                     "ann")
    scheduling.tick(m)
    (order,) = agents.pending_actions(m, "a1")["start"]
    assert order["run_as"] == {"uid": 0, "gid": 0, "user": "root", "group": "root"}
    assert _allocation(m, cmd_id)["state"] == "ASSIGNED"
