"""PreemptContext: learn that the master wants this trial to stop (pause, preemption, searcher stop)."""

from __future__ import annotations

import enum
import logging
import threading

from stalwart.api.errors import MasterUnavailable, StalwartError
from stalwart.client import Client
from stalwart.harness.core._distributed import DistributedContext

log = logging.getLogger("stalwart.core")


class PreemptMode(enum.Enum):
    WorkersAskChief = "WORKERS_ASK_CHIEF"
    ChiefOnly = "CHIEF_ONLY"
    WorkersAskMaster = "WORKERS_ASK_MASTER"


class _Watcher(threading.Thread):
    """Long-polls the master's preemption signal and remembers once it is set."""

    def __init__(self, client: Client, allocation_id: str) -> None:
        super().__init__(daemon=True, name="preemption-watcher")
        self.client = client
        self.allocation_id = allocation_id
        self.flag = threading.Event()
        self.first_answer = threading.Event()
        self._stop = threading.Event()

    def run(self) -> None:
        timeout = 0
        while not self._stop.is_set() and not self.flag.is_set():
            try:
                answer = self.client.preemption_signal(self.allocation_id, wait_s=timeout, timeout=90)
            except (MasterUnavailable, StalwartError) as err:
                log.warning("preemption check failed: %s", err)
                self._stop.wait(1.0)
                continue
            if answer.preempt:
                self.flag.set()
            self.first_answer.set()
            timeout = 60
        self.first_answer.set()

    def close(self) -> None:
        self._stop.set()


class PreemptContext:
    def __init__(self, client: Client | None, allocation_id: str | None, dist: DistributedContext,
                 mode: PreemptMode = PreemptMode.WorkersAskChief) -> None:
        self._client = client
        self._allocation_id = allocation_id
        self._dist = dist
        self._mode = PreemptMode(mode)
        self._ack_sent = False
        self._watcher: _Watcher | None = None
        asks_master = dist.rank == 0 or self._mode is PreemptMode.WorkersAskMaster
        if client is not None and allocation_id and asks_master:
            self._watcher = _Watcher(client, allocation_id)
            self._watcher.start()
            self._watcher.first_answer.wait(10)

    def _local_flag(self) -> bool:
        return bool(self._watcher and self._watcher.flag.is_set())

    def should_preempt(self, auto_ack: bool = True) -> bool:
        if self._mode is PreemptMode.WorkersAskChief:
            flag = self._dist.broadcast(self._local_flag())
        else:
            flag = self._local_flag()
        if flag and auto_ack:
            self.acknowledge_preemption_signal()
        return bool(flag)

    def acknowledge_preemption_signal(self) -> None:
        if self._client is None or self._allocation_id is None or self._ack_sent or self._dist.rank != 0:
            return
        self._client.ack_preemption(self._allocation_id)
        self._ack_sent = True

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.close()
