"""The resource-manager conformance suite (`stalwart.testing.rm_conformance`) against the Slurm manager, on this
run's real Slurm (tests/slurm_server.py, partitions `rmconf_a` and `rmconf_b`).

The jobs are real Slurm jobs, placed by Slurm on its nodes; inside each, instead of the one-shot agent, a stand-in
command holds the node (`sleep`), and this world plays the one-shot agents in-process as the agent world plays its
agents: it takes the start orders from the action long-poll's answer (`cluster.agents.pending_actions`) and
reports through `allocations.lifecycle`. The real one-shot agent runs in tests/e2e/test_slurm_trials.py. A node
the check has not added is DOWN (Slurm counts it in no pool's capacity); losing a node is `scontrol update
state=down`, as an admin or a failing node would."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator, Sequence

import pytest

from slurm_server import PARTITIONS, _wait_idle
from stalwart.master.allocations import containers, lifecycle
from stalwart.master.cluster import agents
from stalwart.master.queries import agents as agent_rows, engine_jobs
from stalwart.master.scheduling import scheduling
from stalwart.testing.rm_conformance import CHECKS, World, master_config, run_check

_pids = itertools.count(100)
POOLS = ("rmconf_a", "rmconf_b")
STABLE_S = 1.5  # Slurm's scheduler runs every second (tests/slurm_server.py: sched_interval=1)
STANDIN = ["sh", "-c", "exec sleep 600", "--"]


class SlurmWorld(World):
    pools = POOLS
    extra_config = "slurm: {slots_per_node: 1}\n"

    def __init__(self, home, cluster) -> None:
        rm = {"type": "slurm", "slot_type": "cpu", "user_name": "root", "agent_command": STANDIN,
              "poll_interval": 0, "job_name_prefix": f"rmconf-{int(time.time() * 1000) % 10**8}-"}
        super().__init__(home, master_config("slurm", POOLS) | {"resource_manager": rm,
                                                                 "security": {"allow_root_tasks": True}})
        self.cluster = cluster
        self.free = {p: list(cluster.partitions()[p]) for p in POOLS}
        for nodes in self.free.values():
            for node in nodes:
                cluster.set_node_state(node, "down", "not added by this check")

    def add_node(self, slots: int, pool: str | None = None) -> str:
        pool = pool or POOLS[0]
        node = next(n for n in self.free[pool] if PARTITIONS[pool][n] == slots)
        self.free[pool].remove(node)
        self.cluster.set_node_state(node, "resume")
        _wait_idle(self.cluster.conf_path, [node])
        return node

    def tick(self) -> None:
        """A pass, repeated until Slurm and the rows agree and have stayed so for a while (Slurm starts jobs on
        its own schedule)."""
        deadline, last, since = time.monotonic() + 30, None, time.monotonic()
        while time.monotonic() < deadline:
            scheduling.tick(self.master)
            seen = self._snapshot()
            if seen != last:
                last, since = seen, time.monotonic()
            elif time.monotonic() - since >= STABLE_S:
                return
            time.sleep(0.25)
        raise AssertionError(f"Slurm and the master did not settle in 30 s: {last}")

    def _snapshot(self) -> tuple[object, ...]:
        with self.master.db.begin() as conn:
            rows = sorted((r["id"], r["state"], r["engine_job_id"]) for r in engine_jobs.with_jobs(conn))
        jobs = sorted((j["job_id"], j["state"]) for p in POOLS for j in self.cluster.squeue(p))
        return (tuple(rows), tuple(jobs))

    def _agents_of(self, allocation_id: str) -> Iterator[tuple[int, str]]:
        with self.master.db.begin() as conn:
            rows = containers.of_allocation(conn, allocation_id)
        for c in rows:
            yield c["container_rank"], c["agent_id"]

    def start(self, allocation_id: str, ranks: Sequence[int] | None = None) -> None:
        for rank, agent_id in self._agents_of(allocation_id):
            if ranks is not None and rank not in ranks:
                continue
            orders = agents.pending_actions(self.master, agent_id)["start"]
            assert allocation_id in [o["allocation_id"] for o in orders], orders
            assert not lifecycle.mark_started(self.master, agent_id, allocation_id, next(_pids)).kill

    def exit(self, allocation_id: str, code: int | None) -> None:
        with self.master.db.begin() as conn:
            live = [c["agent_id"] for c in containers.of_allocation(conn, allocation_id) if c["state"] != "TERMINATED"]
        for agent_id in live:
            lifecycle.mark_exited(self.master, agent_id, allocation_id, code)

    def lose_node(self, node: str) -> None:
        self.cluster.set_node_state(node, "down", "lost in a conformance check")

    def kill_orders(self, allocation_id: str) -> set[str]:
        told = set()
        for _rank, agent_id in self._agents_of(allocation_id):
            if allocation_id in agents.pending_actions(self.master, agent_id)["kill"]:
                with self.master.db.begin() as conn:
                    told.add(agent_rows.get(conn, agent_id)["hostname"])
        return told

    def close(self) -> None:
        for p in POOLS:
            for job in self.cluster.squeue(p):
                self.cluster.cancel(job["job_id"])
        super().close()


@pytest.mark.parametrize("check", sorted(CHECKS))
def test_slurm_manager_conforms(check, tmp_path, slurm_cluster, monkeypatch):
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf_path))
    with slurm_cluster.exclusive(*POOLS):
        why = run_check(SlurmWorld(tmp_path, slurm_cluster), check)
    if why is not None:
        pytest.skip(why)
