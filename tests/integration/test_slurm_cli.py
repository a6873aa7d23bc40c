"""`SlurmCli` against a real Slurm (tests/slurm_server.py): submit, the queue, cancel, ended jobs, nodes,
partitions, and the errors a bad argument or a missing tool give."""

from __future__ import annotations

import grp
import os
import pathlib
import pwd
import shutil
import tempfile
import uuid
from collections.abc import Callable

import pytest

from slurm_server import DEFAULT_PARTITION, PARTITIONS, wait_for
from stalwart.rm.slurm import SlurmCli, SlurmError, SlurmJob

pytestmark = pytest.mark.integration


def one_job(cli: SlurmCli, prefix: str, state: str) -> Callable[[], SlurmJob | None]:
    def probe() -> SlurmJob | None:
        jobs = [job for job in cli.jobs(prefix) if job.state == state]
        return jobs[0] if jobs else None

    return probe


@pytest.fixture
def batch(slurm_cluster):
    with slurm_cluster.exclusive("batch") as cluster:
        yield cluster


def test_submit_runs_with_its_environment_and_output(batch, tmp_path):
    cli, prefix = SlurmCli(batch.env), f"st-{uuid.uuid4().hex[:8]}-"
    out = tmp_path / "out-%j.txt"
    script = "#!/bin/sh\necho token=$STALWART_TEST_TOKEN node=$SLURMD_NODENAME\nsleep 30\n"
    job_id = cli.submit(["-J", prefix + "run", "-p", "batch", "-c", "2", "-o", str(out)], script,
                        env={"STALWART_TEST_TOKEN": "abc123"})
    assert job_id.isdigit()
    running = wait_for("the job RUNNING", one_job(cli, prefix, "RUNNING"))
    assert isinstance(running, SlurmJob)
    assert (running.job_id, running.name, running.partition, running.reason) == (job_id, prefix + "run", "batch", None)
    assert running.user == "root" and len(running.nodes) == 1 and running.nodes[0] in ("b1", "b2")
    written = pathlib.Path(str(out).replace("%j", job_id))
    wait_for("the job's output", lambda: written.exists() and "token=" in written.read_text())
    assert written.read_text().strip() == f"token=abc123 node={running.nodes[0]}"
    assert "STALWART_TEST_TOKEN" not in os.environ  # reached the job through sbatch's environment only

    node = {n.name: n for n in cli.nodes()}[running.nodes[0]]
    assert (node.cpus, node.cpus_alloc, node.state, node.accepting) == (2, 2, "allocated", True)
    assert (node.gpus, node.gpus_alloc, node.partitions, node.address) == (0, 0, ("batch",), "127.0.0.1")

    cli.cancel([job_id])
    ended = wait_for("the job CANCELLED", lambda: (j := cli.job(job_id)) is not None and j.state == "CANCELLED" and j)
    assert isinstance(ended, SlurmJob) and ended.name == prefix + "run" and ended.nodes == running.nodes
    assert cli.jobs(prefix) == [] or all(job.state == "COMPLETING" for job in cli.jobs(prefix))
    cli.cancel([job_id])  # already gone: no error
    cli.cancel([])


def test_pending_job_shows_its_reason(batch):
    cli, prefix = SlurmCli(batch.env), f"st-{uuid.uuid4().hex[:8]}-"
    script = "#!/bin/sh\nsleep 60\n"
    first = [cli.submit(["-J", f"{prefix}fill{i}", "-c", "2", "-o", "/dev/null"], script) for i in range(2)]
    wait_for("both batch nodes full", lambda: len([j for j in cli.jobs(prefix) if j.state == "RUNNING"]) == 2)
    waiting = cli.submit(["-J", prefix + "wait", "-c", "1", "-o", "/dev/null"], script)
    pending = wait_for("a reason for the pending job",
                       lambda: next((j for j in cli.jobs(prefix) if j.job_id == waiting and j.reason), None))
    assert isinstance(pending, SlurmJob)
    assert (pending.state, pending.nodes) == ("PENDING", ())
    assert pending.reason in ("Resources", "Priority")
    assert {j.job_id for j in cli.jobs(prefix)} == {*first, waiting}
    assert cli.jobs(prefix + "nothing") == []
    assert {n.name: n.cpus_alloc for n in cli.nodes() if "batch" in n.partitions} == {"b1": 2, "b2": 2}
    cli.cancel([*first, waiting])
    wait_for("all cancelled", lambda: all((j := cli.job(i)) is None or j.state == "CANCELLED"
                                          for i in [*first, waiting]))


def test_submit_as_another_user(batch):
    cli, prefix = SlurmCli(batch.env), f"st-{uuid.uuid4().hex[:8]}-"
    shared = pathlib.Path(tempfile.mkdtemp(prefix="stalwart-slurm-uid-"))  # the user must write its output here
    try:
        shared.chmod(0o1777)
        job_id = cli.submit(["-J", prefix + "uid", "-o", f"{shared}/out-%j.txt", "-D", str(shared)],
                            "#!/bin/sh\nid -un; id -gn; pwd\n", as_uid="nobody")
        ended = wait_for("the job COMPLETED",
                         lambda: (j := cli.job(job_id)) is not None and j.state == "COMPLETED" and j)
        assert isinstance(ended, SlurmJob) and ended.user == "nobody"
        group = grp.getgrgid(pwd.getpwnam("nobody").pw_gid).gr_name
        assert (shared / f"out-{job_id}.txt").read_text().split() == ["nobody", group, str(shared)]
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def test_nodes_and_partitions(slurm_cluster):
    cli = SlurmCli(slurm_cluster.env)
    assert cli.partitions() == [DEFAULT_PARTITION, *(p for p in PARTITIONS if p != DEFAULT_PARTITION)]
    nodes = {n.name: n for n in cli.nodes()}
    assert {name: n.cpus for name, n in nodes.items()} == {n: cpus for part in PARTITIONS.values()
                                                          for n, cpus in part.items()}
    assert nodes["cb1"].partitions == ("rmconf_b",)
    assert cli.job("999999999") is None


def test_bad_sbatch_argument_is_a_clear_error(slurm_cluster):
    cli = SlurmCli(slurm_cluster.env)
    with pytest.raises(SlurmError) as err:
        cli.submit(["-p", "no_such_partition"], "#!/bin/sh\ntrue\n")
    message = str(err.value)
    assert "`sbatch --parsable -p no_such_partition` exited with status 1" in message
    assert "invalid partition" in message.lower()
    assert "SLURM_CONF" in message


def test_missing_tool_is_a_clear_error(slurm_cluster, tmp_path):
    cli = SlurmCli({**slurm_cluster.env, "PATH": str(tmp_path)})
    os.environ["PATH"], saved = str(tmp_path), os.environ["PATH"]  # subprocess looks a tool up on this PATH
    try:
        with pytest.raises(SlurmError, match=r"`squeue -h -a -o .*` could not run: squeue is not on PATH"):
            cli.jobs("x")
    finally:
        os.environ["PATH"] = saved
    unreachable = SlurmCli({"SLURM_CONF": str(tmp_path / "absent.conf")}, timeout_s=3)
    with pytest.raises(SlurmError, match=r"`scontrol show partition -o` (exited with status 1|did not finish)") as err:
        unreachable.partitions()  # without a slurm.conf the tools look for one in DNS and may hang there
    assert "pointing at a running slurmctld" in str(err.value)
