"""The agent's main loop: enroll or register, poll for actions, start and kill trials through its launcher
(`agent/launchers/`); outlive master restarts. The cluster token only enrolls: the agent then presents its own
credential (`agent/credential.py`)."""

from __future__ import annotations

import logging
import pathlib
import socket
import sys
import threading
import time
from collections.abc import Sequence

from stalwart.agent import credential, harness_bundle, os_users
from stalwart.agent.fencing import AgentLock, Lease
from stalwart.agent.launchers import LAUNCHERS, LaunchError
from stalwart.agent.log_buffer import DEFAULT_BLOCK_TIMEOUT, DEFAULT_MAX_BYTES
from stalwart.agent.outbox import AllocationExited, AllocationStarted, LogShipper, Outbox
from stalwart.agent.process import TrialProcess
from stalwart.agent.slots import threads_per_slot
from stalwart.agent.workdirs import WorkDirSweeper
from stalwart.api.errors import InvalidRequest, InvalidStateError, MasterUnavailable, StalwartError
from stalwart.api.models.agents import StartOrder
from stalwart.client import Client
from stalwart.config.agent import DEFAULT_TASK_ENV_PASSTHROUGH

log = logging.getLogger("stalwart.agent")


class Agent:
    busy_retry_s = 5.0  # the wait before registering again when the master says "not now" (a conflict, a 5xx)

    def __init__(self, master_url: str, cluster_token: str | None, work_root: pathlib.Path, *,
                 agent_id: str | None = None,
                 slots: int = 1, slot_type: str = "cpu", resource_pool: str = "default",
                 poll_timeout: float = 20.0, log_buffer_bytes: int = DEFAULT_MAX_BYTES,
                 log_block_timeout: float = DEFAULT_BLOCK_TIMEOUT, keep_work_dirs: int = 0,
                 task_env_passthrough: Sequence[str] = DEFAULT_TASK_ENV_PASSTHROUGH, runtime: str = "process",
                 engine_url: str | None = None) -> None:
        self.agent_id = agent_id or socket.gethostname()
        self.client = Client(master_url, cluster_token=cluster_token, timeout=poll_timeout + 15)
        self.cluster_token = cluster_token
        self.task_env_passthrough = tuple(task_env_passthrough)  # what tasks get of this agent's env
        self.credential: credential.Stored | None = None  # this agent's own, once found or given
        self.work_root = pathlib.Path(work_root)
        # how it runs allocations (agent/launchers); a container runtime's engine at engine_url (None: its default)
        self.launcher = LAUNCHERS[runtime](self.work_root, self.agent_id, engine_url=engine_url)
        self.slots, self.slot_type, self.resource_pool = slots, slot_type, resource_pool
        self.poll_timeout = poll_timeout
        self.procs: dict[str, TrialProcess] = {}
        self._lock = threading.Lock()
        self.shipper = LogShipper(self.client, self.agent_id, max_bytes=log_buffer_bytes,
                                  block_timeout=log_block_timeout)
        self.outbox = Outbox(self.client)
        self.lock = AgentLock(self.work_root, self.agent_id)
        self.lease = Lease()
        self._stop = threading.Event()
        self.workdirs = WorkDirSweeper(self.work_root, keep_work_dirs, live=self._running,
                                       unreported=self._undelivered_exits)

    # -- registration -------------------------------------------------------------------
    def _register(self) -> None:
        delay = 0.5
        while not self._stop.is_set():
            with self._lock:
                running = [a for a, p in self.procs.items() if p.exit_code is None]
            # An exit the master has not been told of yet (it happened while the master was away) still counts
            # as running here: the master would otherwise read the missing allocation as lost with its agent,
            # and the queued exit report, with the real exit code, would arrive too late to count.
            running += [a for a in self._undelivered_exits() if a not in running]
            sent_at = time.monotonic()
            try:
                self._present_credential()
                reply = self.client.register_agent(
                    self.agent_id, hostname=socket.gethostname(), slots=self.slots, slot_type=self.slot_type,
                    resource_pool=self.resource_pool, running_allocations=running,
                    incarnation=self.lock.incarnation, replaces=self.lock.previous)
            except MasterUnavailable as err:
                log.warning("%s; retrying in %.1f s", err, delay)
                self._stop.wait(delay)
                delay = min(delay * 2, 1.0)  # back as soon as the master is: its lease is running
                continue
            except StalwartError as err:
                if err.http_status < 500 and not isinstance(err, InvalidStateError):
                    raise  # refused for good (a bad token, an unknown pool): the agent cannot run
                # a server error (its database restarts), or another live agent holds this id: wait
                log.error("%s; retrying in %.1f s", err, self.busy_retry_s)
                self._stop.wait(self.busy_retry_s)
                continue
            if reply.credential:
                self._keep_credential(reply.cluster_id, reply.credential)
            self.lease.set_timeout(reply.agent_timeout)
            self.lease.renew(sent_at)
            for allocation_id in reply.kill:
                self._kill(allocation_id)
            log.info("registered agent %s with %d %s slot(s) at %s", self.agent_id, self.slots, self.slot_type,
                     self.client.url)
            return

    def _present_credential(self) -> None:
        """Present this agent's own credential when its work directory keeps one for this master's cluster; else
        the cluster token, to enroll."""
        if self.credential is not None:
            return
        stored = credential.load(self.work_root, self.agent_id)
        if stored is not None and stored.cluster_id != self.client.master_info().cluster_id:
            log.warning("%s was given by another cluster's master (a master with a new database); this agent "
                        "enrolls again with the cluster token", credential.path_of(self.work_root))
            stored = None
        if stored is not None:
            self.credential = stored
            self.client.use_agent_credential(stored.credential)
        elif not self.cluster_token:
            raise InvalidRequest(f"agent {self.agent_id} has no credential in {self.work_root} and no cluster token to "
                                 "enroll with: pass --token or --token-file (the master writes it to its home's "
                                 "cluster-token)")

    def _keep_credential(self, cluster_id: str, given: str) -> None:
        """The master enrolled this agent: keep its credential (0600, in the work directory) and present it."""
        stored = credential.Stored(self.agent_id, cluster_id, given)
        credential.store(self.work_root, stored)
        self.credential = stored
        self.client.use_agent_credential(given)
        log.info("agent %s enrolled; its credential is in %s", self.agent_id, credential.path_of(self.work_root))

    def _running(self) -> list[str]:
        with self._lock:
            return [a for a, p in self.procs.items() if p.exit_code is None]

    def _undelivered_exits(self) -> list[str]:
        return self.outbox.undelivered_exits()

    # -- actions --------------------------------------------------------------------------
    def _start(self, order: StartOrder) -> None:
        allocation_id = order.allocation_id
        with self._lock:
            if allocation_id in self.procs:
                return
            proc = TrialProcess(order.model_dump(), self.work_root, self.agent_id, self.shipper.add_lines, self._exited,
                                threads=threads_per_slot(self.slots), passthrough=self.task_env_passthrough,
                                launcher=self.launcher, slot_type=self.slot_type)
            self.procs[allocation_id] = proc
        try:
            ctx = self.client.allocation_context(allocation_id)
            proc.prepare(ctx.b64Tgz)
            pid = proc.start()
        except (OSError, StalwartError, os_users.CannotRunAs, LaunchError) as err:
            log.error("could not start allocation %s: %s", allocation_id, err)
            self.shipper.add({"allocation_id": allocation_id, "trial_id": order.trial_id,
                              "agent_id": self.agent_id, "timestamp": time.time(), "stdtype": "stderr",
                              "source": "agent", "level": "ERROR", "log": f"agent could not start the task: {err}"})
            proc.exit_code = 1
            self._exited(proc)
            return
        if pid is None:
            return  # killed before it could start; _exited has been reported
        log.info("started allocation %s (pid %d)", allocation_id, pid)
        self.outbox.send(AllocationStarted(allocation_id, self.agent_id, pid))

    def _exited(self, proc: TrialProcess) -> None:
        log.info("allocation %s exited with %s", proc.allocation_id, proc.exit_code)
        self.outbox.send(
            AllocationExited(proc.allocation_id, self.agent_id, proc.exit_code, agent_lost=proc.fenced,
                             setup_failed=proc.setup_failed),
            before=lambda: self.shipper.flush(allocation_id=proc.allocation_id),  # its lines first, all of them
        )
        self.workdirs.ended(proc.allocation_id)  # its directory goes once that report has reached the master

    def _kill(self, allocation_id: str) -> None:
        with self._lock:
            proc = self.procs.get(allocation_id)
            if proc is None:
                # never started here (or long gone): tell the master it is over
                proc = TrialProcess({"allocation_id": allocation_id}, self.work_root, self.agent_id,
                                    self.shipper.add_lines, self._exited, launcher=self.launcher)
                self.procs[allocation_id] = proc
                proc.exit_code = -9
                self._exited(proc)
                return
        log.info("killing allocation %s", allocation_id)
        proc.kill()

    def _poll_once(self) -> None:
        with self._lock:
            known = [a for a, p in self.procs.items() if p.exit_code is None]
        sent_at = time.monotonic()
        actions = self.client.agent_actions(self.agent_id, wait_s=self.poll_timeout, known=known)
        self.lease.renew(sent_at)
        for allocation_id in actions.kill:
            self._kill(allocation_id)
        for order in actions.start:
            threading.Thread(target=self._start_safely, args=(order,), daemon=True).start()

    def _start_safely(self, order: StartOrder) -> None:
        try:
            self._start(order)
        except MasterUnavailable as err:
            log.warning("master went away while starting %s: %s", order.allocation_id, err)

    # -- fencing --------------------------------------------------------------------------
    def _keep_lease(self) -> None:
        """Kill everything once the master may count this agent as lost: then nothing of it runs twice."""
        while not self._stop.wait(0.25):
            if not self.lease.expired():
                continue
            with self._lock:
                live = [p for p in self.procs.values() if p.exit_code is None and not p.fenced]
            if live:
                log.error("no answer from the master for %.0f s, near its agent timeout: killing %d allocation(s) "
                          "so that the master can safely start them again", self.lease.silent_for(), len(live))
            for p in live:
                p.fenced = True
                p.kill()

    # -- main loop ------------------------------------------------------------------------
    def run_forever(self) -> None:
        self.lock.acquire()  # refuses a second agent on this work directory
        os_users.secure_work_root(self.work_root)  # as root: tasks of OS users pass through it, never list it
        for allocation_id in self.launcher.remove_survivors():  # survivors of a previous agent on this directory
            log.warning("allocation %s had outlived the previous agent; it is killed", allocation_id)
        if self.launcher.runs_images:  # the harness for this agent's own Python, ready before the first task asks
            threading.Thread(target=self._warm_harness_bundle, daemon=True, name="harness-bundle").start()
        self.shipper.start()
        self.outbox.start()
        threading.Thread(target=self._keep_lease, daemon=True, name="lease").start()
        self._register()
        self.workdirs.start()
        while not self._stop.is_set():
            try:
                self._poll_once()
            except MasterUnavailable as err:
                log.warning("%s; will re-register when it is back", err)
                self._stop.wait(1.0)
                self._register()
            except StalwartError as err:
                log.warning("master refused the action poll: %s; re-registering", err)
                self._stop.wait(1.0)
                self._register()

    def _warm_harness_bundle(self) -> None:
        """Build the harness bundle for this agent's own Python minor version (the usual image's) in the
        background: the first container task then does not wait for it. A failure here is only logged: the task
        that needs the bundle builds it again and reports why it could not."""
        try:
            harness_bundle.bundle_dir(harness_bundle.cache_root(self.work_root), sys.version_info[:2])
        except (harness_bundle.BundleError, OSError) as err:
            log.warning("could not build the harness bundle for Python %d.%d ahead of time: %s",
                        *sys.version_info[:2], err)

    def stop(self, kill_running: bool = True) -> None:
        self._stop.set()
        if kill_running:
            with self._lock:
                procs = list(self.procs.values())
            for p in procs:
                p.kill()
