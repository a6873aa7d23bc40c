"""The resource-manager conformance suite (`stalwart.testing.rm_conformance`) against the agent manager: the node
side is agents registered in the master's process, taking their orders from the action long-poll's answer
(`cluster.agents.pending_actions`) and reporting through `allocations.lifecycle`, as the agent routes do."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pytest

from stalwart.api.errors import ConfigError
from stalwart.config.master import parse_master_config
from stalwart.master.allocations import lifecycle
from stalwart.master.cluster import agents, credentials
from stalwart.master.queries import agents as agent_rows
from stalwart.master.scheduling import managers
from stalwart.master.scheduling.agent_manager import AgentManager
from stalwart.rm import Gang
from stalwart.testing.rm_conformance import CHECKS, World, master_config, run_check

_pids = itertools.count(100)


class AgentWorld(World):
    """Agents registered in-process (no HTTP), each with its own address."""

    def add_node(self, slots: int, pool: str = "default") -> str:
        n = len(self._nodes()) + 1
        agent_id = f"agent-{n}"
        agents.register(self.master, {"agent_id": agent_id, "slots": slots, "resource_pool": pool,
                                      "hostname": f"host{n}"}, f"10.0.0.{n}", caller=credentials.IN_PROCESS)
        return agent_id

    def _nodes(self) -> list[str]:
        with self.master.db.begin() as conn:
            return [a["id"] for a in agent_rows.every(conn)]

    def start(self, allocation_id: str, ranks: Sequence[int] | None = None) -> None:
        for c in self.status(allocation_id).containers:
            if ranks is not None and c.rank not in ranks:
                continue
            orders = agents.pending_actions(self.master, c.node)["start"]
            assert allocation_id in [o["allocation_id"] for o in orders], orders
            assert not lifecycle.mark_started(self.master, c.node, allocation_id, next(_pids)).kill

    def exit(self, allocation_id: str, code: int | None) -> None:
        for c in self.status(allocation_id).containers:
            if c.state != "TERMINATED":
                lifecycle.mark_exited(self.master, c.node, allocation_id, code)

    def lose_node(self, node: str) -> None:
        with self.master.db.begin() as conn:
            agent_rows.update(conn, node, {"last_seen": 0.0})
        self.master.started_at = 0.0  # long past the restart grace

    def kill_orders(self, allocation_id: str) -> set[str]:
        return {node for node in self._nodes() if allocation_id in agents.pending_actions(self.master, node)["kill"]}


@pytest.mark.parametrize("check", sorted(CHECKS))
def test_agent_manager_conforms(check, tmp_path):
    if (why := run_check(AgentWorld(tmp_path), check)) is not None:
        pytest.skip(why)


def test_every_pool_is_served_by_the_configured_agent_manager(tmp_path):
    world = AgentWorld(tmp_path)
    with world.master.db.begin() as conn:
        [rm] = managers.open_all(world.master, conn)
        assert isinstance(rm, AgentManager) and rm.pools() == ("default", "second")
        assert managers.for_pool(world.master, conn, "second") is not None
    world.close()


def test_runs_of_pools_no_manager_serves_stay_with_the_clusters_own_manager(tmp_path):
    """A run whose job is gone (pool `default`) or whose pool left the config still holds its slots somewhere."""
    world = AgentWorld(tmp_path, master_config(resource_pools=[{"pool_name": "gpu"}, {"pool_name": "cpu"}]))
    gangs = [Gang("a", "j", "gpu", 1), Gang("b", "j", "default", 1), Gang("c", "j", "cpu", 1)]
    with world.master.db.begin() as conn:
        first = AgentManager(world.master, conn, ["gpu"])
        second = AgentManager(world.master, conn, ["cpu"])
        split = managers.split([first, second], gangs)
    assert [[g.allocation_id for g in mine] for mine in split] == [["a", "b"], ["c"]]
    world.close()


@pytest.mark.parametrize(("kind", "message"), [
    ("pbs", "resource_manager.type: 'pbs' is not supported: OpenPBS cannot run on this project's build machines"),
    ("yarn", "resource_manager.type: expected one of agent, slurm, kubernetes, got 'yarn'"),
])
def test_other_resource_manager_types_are_refused_naming_what_is_supported(kind, message):
    with pytest.raises(ConfigError) as err:
        parse_master_config(master_config(kind))
    assert message in str(err.value)
