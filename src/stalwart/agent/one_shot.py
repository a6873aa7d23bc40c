"""The one-shot agent an engine's job runs (a Slurm job's nodes: `stalwart.agent.slurm_job`; a Kubernetes pod:
`stalwart.agent.pod`): it enrolls with the job's single-use join credential, which it takes out of its environment
first (no task ever sees it), runs the one allocation the master placed on it exactly as a long-lived agent would
(same launcher, logs, metrics, checkpoints, preemption), and exits once the master has its exit report. A SIGTERM
from the engine (a requeue, the engine's own preemption, an eviction, a cancel) kills the task and reports it as a
lost node's, so the run resumes from its latest checkpoint instead of counting as a failure."""

from __future__ import annotations

import argparse
import logging
import os
import pathlib
import shutil
import signal
import threading
from types import FrameType

from stalwart.agent.daemon import Agent
from stalwart.api.models.agents import StartOrder

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
        """The engine takes the node back (SIGTERM): the task is killed and its end reported as a lost node's."""
        with self._lock:
            live = [p for p in self.procs.values() if p.exit_code is None]
        log.warning("the engine is ending this job (requeue, preemption, eviction or cancel): stopping %d task(s); "
                    "the run resumes from its latest checkpoint", len(live))
        for p in live:
            p.fenced = True
            p.kill()
        if not live:
            self._stop.set()


def run(agent: OneShotAgent, work_root: pathlib.Path) -> int:
    """Run `agent` until its work is over (SIGTERM: relinquished); its work directory is removed at the end. The
    exit status: 1 when it could not run at all (e.g. a spent join credential), else 0."""

    def on_term(_sig: int, _frame: FrameType | None) -> None:
        threading.Thread(target=agent.relinquish, daemon=True).start()

    signal.signal(signal.SIGTERM, on_term)
    failed: list[BaseException] = []

    def loop() -> None:
        try:
            agent.run_forever()
        except Exception as err:  # refused for good (e.g. a spent join credential): the job ends with it
            failed.append(err)
            log.error("the one-shot agent cannot run: %s", err)

    thread = threading.Thread(target=loop, daemon=True, name="agent")
    thread.start()
    try:
        while not agent.done.wait(0.5) and thread.is_alive():  # not on the action long-poll: out as soon as done
            pass
    finally:
        shutil.rmtree(work_root, ignore_errors=True)
    return 1 if failed else 0


def take_join_token(name: str) -> str | None:
    """The join credential from the environment, removed from it (the task started later never sees it)."""
    return os.environ.pop(name, None)


def arguments(prog: str, description: str | None) -> argparse.ArgumentParser:
    """The arguments every one-shot agent takes: where the master is, which allocation, its pool, its slots."""
    p = argparse.ArgumentParser(prog=prog, description=description)
    p.add_argument("--master", required=True)
    p.add_argument("--allocation", required=True)
    p.add_argument("--resource-pool", required=True)
    p.add_argument("--slots", type=int, required=True)
    p.add_argument("--slot-type", default="cuda")
    p.add_argument("--runtime", default="process")
    return p
