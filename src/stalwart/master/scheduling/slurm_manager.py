"""The Slurm resource manager: each allocation of its pools (one per partition) is one Slurm job (docs/slurm.md).

`submit` sends each PENDING gang that has no job yet to `sbatch` (`slurm_submit`). `reconcile` reads Slurm's queue
in one `squeue` per poll and brings the rows in line: a job Slurm started gets its containers (one one-shot agent
per node, agent ids `slurm-<job>-<node rank>`, placed with `placing.start_gang`, which the agents inside the job
then take from the action long-poll like any agent); a waiting job's reason is the run's pending reason; a job
that vanished, or that Slurm requeued, under a running allocation ends the run as a lost node's (re-queued from
its checkpoint, uncounted), and a requeued job is cancelled before the run is submitted again, so the two never
both run; a job whose run has ended is cancelled. Nothing is kept in memory but the time of the last poll: after
a master restart the jobs are found again through `allocations.engine_job_id`."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from stalwart.api.states import AllocationState as A, ExitReason
from stalwart.master.queries import engine_jobs
from stalwart.master.queries.rows import Conn, Row
from stalwart.master.scheduling import engine_runs, slurm_submit
from stalwart.master.service import Master, now
from stalwart.rm import Gang, PoolCapacity
from stalwart.rm.slurm import SlurmCli, SlurmError, SlurmJob
from stalwart.rm.slurm.batch import node_slots, slots_per_node

log = logging.getLogger(__name__)
RUNNING = ("RUNNING", "CONFIGURING", "COMPLETING", "STAGE_OUT", "SIGNALING", "RESIZING")
WAITING = ("PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "SUSPENDED", "RESV_DEL_HOLD")
_LAST_POLL = "slurm:last_poll"


def agent_id_of(job_id: str, rank: int) -> str:
    """The id of the one-shot agent of a job's node `rank` (the job's SLURM_NODEID)."""
    return f"slurm-{job_id}-{rank}"


class SlurmManager(engine_runs.EngineManager):
    """The Slurm manager of `pools` (partitions), opened on the master `m` inside the transaction `conn`."""

    type = "slurm"

    def __init__(self, m: Master, conn: Conn, pools: Sequence[str]) -> None:
        super().__init__(m, conn, pools)
        self.cfg = m.settings.cluster.slurm
        self.cli = SlurmCli()
        self._reasons: dict[str, str] = {}  # a poll's changed pending reasons, written at its end

    # -- the pass ---------------------------------------------------------------------------------------------------
    def submit(self, gangs: Sequence[Gang]) -> None:
        """Each PENDING gang without a job becomes one, in queue order (Slurm queues them in the order it gets
        them)."""
        waiting = [g for g in gangs if g.state == A.PENDING.value and not g.kill_requested]
        submitted = engine_jobs.submitted(self.conn, [g.allocation_id for g in waiting])  # one query a pass
        for g in sorted(waiting, key=lambda g: (g.priority, g.queue_position, g.submitted_at, g.allocation_id)):
            if g.allocation_id not in submitted:
                slurm_submit.submit(self.m, self.conn, self.cli, self.cfg, g)

    def reconcile(self) -> None:
        """One `squeue` per `poll_interval`: every job of ours against its allocation's row."""
        at = now()
        if at - self.m.engine_state.get(_LAST_POLL, 0.0) < self.cfg.poll_interval:
            return
        rows = engine_jobs.with_jobs(self.conn)
        self.m.engine_state[_LAST_POLL] = at
        try:
            jobs = {j.name: j for j in self.cli.jobs(self.cfg.job_name_prefix, self._pools)}
        except SlurmError as err:  # Slurm is away: nothing is decided on no news; the next poll tries again
            log.warning("could not read Slurm's queue: %s", err)
            return
        cancel: list[str] = []
        self._reasons = {}
        for row in rows:
            job = jobs.pop(slurm_submit.job_name(self.cfg, row["id"]), None)
            if job is not None and job.job_id != row["engine_job_id"]:
                cancel.append(job.job_id)  # a job of an earlier submission of this run
                job = None
            if self._follow(row, job):
                cancel.append(row["engine_job_id"])
        engine_jobs.set_pending_reasons(self.conn, self._reasons)  # one statement, however many changed
        cancel += self._ended_runs_jobs(list(jobs.values()))
        if cancel:
            log.info("cancelling Slurm job(s) %s: their runs have ended or were requeued", ", ".join(cancel))
            try:
                self.cli.cancel(cancel)
            except SlurmError as err:  # still in the queue at the next poll: cancelled then
                log.warning("could not cancel Slurm job(s) %s: %s", ", ".join(cancel), err)
        engine_jobs.remove_ended_one_shot_agents(self.conn)

    def _ended_runs_jobs(self, jobs: list[SlurmJob]) -> list[str]:
        """The jobs left whose runs have ended here. A job named like ours that this master never submitted is
        another master's (sharing `job_name_prefix`) and is left alone."""
        prefix = len(self.cfg.job_name_prefix)
        by_allocation = {j.name[prefix:]: j for j in jobs if j.state != "COMPLETING"}
        ours = engine_jobs.with_jobs(self.conn, list(by_allocation))
        return [by_allocation[r["id"]].job_id for r in ours if by_allocation[r["id"]].job_id == r["engine_job_id"]]

    def _follow(self, row: Row, job: SlurmJob | None) -> bool:
        """Bring one live allocation in line with its job; True when the job must be cancelled."""
        state = row["state"]
        if job is None or job.state not in RUNNING + WAITING:
            if state == A.PENDING.value:
                self._failed_before_joining(row, "ended before its agents joined")
            else:
                self._lose(row, f"Slurm job {row['engine_job_id']} ended without its agents reporting the end")
            return False
        if job.state in WAITING:
            if state == A.PENDING.value:
                reason = f"Slurm job {job.job_id}: {job.reason or 'waiting for the scheduler'}"
                if row["pending_reason"] != reason:
                    self._reasons[row["id"]] = reason
                return False
            self._lose(row, f"Slurm requeued job {job.job_id} ({job.reason or 'preempted or its node failed'}); "
                            "the trial resumes from its latest checkpoint")
            return True
        if state == A.PENDING.value:
            if row["kill_requested"]:
                return True
            self._place(row, job)
        elif state == A.ASSIGNED.value and engine_runs.join_overdue(self.conn, row, self.cfg.job_start_timeout):
            self._failed_before_joining(row, f"started, but its agents did not join within job_start_timeout "
                                             f"({self.cfg.job_start_timeout:.0f} s)")
            return True
        return False

    def _place(self, row: Row, job: SlurmJob) -> None:
        """Slurm started the job: one container per node, on the one-shot agent that will run there."""
        owner = engine_jobs.owner_of(self.conn, row["id"])
        per_node = slots_per_node(row["slots"], (owner["config"].get("slurm") or {}).get("slots_per_node"))
        shares = node_slots(row["slots"], per_node, max(1, len(job.nodes)))
        addresses = {n.name: n.address for n in self.cli.nodes()} if len(job.nodes) > 1 else {}
        nodes = [engine_runs.EngineNode(agent_id_of(job.job_id, rank), node, addresses.get(node) or None,
                                        shares[rank]) for rank, node in enumerate(job.nodes or ("?",))]
        engine_runs.place(self.m, self.conn, row, nodes, job.partition,
                          "cpu" if self.cfg.cpu_slots else self.cfg.slot_type)

    def _lose(self, row: Row, why: str) -> None:
        engine_runs.lose(self.m, self.conn, row, why)

    def _failed_before_joining(self, row: Row, what: str) -> None:
        out = slurm_submit.output_dir(self.cfg) / f"{slurm_submit.job_name(self.cfg, row['id'])}.out"
        tail = _tail(out)
        why = f"Slurm job {row['engine_job_id']} {what}" + (f"; its output ({out}) ends with:\n{tail}" if tail else "")
        engine_runs.fail(self.m, self.conn, row["id"], why, ExitReason.EXITED)

    # -- asked by the master ----------------------------------------------------------------------------------------
    def capacity(self) -> list[PoolCapacity]:
        out = {p: PoolCapacity(p, 0, 0, 0, 0) for p in self._pools}
        for node in self.cli.nodes():
            if node.state.startswith("down"):
                continue  # out of service: not a node of its pools until an admin (or Slurm) brings it back
            for part in node.partitions:
                had = out.get(part)
                if had is None:
                    continue
                total, used = ((node.cpus, node.cpus_alloc) if self.cfg.cpu_slots else (node.gpus, node.gpus_alloc))
                out[part] = PoolCapacity(part, had.nodes + 1, had.slots_total + total, had.slots_used + used,
                                         had.accepting_nodes + int(node.accepting))
        return list(out.values())



def _tail(path: object, lines: int = 15) -> str:
    try:
        with open(str(path), "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 8192))
            return "\n".join(f.read().decode(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""
