"""The one-shot agent inside a Slurm job (docs/slurm.md, "The job"): `python -m stalwart.agent.slurm_job`.

The job's script starts one per node (`srun`). It enrolls as agent `slurm-<job id>-<node rank>` with the job's
single-use join credential, which it takes out of its environment first (no task ever sees it), runs the one
allocation the master placed on it exactly as a long-lived agent would (same launcher, logs, metrics, checkpoints,
preemption), and exits once the master has its exit report. A SIGTERM from Slurm (a requeue, Slurm's own
preemption, a cancel) kills the task and reports it as a lost node's, so the run resumes from its latest
checkpoint instead of counting as a failure."""

from __future__ import annotations

import argparse
import logging
import os
import pathlib
import shutil
import signal
import sys
import threading
from types import FrameType

from stalwart.agent.daemon import Agent
from stalwart.api.models.agents import StartOrder
from stalwart.rm.slurm.batch import JOIN_TOKEN_ENV, node_slots

log = logging.getLogger("stalwart.agent")


class OneShotAgent(Agent):
    """An agent that runs one allocation and is done when the master knows how it ended."""

    busy_retry_s = 0.5  # its job may start before the master's poll has placed it: enrolling is retried soon

    def run_forever(self) -> None:
        threading.Thread(target=self._stop_when_reported, daemon=True, name="one-shot").start()
        super().run_forever()

    @property
    def done(self) -> threading.Event:
        """Set once this agent's work is over (its allocation's end reported, or nothing to do)."""
        return self._stop

    def _start(self, order: StartOrder) -> None:
        """The job already runs as the task's OS user: no switch of user is needed (nor possible without root)."""
        if order.run_as is not None and order.run_as.uid == os.geteuid():
            order = order.model_copy(update={"run_as": None})
        super()._start(order)

    def _stop_when_reported(self) -> None:
        while not self._stop.wait(0.2):
            with self._lock:
                ended = bool(self.procs) and all(p.exit_code is not None for p in self.procs.values())
            if ended and not self.outbox.undelivered_exits():
                log.info("the allocation has ended and the master knows; this one-shot agent exits")
                self._stop.set()

    def relinquish(self) -> None:
        """Slurm takes the node back (SIGTERM): the task is killed and its end reported as a lost node's."""
        with self._lock:
            live = [p for p in self.procs.values() if p.exit_code is None]
        log.warning("Slurm is ending this job (requeue, preemption or cancel): stopping %d task(s); the run "
                    "resumes from its latest checkpoint", len(live))
        for p in live:
            p.fenced = True
            p.kill()
        if not live:
            self._stop.set()


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m stalwart.agent.slurm_job", description=__doc__)
    p.add_argument("--master", required=True)
    p.add_argument("--allocation", required=True)
    p.add_argument("--resource-pool", required=True)
    p.add_argument("--slots", type=int, required=True)
    p.add_argument("--slots-per-node", type=int, required=True)
    p.add_argument("--slot-type", default="cuda")
    p.add_argument("--runtime", default="process")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    token = os.environ.pop(JOIN_TOKEN_ENV, None)
    job_id, rank = os.environ.get("SLURM_JOB_ID"), int(os.environ.get("SLURM_NODEID") or 0)
    if not token or not job_id:
        print(f"stalwart one-shot agent: {JOIN_TOKEN_ENV} and SLURM_JOB_ID must be set; it runs only inside a "
              "Slurm job that the Stalwart master submitted", file=sys.stderr)
        return 2
    nodes = int(os.environ.get("SLURM_JOB_NUM_NODES") or 1)
    slots = node_slots(args.slots, args.slots_per_node, nodes)[min(rank, nodes - 1)]
    agent_id = f"slurm-{job_id}-{rank}"
    # the allocation's id, not the job's: two Slurm clusters on one host number their jobs alike
    work_root = pathlib.Path(os.environ.get("TMPDIR") or "/tmp") / f"stalwart-{args.allocation}-{rank}"
    agent = OneShotAgent(args.master, token, work_root, agent_id=agent_id, slots=slots,
                         slot_type="cpu" if args.slot_type == "cpu" else args.slot_type,
                         resource_pool=args.resource_pool, runtime=args.runtime)

    def on_term(_sig: int, _frame: FrameType | None) -> None:
        threading.Thread(target=agent.relinquish, daemon=True).start()

    signal.signal(signal.SIGTERM, on_term)
    failed: list[BaseException] = []

    def run() -> None:
        try:
            agent.run_forever()
        except Exception as err:  # refused for good (e.g. a spent join credential): the job ends with it
            failed.append(err)
            log.error("the one-shot agent cannot run: %s", err)

    loop = threading.Thread(target=run, daemon=True, name="agent")
    loop.start()
    try:
        while not agent.done.wait(0.5) and loop.is_alive():  # not on the action long-poll: out as soon as done
            pass
    finally:
        shutil.rmtree(work_root, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
