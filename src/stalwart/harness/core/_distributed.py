"""DistributedContext: this process's place among a trial's workers, and object collectives between them.

`rank`/`size` count every worker of the trial, `local_rank`/`local_size` the workers on this
machine (container), `cross_rank`/`cross_size` the machines. The collectives (`allgather`,
`gather`, `broadcast` and their `_local` forms over this machine's workers) move picklable Python
objects; they are for coordination (metrics, a checkpoint id, "should we stop?"), not for tensors,
which belong to torch.distributed. They do not need torch.distributed to be initialised: they talk
through torch's c10d key-value store, the one torchrun already runs (MASTER_ADDR:MASTER_PORT) or,
outside torchrun, one the chief hosts on `pub_port + port_offset`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from stalwart.harness.core import _store_comm
from stalwart.harness.core._store_comm import StoreGroup, T

if TYPE_CHECKING:
    from torch.distributed.distributed_c10d import Store

DEFAULT_PORT = 12360  # Determined's INTER_TRAIN_PROCESS_COMM_PORT_1, for contexts built outside torchrun
_TORCH_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK")


class DistributedContext:
    """Ranks of this worker, plus allgather / gather / broadcast (global and per machine).

    Every worker of the group must call the same collectives in the same order.
    """

    def __init__(self, *, rank: int = 0, size: int = 1, local_rank: int = 0, local_size: int = 1,
                 cross_rank: int = 0, cross_size: int = 1, chief_ip: str | None = None,
                 pub_port: int = DEFAULT_PORT, pull_port: int | None = None, port_offset: int = 0,
                 force_tcp: bool = False, _store: Store | None = None) -> None:
        _check_ranks(rank, size, local_rank, local_size, cross_rank, cross_size)
        self.rank, self.size = rank, size
        self.local_rank, self.local_size = local_rank, local_size
        self.cross_rank, self.cross_size = cross_rank, cross_size
        if cross_size > 1 and not chief_ip:
            raise ValueError("a DistributedContext spanning several machines (cross_size > 1) needs chief_ip, "
                             "the address of the machine running rank 0 (or set DET_CHIEF_IP)")
        self.chief_ip = chief_ip if cross_size > 1 else (chief_ip or "127.0.0.1")
        self._hosting = False
        self._global: StoreGroup | None = None
        self._local: StoreGroup | None = None
        self._closed = False
        if size > 1:
            store = _store
            if store is None:
                assert self.chief_ip is not None  # set above: given, or 127.0.0.1 on one machine
                self._hosting = rank == 0
                store = _store_comm.connect(self.chief_ip, int(pub_port) + int(port_offset), hosting=self._hosting)
            self._store = store
            self._global = StoreGroup(store, "stalwart-dctx/global", rank, size)
            if local_size > 1:
                self._local = StoreGroup(store, f"stalwart-dctx/local{cross_rank}", local_rank,
                                                     local_size)

    @classmethod
    def from_torch_distributed(cls, chief_ip: str | None = None) -> DistributedContext:
        """Ranks from the environment torchrun gives each worker (RANK, WORLD_SIZE, LOCAL_RANK, ...).

        Under torchrun (and so under `determined.launch.torch_distributed`) the collectives use the
        store torchrun already hosts; torch.distributed.init_process_group() is not required.
        """
        env = os.environ
        missing = [k for k in _TORCH_ENV if k not in env]
        if missing:
            raise RuntimeError(
                f"DistributedContext.from_torch_distributed() needs the torchrun environment, but {', '.join(missing)} "
                "is not set: start the script with `python3 -m determined.launch.torch_distributed python3 "
                "SCRIPT` (or torchrun)")
        try:
            rank, size = int(env["RANK"]), int(env["WORLD_SIZE"])
            local_rank, local_size = int(env["LOCAL_RANK"]), int(env["LOCAL_WORLD_SIZE"])
            cross_rank = int(env["GROUP_RANK"])
            cross_size = int(env.get("GROUP_WORLD_SIZE") or max(1, size // max(local_size, 1)))
        except ValueError as err:
            raise RuntimeError(f"the torchrun environment holds a non-integer rank variable: {err}") from err
        chief_ip = chief_ip or env.get("DET_CHIEF_IP") or env.get("MASTER_ADDR")
        store: Store | None = None
        if size > 1 and env.get("TORCHELASTIC_USE_AGENT_STORE") == "True" and env.get("MASTER_PORT"):
            store = _store_comm.connect(env.get("MASTER_ADDR", "127.0.0.1"), int(env["MASTER_PORT"]), hosting=False)
            from torch.distributed.distributed_c10d import PrefixStore

            run = f"{env.get('TORCHELASTIC_RUN_ID', 'none')}/{env.get('TORCHELASTIC_RESTART_COUNT', '0')}"
            store = PrefixStore(f"stalwart/{run}", store)
        return cls(rank=rank, size=size, local_rank=local_rank, local_size=local_size, cross_rank=cross_rank,
                   cross_size=cross_size, chief_ip=chief_ip, _store=store)

    # -- ranks ----------------------------------------------------------------------------------
    def get_rank(self) -> int:
        return self.rank

    def get_local_rank(self) -> int:
        return self.local_rank

    def get_size(self) -> int:
        return self.size

    def get_local_size(self) -> int:
        return self.local_size

    def get_cross_rank(self) -> int:
        return self.cross_rank

    def get_cross_size(self) -> int:
        return self.cross_size

    def get_num_agents(self) -> int:
        return self.cross_size

    # -- collectives ------------------------------------------------------------------------------
    def _group(self, local: bool) -> StoreGroup | None:
        if self._closed:
            raise RuntimeError("this DistributedContext is closed")
        return self._local if local else self._global

    def allgather(self, stuff: T) -> list[T]:
        """Every worker gets the list of every worker's `stuff`, in rank order."""
        group = self._group(False)
        return [stuff] if group is None else group.allgather(stuff)

    def gather(self, stuff: T) -> list[T] | None:
        """The chief gets the list of every worker's `stuff` in rank order; the others get None."""
        group = self._group(False)
        return [stuff] if group is None else group.gather(stuff)

    def broadcast(self, stuff: T) -> T:
        """Every worker gets the chief's `stuff` (what the others pass is ignored)."""
        group = self._group(False)
        return stuff if group is None else group.broadcast(stuff)

    def allgather_local(self, stuff: T) -> list[T]:
        """allgather() among the workers on this machine, in local-rank order."""
        group = self._group(True)
        return [stuff] if group is None else group.allgather(stuff)

    def gather_local(self, stuff: T) -> list[T] | None:
        """gather() to this machine's local chief (local_rank 0)."""
        group = self._group(True)
        return [stuff] if group is None else group.gather(stuff)

    def broadcast_local(self, stuff: Any = None) -> Any:
        """broadcast() from this machine's local chief (local_rank 0).

        Any, as in Determined: the other workers may pass nothing (None) and still get the chief's object.
        """
        group = self._group(True)
        return stuff if group is None else group.broadcast(stuff)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._global is not None:
            self._global.close(self._hosting)

    def __repr__(self) -> str:
        return (f"DistributedContext(rank={self.rank}, size={self.size}, local_rank={self.local_rank}, "
                f"local_size={self.local_size}, cross_rank={self.cross_rank}, cross_size={self.cross_size})")


def _check_ranks(rank: int, size: int, local_rank: int, local_size: int, cross_rank: int, cross_size: int) -> None:
    values = dict(rank=rank, size=size, local_rank=local_rank, local_size=local_size, cross_rank=cross_rank,
                  cross_size=cross_size)
    for name, value in values.items():
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"DistributedContext {name} must be an int, got {value!r}")
    for name, index, count in (("rank", rank, size), ("local_rank", local_rank, local_size),
                               ("cross_rank", cross_rank, cross_size)):
        if count < 1 or not 0 <= index < count:
            raise ValueError(f"DistributedContext {name}={index} is outside 0..{count - 1} "
                             f"(sizes must be >= 1 and ranks count from 0)")
    if local_size > size or cross_size > size:
        raise ValueError(f"DistributedContext local_size={local_size} and cross_size={cross_size} "
                         f"cannot exceed size={size}")
