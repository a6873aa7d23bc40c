"""A real master (its own process, over HTTP) whose agents are the test: each `OrderTaker` enrolls with the
cluster token as an agent of some pool and slot type, and takes the start orders the master sends it, without
running them, so a test can read every byte of what an agent gets (issue 28's container orders)."""

from __future__ import annotations

import base64
import pathlib
import time
from typing import Any

from stalwart.api.models.agents import StartOrder
from stalwart.client import Client
from stalwart.context import pack_context
from stalwart.testing import LocalTestCluster

BASE_CONFIG = """name: {name}
entrypoint: python3 train.py
searcher: {{name: single, metric: loss, max_length: {{batches: 1}}}}
max_restarts: 3
"""


def context_of(home: pathlib.Path) -> str:
    """A context with a train.py that never runs (the test is the agent)."""
    ctx = home / "ctx"
    ctx.mkdir(parents=True, exist_ok=True)
    (ctx / "train.py").write_text("print('never runs: the agent is the test')\n")
    return base64.b64encode(pack_context(ctx).data).decode()


class OrderTaker:
    """An agent that only takes its start orders (and reports what a test tells it to)."""

    def __init__(self, cluster: LocalTestCluster, agent_id: str, *, pool: str, slot_type: str, slots: int = 8) -> None:
        self.agent_id = agent_id
        self.client = Client(cluster.url, cluster_token=cluster.cluster_token())
        reply = self.client.register_agent(agent_id, slots=slots, resource_pool=pool, slot_type=slot_type)
        assert reply.credential, "the agent did not enroll"
        self.client.use_agent_credential(reply.credential)
        self.taken: dict[str, StartOrder] = {}

    def poll(self, wait_s: float = 1.0) -> None:
        """Ask the master for its orders once (the master builds start orders when its agent asks)."""
        for order in self.client.agent_actions(self.agent_id, wait_s=wait_s, known=list(self.taken)).start:
            self.taken[order.allocation_id] = order

    def order(self, *, trial_id: int | None = None, task_id: str | None = None, timeout: float = 60) -> StartOrder:
        """The start order of `trial_id`'s run (or of the task `task_id`, e.g. command-3), waiting for it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.poll()
            for order in self.taken.values():
                if (trial_id is not None and order.trial_id == trial_id) or (
                        task_id is not None and order.info.get("task_id") == task_id):
                    return order
        raise AssertionError(f"{self.agent_id} got no start order for trial {trial_id} / task {task_id}")

    def log(self, order: StartOrder, text: str) -> None:
        """A line of the run's output, as the agent ships it."""
        self.client.ship_logs([{"allocation_id": order.allocation_id, "trial_id": order.trial_id,
                                "agent_id": self.agent_id, "rank_id": 0, "stdtype": "stderr", "source": "agent",
                                "lines": [[time.time(), text]]}])

    def close(self) -> None:
        self.client.close()


def first_trial(cluster: LocalTestCluster, exp_id: int) -> int:
    """The id of the experiment's first trial, once it has one."""
    client = cluster.client()
    trials = cluster.wait_for(lambda: client.get_experiment(exp_id).trials, what=f"experiment {exp_id}'s trial")
    return int(trials[0].id)


def create(cluster: LocalTestCluster, config: str, context: str, **kw: Any) -> int:
    """Create an experiment as the admin; its id."""
    created = cluster.client().create_experiment(config, context, **kw).experiment
    assert created is not None
    return int(created.id)
