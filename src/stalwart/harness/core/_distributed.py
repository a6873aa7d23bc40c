"""DistributedContext: ranks and object collectives; one process by default, torch.distributed when initialised."""

from __future__ import annotations

import os
from typing import Any


class DistributedContext:
    def __init__(self, *, rank: int = 0, size: int = 1, local_rank: int = 0, local_size: int = 1,
                 cross_rank: int = 0, cross_size: int = 1, chief_ip: str | None = None, **_ignored: Any) -> None:
        if not 0 <= rank < size:
            raise ValueError(f"rank {rank} is outside 0..{size - 1}")
        self.rank, self.size = rank, size
        self.local_rank, self.local_size = local_rank, local_size
        self.cross_rank, self.cross_size = cross_rank, cross_size
        self.chief_ip = chief_ip

    @classmethod
    def from_torch_distributed(cls, chief_ip: str | None = None) -> "DistributedContext":
        """Ranks from the torchrun environment; collectives go through torch.distributed."""
        env = os.environ
        size = int(env.get("WORLD_SIZE", "1"))
        local_size = int(env.get("LOCAL_WORLD_SIZE", "1"))
        return cls(
            rank=int(env.get("RANK", "0")), size=size,
            local_rank=int(env.get("LOCAL_RANK", "0")), local_size=local_size,
            cross_rank=int(env.get("GROUP_RANK", "0")), cross_size=max(1, size // max(local_size, 1)),
            chief_ip=chief_ip or env.get("MASTER_ADDR"),
        )

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

    def _dist(self):
        import torch.distributed as dist  # only multi-process contexts need torch

        if not dist.is_initialized():
            raise RuntimeError("a multi-process DistributedContext needs torch.distributed.init_process_group() first")
        return dist

    def allgather(self, stuff: Any) -> list:
        if self.size == 1:
            return [stuff]
        out: list = [None] * self.size
        self._dist().all_gather_object(out, stuff)
        return out

    def gather(self, stuff: Any) -> list | None:
        gathered = self.allgather(stuff)
        return gathered if self.rank == 0 else None

    def broadcast(self, stuff: Any) -> Any:
        if self.size == 1:
            return stuff
        box = [stuff if self.rank == 0 else None]
        self._dist().broadcast_object_list(box, src=0)
        return box[0]

    allgather_local = allgather
    gather_local = gather
    broadcast_local = broadcast

    def close(self) -> None:
        pass
