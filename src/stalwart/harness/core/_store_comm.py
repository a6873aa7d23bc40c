"""Object collectives (allgather, gather, broadcast) between the processes of one trial, over a key-value store.

Every collective is one round: each member writes its pickled value under `<round>/<member>` and
reads what it needs. A member writes round n only after finishing round n-1, so once the leader
(member 0) has seen every value of round n it deletes round n-1: the store never holds more than
two rounds. The store is torch's c10d TCPStore: under torchrun the one its agent already hosts at
MASTER_ADDR:MASTER_PORT (no extra port), otherwise one hosted by the chief. A collective waits up
to STALWART_DIST_TIMEOUT_S seconds (default 1800, torch's own default for collectives) for the
others, then raises.
"""

from __future__ import annotations

import datetime
import os
import pickle
import time
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from torch.distributed.distributed_c10d import Store

DEFAULT_TIMEOUT_S = float(os.environ.get("STALWART_DIST_TIMEOUT_S", "1800"))  # torch's own default for collectives

T = TypeVar("T")  # what a collective moves: any picklable object, the same type on every member


class StoreGroup:
    """A group of `size` members (this one is `member`) talking through `store` under `prefix`."""

    def __init__(self, store: Store, prefix: str, member: int, size: int) -> None:
        from torch.distributed.distributed_c10d import PrefixStore

        self._store = PrefixStore(prefix, store)
        self.member, self.size = member, size
        self._round = 0

    def _keys(self, n: int) -> list[str]:
        return [f"{n}/{m}" for m in range(self.size)]

    def _begin(self, value: object) -> int:
        n = self._round
        self._round += 1
        payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        # torch's stub types the value as str; the binding takes a std::string, which pybind also fills from bytes.
        self._store.set(f"{n}/{self.member}", payload)  # type: ignore[arg-type]
        return n

    def _finish(self, n: int) -> None:
        """Leader only, after it has seen all of round n: everyone is done with round n-1."""
        if n > 0:
            for key in self._keys(n - 1):
                self._store.delete_key(key)

    def allgather(self, value: T) -> list[T]:
        n = self._begin(value)
        values: list[T] = [pickle.loads(v) for v in self._store.multi_get(self._keys(n))]
        if self.member == 0:
            self._finish(n)
        return values

    def gather(self, value: T) -> list[T] | None:
        n = self._begin(value)
        if self.member != 0:
            return None
        values: list[T] = [pickle.loads(v) for v in self._store.multi_get(self._keys(n))]
        self._finish(n)
        return values

    def broadcast(self, value: T) -> T:
        n = self._begin(value if self.member == 0 else None)
        if self.member == 0:
            self._store.wait(self._keys(n))
            self._finish(n)
            return value
        chiefs: T = pickle.loads(self._store.get(f"{n}/0"))
        return chiefs

    def close(self, hosting: bool, timeout_s: float = 60.0) -> None:
        """Everyone checks out; a leader that hosts the store waits for all, so none loses it mid-read."""
        self._store.add("closed", 1)
        if not hosting:
            return
        deadline = time.monotonic() + timeout_s
        while self._store.add("closed", 0) < self.size and time.monotonic() < deadline:
            time.sleep(0.01)


def connect(host: str, port: int, *, hosting: bool, timeout_s: float = DEFAULT_TIMEOUT_S) -> Store:
    """A TCPStore client of host:port, or (hosting) the server itself, listening on all interfaces."""
    try:
        import torch.distributed as dist
    except ImportError as err:  # pragma: no cover - torch is in every trial environment we build
        raise RuntimeError("a DistributedContext with several ranks needs torch (pip install 'stalwart[torch]')") \
            from err
    timeout = datetime.timedelta(seconds=timeout_s)
    # TCPStore is torch.distributed's public API, re-exported without a place in its __all__: attr-defined where
    # mypy allows no implicit re-exports (--strict), an unused ignore elsewhere.
    tcp_store = dist.TCPStore  # type: ignore[attr-defined, unused-ignore]  # see the comment above
    try:
        if hosting:
            store: Store = tcp_store("0.0.0.0", port, is_master=True, timeout=timeout, wait_for_workers=False)
        else:
            store = tcp_store(host, port, is_master=False, timeout=timeout)
        return store
    except (RuntimeError, OSError) as err:
        what = f"listen on port {port}" if hosting else f"reach the chief's store at {host}:{port}"
        raise RuntimeError(f"DistributedContext could not {what}: {err}. Check chief_ip and that the port is free "
                           "and reachable between the trial's machines") from err
