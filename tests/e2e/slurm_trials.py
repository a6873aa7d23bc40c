"""A master in front of this run's real Slurm (tests/slurm_server.py), for the Slurm end-to-end tests:
`slurm_master` (a partition, `batch` unless named, held for the test alone, no agent of the master's own) and
what they read of Slurm's queue."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import yaml

from integration.helpers import logs
from stalwart.testing import LocalTestCluster

PARTITION = "batch"


def slurm_master_config(prefix: str, partition: str = PARTITION, **rm: object) -> str:
    return yaml.safe_dump({
        "resource_manager": {"type": "slurm", "slot_type": "cpu", "user_name": "root", "poll_interval": 0.5,
                             "job_name_prefix": prefix, **rm},
        "resource_pools": [{"pool_name": partition}],
        "security": {"allow_root_tasks": True},  # its jobs run as root (user_name), as this test machine's Slurm
    })


@contextmanager
def slurm_master(slurm_cluster, tmp_path, monkeypatch, partition: str = PARTITION) -> Iterator[LocalTestCluster]:
    """A master in front of one partition of the test Slurm (held for this test alone), no agents."""
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf_path))
    prefix = f"e2e-{uuid.uuid4().hex[:8]}-"
    with slurm_cluster.exclusive(partition), LocalTestCluster(
            tmp_path / "home", agents=0, master_config=slurm_master_config(prefix, partition)) as c:
        c.slurm, c.prefix, c.partition = slurm_cluster, prefix, partition
        yield c


def our_jobs(c) -> list[dict[str, str]]:
    """This master's jobs in Slurm's queue (every state squeue shows)."""
    return [j for j in c.slurm.squeue(c.partition) if j["name"].startswith(c.prefix)]


def running_job(c) -> dict[str, str]:
    return c.wait_for(lambda: next((j for j in our_jobs(c) if j["state"] == "RUNNING"), None), timeout=60,
                      what="a RUNNING Slurm job of this master")


def failure_details(c, trial_id: int) -> str:
    return "\n".join(line["log"] for line in logs(c, trial_id))[-4000:] + c.log("master.log")[-3000:]
