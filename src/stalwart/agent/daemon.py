"""The agent's main loop: register, poll for actions, start and kill trial processes; outlive master restarts."""

from __future__ import annotations

import logging
import pathlib
import socket
import threading
import time

from stalwart.api.errors import MasterUnavailable, StalwartError
from stalwart.agent.outbox import LogShipper, Outbox
from stalwart.agent.process import TrialProcess
from stalwart.agent.slots import threads_per_slot
from stalwart.client import Client

log = logging.getLogger("stalwart.agent")


class Agent:
    def __init__(self, master_url: str, cluster_token: str, work_root: pathlib.Path, *, agent_id: str | None = None,
                 slots: int = 1, slot_type: str = "cpu", resource_pool: str = "default",
                 poll_timeout: float = 20.0) -> None:
        self.agent_id = agent_id or socket.gethostname()
        self.client = Client(master_url, cluster_token=cluster_token, timeout=poll_timeout + 15)
        self.work_root = pathlib.Path(work_root)
        self.slots, self.slot_type, self.resource_pool = slots, slot_type, resource_pool
        self.poll_timeout = poll_timeout
        self.procs: dict[str, TrialProcess] = {}
        self._lock = threading.Lock()
        self.shipper = LogShipper(self.client, self.agent_id)
        self.outbox = Outbox(self.client)
        self._stop = threading.Event()

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
            try:
                reply = self.client.post("/agents", {
                    "agent_id": self.agent_id, "hostname": socket.gethostname(), "slots": self.slots,
                    "slot_type": self.slot_type, "resource_pool": self.resource_pool, "running_allocations": running,
                })
            except MasterUnavailable as err:
                log.warning("%s; retrying in %.1f s", err, delay)
                self._stop.wait(delay)
                delay = min(delay * 2, 5.0)
                continue
            for allocation_id in reply.get("kill", []):
                self._kill(allocation_id)
            log.info("registered agent %s with %d %s slot(s) at %s", self.agent_id, self.slots, self.slot_type,
                     self.client.url)
            return

    def _undelivered_exits(self) -> list[str]:
        prefix, suffix = "/allocations/", "/exited"
        return [p[len(prefix):-len(suffix)] for p in self.outbox.queued_paths()
                if p.startswith(prefix) and p.endswith(suffix)]

    # -- actions --------------------------------------------------------------------------
    def _start(self, order: dict) -> None:
        allocation_id = order["allocation_id"]
        with self._lock:
            if allocation_id in self.procs:
                return
            proc = TrialProcess(order, self.work_root, self.agent_id, self.shipper.add, self._exited,
                                threads=threads_per_slot(self.slots))
            self.procs[allocation_id] = proc
        try:
            ctx = self.client.get(f"/allocations/{allocation_id}/context")
            proc.prepare(ctx["b64Tgz"])
            pid = proc.start()
        except (OSError, StalwartError) as err:
            log.error("could not start allocation %s: %s", allocation_id, err)
            self.shipper.add({"allocation_id": allocation_id, "trial_id": order.get("trial_id"),
                              "agent_id": self.agent_id, "timestamp": time.time(), "stdtype": "stderr",
                              "source": "agent", "level": "ERROR", "log": f"agent could not start the trial: {err}"})
            proc.exit_code = 1
            self._exited(proc)
            return
        if pid is None:
            return  # killed before it could start; _exited has been reported
        log.info("started allocation %s (pid %d)", allocation_id, pid)
        self.outbox.send(f"/allocations/{allocation_id}/started", {"agent_id": self.agent_id, "pid": pid})

    def _exited(self, proc: TrialProcess) -> None:
        log.info("allocation %s exited with %s", proc.allocation_id, proc.exit_code)
        self.outbox.send(
            f"/allocations/{proc.allocation_id}/exited",
            {"agent_id": self.agent_id, "exit_code": proc.exit_code},
            before=self.shipper.flush,
        )

    def _kill(self, allocation_id: str) -> None:
        with self._lock:
            proc = self.procs.get(allocation_id)
            if proc is None:
                # never started here (or long gone): tell the master it is over
                proc = TrialProcess({"allocation_id": allocation_id}, self.work_root, self.agent_id,
                                    self.shipper.add, self._exited)
                self.procs[allocation_id] = proc
                proc.exit_code = -9
                self._exited(proc)
                return
        log.info("killing allocation %s", allocation_id)
        proc.kill()

    def _poll_once(self) -> None:
        with self._lock:
            known = [a for a, p in self.procs.items() if p.exit_code is None]
        actions = self.client.get(f"/agents/{self.agent_id}/actions", timeout=self.poll_timeout, known=known)
        for allocation_id in actions.get("kill", []):
            self._kill(allocation_id)
        for order in actions.get("start", []):
            threading.Thread(target=self._start_safely, args=(order,), daemon=True).start()

    def _start_safely(self, order: dict) -> None:
        try:
            self._start(order)
        except MasterUnavailable as err:
            log.warning("master went away while starting %s: %s", order["allocation_id"], err)

    # -- main loop ------------------------------------------------------------------------
    def run_forever(self) -> None:
        self.work_root.mkdir(parents=True, exist_ok=True)
        self.shipper.start()
        self.outbox.start()
        self._register()
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

    def stop(self, kill_running: bool = True) -> None:
        self._stop.set()
        if kill_running:
            with self._lock:
                procs = list(self.procs.values())
            for p in procs:
                p.kill()
