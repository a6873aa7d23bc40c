"""The resource-manager conformance suite: what every `stalwart.rm.ResourceManager` (agent, Slurm, Kubernetes, ...)
must do, run through a real master (SQLite) so that what the nodes report goes the way it goes in production:
through `allocations.lifecycle`.

An implementation supplies a `World`: the master (with pools `default` and `second` served by its manager) and the
node side of its engine (add a node, make its containers start or exit, lose it, see the kill orders). A test
module runs every entry of `CHECKS` on a fresh world (tests/unit/master/test_rm_conformance_agent.py):

    @pytest.mark.parametrize("check", sorted(CHECKS))
    def test_conformance(check, tmp_path):
        if (why := run_check(MyWorld(tmp_path), check)) is not None:
            pytest.skip(why)

A check that does not apply to an implementation raises `NotApplicable` (`run_check` gives its reason back).
"""

from __future__ import annotations

import pathlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from stalwart.config.master import parse_master_config
from stalwart.context import pack_context
from stalwart.master.experiments import experiments, intake
from stalwart.master.queries import runs, trials as trial_rows
from stalwart.master.scheduling import jobs, managers, scheduling
from stalwart.master.service import Master
from stalwart.master.settings import MasterSettings
from stalwart.rm import ResourceManager, RunStatus

POOLS = ("default", "second")
CONFIG = """
name: rm-conformance-{n}
entrypoint: python3 train.py
hyperparameters: {{lr: 0.1}}
searcher: {{name: single, metric: acc, max_length: {{batches: 10}}}}
resources: {{slots_per_trial: {slots}, priority: {priority}, resource_pool: {pool}}}
max_restarts: 3
checkpoint_storage: {{type: shared_fs, host_path: /tmp/unused}}
"""


class NotApplicable(Exception):
    """This check does not apply to this kind of manager (the message says why)."""


def master_config(rm_type: str = "agent", pools: Sequence[str] = POOLS, **extra: Any) -> dict[str, Any]:
    """A master config with the suite's two pools under `rm_type` (`extra` keys replace or add sections)."""
    return {"resource_manager": {"type": rm_type}, "resource_pools": [{"pool_name": p} for p in pools]} | extra


class World(ABC):
    """A master whose pools one manager serves, and that manager's node side. `pools`: the first is where runs
    go unless a check names the other (an engine may not allow the names `default`, as Slurm does not);
    `extra_config`: experiment config lines every run gets (Slurm: one slot per node, so gangs span nodes)."""

    pools: tuple[str, str] = POOLS
    extra_config: str = ""

    def __init__(self, home: pathlib.Path, config: dict[str, Any] | None = None) -> None:
        cfg = parse_master_config(config or master_config())
        self.master = Master(MasterSettings(db_url=f"sqlite:///{home / 'm.db'}", home=home, cluster=cfg))
        ctx = home / "ctx"
        ctx.mkdir(exist_ok=True)
        (ctx / "train.py").write_text("print('x')\n")
        self.archive = pack_context(ctx).data
        self._made = 0

    # -- the node side: each implementation's --------------------------------------------------------------------
    @abstractmethod
    def add_node(self, slots: int, pool: str = "default") -> str:
        """A node with `slots` slots joins `pool`; its id (what `NodeContainer.node` names)."""

    @abstractmethod
    def start(self, allocation_id: str, ranks: Sequence[int] | None = None) -> None:
        """The containers of these ranks (all: None) take their start orders and report that they run."""

    @abstractmethod
    def exit(self, allocation_id: str, code: int | None) -> None:
        """Every live container of the run reports its exit with `code`."""

    @abstractmethod
    def lose_node(self, node: str) -> None:
        """The node is gone without a word; the next pass's `reconcile` is what notices."""

    @abstractmethod
    def kill_orders(self, allocation_id: str) -> set[str]:
        """The nodes that were told to kill the run's containers (since the last call)."""

    # -- the master side: the same for every implementation --------------------------------------------------------
    def create(self, slots: int = 1, priority: int = 42, pool: str | None = None) -> int:
        """An active single-trial experiment; its id."""
        self._made += 1
        text = CONFIG.format(n=self._made, slots=slots, priority=priority, pool=pool or self.pools[0])
        text += self.extra_config
        exp_id = experiments.create_experiment(self.master, text, self.archive, activate=True, owner="conformance")[0]
        assert exp_id is not None
        return exp_id

    def tick(self) -> None:
        scheduling.tick(self.master)

    @contextmanager
    def manager(self, pool: str | None = None) -> Iterator[ResourceManager]:
        """The manager of `pool` (the first pool), open in one transaction."""
        with self.master.db.begin() as conn:
            yield managers.for_pool(self.master, conn, pool or self.pools[0])

    def status(self, allocation_id: str) -> RunStatus:
        with self.manager() as rm:
            return rm.status(allocation_id)

    def runs_of(self, exp_id: int) -> list[str]:
        """The allocation ids of the experiment's trial, oldest first."""
        trial = self.trial(exp_id)
        with self.master.db.begin() as conn:
            return [a["id"] for a in runs.of_trial(conn, trial["id"])]

    def trial(self, exp_id: int) -> dict[str, Any]:
        with self.master.db.begin() as conn:
            return dict(trial_rows.of_experiment(conn, exp_id)[0])

    def yield_to_preemption(self, allocation_id: str) -> None:
        """The trial saw its preemption signal (as `core`'s long-poll does), checkpointed and exited 0."""
        intake.ack_preemption(self.master, allocation_id)
        self.exit(allocation_id, 0)

    def close(self) -> None:
        self.master.db.dispose()


def _placed(world: World, exp_id: int) -> RunStatus:
    """The experiment's newest run, which must be placed (its containers named)."""
    status = world.status(world.runs_of(exp_id)[-1])
    assert status.state in ("ASSIGNED", "RUNNING") and status.containers, status
    return status


def check_start(world: World) -> None:
    """A one-slot run is placed on a node with an address, and RUNNING once its container reports so."""
    node = world.add_node(1)
    exp = world.create(1)
    world.tick()
    status = _placed(world, exp)
    [c] = status.containers
    assert (c.rank, c.node, len(c.slot_ids)) == (0, node, 1) and c.address, c
    world.start(status.allocation_id)
    assert world.status(status.allocation_id).state == "RUNNING"


def check_gang(world: World) -> None:
    """A two-slot run on two one-slot nodes is one gang: both containers or none, ranks in order, RUNNING only when
    both run; a run too large for the pool waits, holding nothing, with a reason."""
    nodes = {world.add_node(1), world.add_node(1)}
    exp = world.create(2)
    too_big = world.create(3)
    world.tick()
    status = _placed(world, exp)
    assert [c.rank for c in status.containers] == [0, 1] and {c.node for c in status.containers} == nodes
    assert len(status.addresses) == 2 and all(status.addresses)
    waiting = world.status(world.runs_of(too_big)[-1])
    assert waiting.state == "PENDING" and not waiting.containers and waiting.pending_reason, waiting
    world.start(status.allocation_id, ranks=[0])
    assert world.status(status.allocation_id).state == "ASSIGNED"  # not until every container runs
    world.start(status.allocation_id, ranks=[1])
    assert world.status(status.allocation_id).state == "RUNNING"


def check_preempt_and_resume(world: World) -> None:
    """`preempt` asks the run to checkpoint; its exit is a preemption, uncounted, and the trial runs again."""
    world.add_node(1)
    exp = world.create(1)
    world.tick()
    first = _placed(world, exp).allocation_id
    world.start(first)
    with world.manager() as rm:
        rm.preempt(first)
    assert world.status(first).preempt_requested
    world.yield_to_preemption(first)
    ended = world.status(first)
    assert (ended.state, ended.exit_reason) == ("TERMINATED", "PREEMPTED"), ended
    world.tick()
    again = _placed(world, exp)
    assert again.allocation_id != first
    trial = world.trial(exp)
    assert trial["state"] == "ACTIVE" and trial["restarts"] == 0


def check_kill(world: World) -> None:
    """`kill` reaches every node of the gang; the run ends KILLED when they are gone."""
    nodes = {world.add_node(1), world.add_node(1)}
    exp = world.create(2)
    world.tick()
    run = _placed(world, exp).allocation_id
    world.start(run)
    with world.manager() as rm:
        rm.kill(run)
    assert world.status(run).kill_requested
    assert world.kill_orders(run) == nodes
    world.exit(run, -9)
    ended = world.status(run)
    assert (ended.state, ended.exit_reason) == ("TERMINATED", "KILLED"), ended


def check_lost_node(world: World) -> None:
    """A node lost under a running trial ends the run as a lost node's (not a failure); the trial runs again on
    a node that is still there."""
    world.add_node(1)
    world.add_node(1)
    exp = world.create(1)
    world.tick()
    first = _placed(world, exp)
    world.start(first.allocation_id)
    world.lose_node(first.containers[0].node)
    world.tick()
    ended = world.status(first.allocation_id)
    assert (ended.state, ended.exit_reason) == ("TERMINATED", "AGENT_LOST"), ended
    again = _placed(world, exp)
    assert again.containers[0].node != first.containers[0].node, (first, again)
    assert world.trial(exp)["restarts"] == 0


def check_capacity(world: World) -> None:
    """Each pool's nodes and slots, and the slots a placed run takes, per pool."""
    first, second = world.pools
    world.add_node(2)
    world.add_node(1)
    world.add_node(4, pool=second)
    with world.manager() as rm:
        before = {c.pool: c for c in rm.capacity()}
    assert set(world.pools) <= set(before)
    assert (before[first].nodes, before[first].slots_total, before[first].slots_free) == (2, 3, 3), before
    assert (before[second].nodes, before[second].slots_total, before[second].accepting_nodes) == (1, 4, 1), before
    world.create(2)
    world.tick()
    with world.manager(second) as rm:
        after = {c.pool: c for c in rm.capacity()}
    assert (after[first].slots_used, after[first].slots_free) == (2, 1)
    assert after[second].slots_used == 0


def check_queue_info(world: World) -> None:
    """The queue lists live runs in queue order with their states; a run that cannot start says why, and `job
    list` shows that reason."""
    world.add_node(1)
    urgent = world.create(1, priority=10)
    later = world.create(1, priority=50)
    impossible = world.create(2, priority=50)
    world.tick()
    with world.manager() as rm:
        queue = rm.queue()
    ids = {world.runs_of(e)[-1]: e for e in (urgent, later, impossible)}
    assert [ids[q.allocation_id] for q in queue] == [urgent, later, impossible]
    assert [q.state for q in queue][1:] == ["PENDING", "PENDING"] and queue[0].state in ("ASSIGNED", "RUNNING")
    assert queue[2].reason and all(q.pool == world.pools[0] for q in queue)
    shown = {j["entity_id"]: j for j in jobs.list_jobs(world.master)}
    assert shown[impossible]["reason"] == queue[2].reason and shown[urgent]["state"] == "SCHEDULED"


CHECKS: dict[str, Callable[[World], None]] = {
    "start": check_start,
    "gang": check_gang,
    "preempt_and_resume": check_preempt_and_resume,
    "kill": check_kill,
    "lost_node": check_lost_node,
    "capacity": check_capacity,
    "queue_info": check_queue_info,
}



def run_check(world: World, name: str) -> str | None:
    """Run the check `name` on `world` and close the world; the reason it does not apply (None: it ran)."""
    try:
        CHECKS[name](world)
    except NotApplicable as why:
        return str(why)
    finally:
        world.close()
    return None


__all__ = ["CHECKS", "POOLS", "NotApplicable", "World", "master_config", "run_check"]
