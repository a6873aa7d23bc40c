"""DataLoader: torch's arguments, with a data order that is sharded by rank, repeatable and skippable."""

from __future__ import annotations

import logging
import math
import multiprocessing.context
import random
from collections.abc import Callable, Iterable, Iterator, Sequence, Sized
from typing import Any, cast

import numpy as np
import torch
import torch.utils.data
from torch.utils.data import IterableDataset, RandomSampler, SequentialSampler
from torch.utils.data._utils.collate import default_collate, default_convert

log = logging.getLogger("stalwart.pytorch")

# A batch, as Determined names it (to_device() and the Trainer take any structure of tensors and arrays).
TorchData = dict[str, torch.Tensor] | Sequence[torch.Tensor] | torch.Tensor
# A user's collate_fn (torch's own type: a list of samples in, a batch of any structure out).
CollateFn = Callable[[list[Any]], Any]
Batches = list[list[int]]
# A user's sampler and batch_sampler (torch's types).
_Sampler = torch.utils.data.Sampler[Any] | Iterable[Any] | None
_BatchSampler = torch.utils.data.Sampler[list[int]] | Iterable[Sequence[int]] | None

_SEED_MIX = 0x9E3779B97F4A7C15  # any odd 64-bit constant: spreads (seed, epoch) pairs apart


def _epoch_seed(seed: int, epoch: int) -> int:
    return (int(seed) * _SEED_MIX + int(epoch)) % (2**63 - 1)


class _Unbatched:
    """collate_fn for batch_size=None: each 'batch' is one index, passed through the user's function."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn

    def __call__(self, samples: list[Any]) -> Any:
        return self.fn(samples[0])


class _BatchPlan:
    """The batches (lists of dataset indices) of each epoch, before sharding.

    The built-in orders (sequential, or shuffled with a seed per epoch) give any epoch directly; a
    user's sampler or batch_sampler is replayed epoch by epoch, in order.
    """

    def __init__(self, loader: DataLoader, seed: int) -> None:
        self.seed = seed
        self._loader = loader
        self._n = (len(cast(Sized, loader.dataset)) if loader._user_sampler is None
                   and loader._user_batch_sampler is None else None)
        self.random_access = self._n is not None

    def epoch(self, e: int) -> Batches:
        loader = self._loader
        if loader._user_batch_sampler is not None:
            return [list(b) for b in loader._user_batch_sampler]
        if self._n is None:
            indices = list(cast(Iterable[int], loader._user_sampler))
        elif loader.shuffle:
            gen = torch.Generator().manual_seed(_epoch_seed(self.seed, e))
            indices = torch.randperm(self._n, generator=gen).tolist()
        else:
            indices = list(range(self._n))
        return self._chunk(indices)

    def _chunk(self, indices: list[int]) -> Batches:
        size = self._loader.batch_size
        if size is None:
            return [[i] for i in indices]
        batches = [indices[i:i + size] for i in range(0, len(indices), size)]
        if self._loader.drop_last and batches and len(batches[-1]) < size:
            batches.pop()
        return batches

    def length(self) -> int:
        loader = self._loader
        if loader._user_batch_sampler is not None:
            return len(cast(Sized, loader._user_batch_sampler))
        n = self._n if self._n is not None else len(cast(Sized, loader._user_sampler))
        size = loader.batch_size or 1
        return n // size if loader.drop_last else math.ceil(n / size)


def _shard(batches: Batches, num_replicas: int, rank: int, pad: bool) -> Batches:
    """Every num_replicas-th batch from `rank`; with `pad`, wrap around so every rank gets as many."""
    if num_replicas == 1:
        return batches
    if pad and batches:
        total = math.ceil(len(batches) / num_replicas) * num_replicas
        batches = [batches[i % len(batches)] for i in range(total)]
    return batches[rank::num_replicas]


class _ResumableBatchSampler(torch.utils.data.Sampler[list[int]]):
    """Yields this rank's batches from epoch `first_epoch` on, skipping `skip` batches, forever if `repeat`."""

    def __init__(self, plan: _BatchPlan, *, repeat: bool, skip: int, num_replicas: int, rank: int,
                 first_epoch: int = 0) -> None:
        if not 0 <= rank < num_replicas:
            raise ValueError(f"rank {rank} is outside 0..{num_replicas - 1}")
        self.plan, self.repeat, self.skip = plan, repeat, skip
        self.num_replicas, self.rank, self.first_epoch = num_replicas, rank, first_epoch
        global_len = plan.length()
        if repeat and num_replicas > 1:
            self._len = math.ceil(global_len / num_replicas)
        else:
            self._len = len(range(rank, global_len, num_replicas))

    def __len__(self) -> int:
        return self._len

    def _batches(self, epoch: int) -> Batches:
        return _shard(self.plan.epoch(epoch), self.num_replicas, self.rank, pad=self.repeat)

    def __iter__(self) -> Iterator[list[int]]:
        if not self.repeat:
            yield from self._batches(self.first_epoch)[self.skip:]
            return
        if self._len == 0:
            raise ValueError("the training DataLoader yields no batches: cannot repeat an empty epoch")
        epoch, offset = divmod(self.skip, self._len)
        epoch += self.first_epoch
        if not self.plan.random_access:
            for e in range(self.first_epoch, epoch):  # replay a user's (maybe stateful) sampler in order
                self.plan.epoch(e)
        while True:
            batches = self._batches(epoch)
            yield from batches[offset:] if offset else batches
            offset = 0
            epoch += 1


class DataLoader:
    """Takes torch.utils.data.DataLoader's arguments; the Trainer makes the real loader from it.

    The Trainer shards the batches by rank, repeats the training data epoch after epoch and, on
    resume, starts at exactly the next batch. Shuffling draws each epoch's order from a seed kept in
    the checkpoint, never from the global RNG, so a resumed trial sees the same data order as one
    that never stopped. Iterated directly (outside the Trainer) it behaves like torch's DataLoader.
    """

    def __init__(self, dataset: torch.utils.data.Dataset[Any], batch_size: int | None = 1,
                 shuffle: bool | None = None, sampler: _Sampler = None, batch_sampler: _BatchSampler = None,
                 num_workers: int = 0, collate_fn: CollateFn | None = None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Callable[[int], None] | None = None,
                 multiprocessing_context: str | multiprocessing.context.BaseContext | None = None,
                 generator: torch.Generator | None = None, *, prefetch_factor: int | None = None,
                 persistent_workers: bool = False, pin_memory_device: str = "", in_order: bool = True) -> None:
        if isinstance(dataset, IterableDataset):
            raise TypeError("stalwart.pytorch.DataLoader needs a map-style Dataset (with __len__ and __getitem__); "
                            "for an IterableDataset return a torch.utils.data.DataLoader and shard it yourself")
        _check_arguments(batch_size, shuffle, sampler, batch_sampler, drop_last, num_workers, timeout)
        self.dataset = dataset
        self.batch_size = None if batch_sampler is not None else batch_size
        self.shuffle = bool(shuffle)
        self.drop_last = drop_last
        self.num_workers = num_workers
        self._user_sampler, self._user_batch_sampler = _user_samplers(sampler, batch_sampler)
        if collate_fn is None:
            collate_fn = default_convert if self.batch_size is None and batch_sampler is None else default_collate
        if self.batch_size is None and batch_sampler is None:
            collate_fn = _Unbatched(collate_fn)
        self.collate_fn: CollateFn = collate_fn
        self.generator = generator
        self._torch_kwargs: dict[str, Any] = dict(
            num_workers=num_workers, pin_memory=pin_memory, timeout=timeout, worker_init_fn=worker_init_fn,
            multiprocessing_context=multiprocessing_context, prefetch_factor=prefetch_factor,
            persistent_workers=persistent_workers, pin_memory_device=pin_memory_device, in_order=in_order,
        )
        self._default_seed = (generator.initial_seed() if generator is not None
                              else random.SystemRandom().getrandbits(62))
        self._epochs_iterated = 0

    def get_data_loader(self, repeat: bool = False, skip: int = 0, num_replicas: int = 1, rank: int = 0, *,
                        seed: int | None = None, first_epoch: int = 0) -> torch.utils.data.DataLoader[Any]:
        """The torch DataLoader for one rank: `repeat` epochs forever, starting `skip` batches in."""
        seed = self._default_seed if seed is None else int(seed)
        sampler = _ResumableBatchSampler(_BatchPlan(self, seed), repeat=repeat, skip=skip,
                                         num_replicas=num_replicas, rank=rank, first_epoch=first_epoch)
        # A private generator: worker seeds and the like never draw from the global torch RNG.
        generator = torch.Generator().manual_seed(_epoch_seed(seed, -1 - skip))
        return torch.utils.data.DataLoader(self.dataset, batch_sampler=sampler, collate_fn=self.collate_fn,
                                           generator=generator, **self._torch_kwargs)

    def __iter__(self) -> Iterator[Any]:
        epoch = self._epochs_iterated
        self._epochs_iterated += 1
        return iter(self.get_data_loader(first_epoch=epoch))

    def __len__(self) -> int:
        return _BatchPlan(self, self._default_seed).length()


def _check_arguments(batch_size: int | None, shuffle: bool | None, sampler: object, batch_sampler: object,
                     drop_last: bool, num_workers: int, timeout: float) -> None:
    if num_workers < 0:
        raise ValueError("num_workers must be >= 0 (0 loads data in the main process)")
    if timeout < 0:
        raise ValueError("timeout must be >= 0")
    if sampler is not None and shuffle:
        raise ValueError("sampler is mutually exclusive with shuffle")
    if batch_sampler is not None and (batch_size != 1 or shuffle or sampler is not None or drop_last):
        raise ValueError("batch_sampler is mutually exclusive with batch_size, shuffle, sampler and drop_last")
    if batch_size is None and batch_sampler is None and drop_last:
        raise ValueError("batch_size=None disables batching and is mutually exclusive with drop_last")


def _user_samplers(sampler: _Sampler, batch_sampler: _BatchSampler) -> tuple[_Sampler, _BatchSampler]:
    """Keep only samplers that change the order: torch's own Sequential/Random samplers become ours."""
    if isinstance(sampler, SequentialSampler):
        sampler = None
    if isinstance(sampler, RandomSampler) and sampler.generator is None:
        log.warning("a torch RandomSampler without a generator draws from the global RNG, so a resumed trial "
                    "may see another order; use shuffle=True for an order that resumes exactly")
    return sampler, batch_sampler


def data_length(data: Any) -> int:
    """The batch size of `data`: the length of its first tensor or array (in dicts, lists, tuples)."""
    if isinstance(data, (torch.Tensor, np.ndarray)):
        return len(data)
    if isinstance(data, dict):
        if not data:
            raise ValueError("a batch dict needs at least one tensor or array")
        return data_length(next(iter(data.values())))
    if isinstance(data, (list, tuple)):
        if not data:
            raise ValueError("a batch list or tuple needs at least one tensor or array")
        return data_length(data[0])
    raise TypeError(f"cannot tell the batch size of a {type(data).__name__}; override get_batch_length()")


def to_device(data: Any, device: torch.device, warned_types: set[type] | None = None) -> Any:
    """Move tensors (and numpy arrays, as tensors) inside dicts, lists and tuples to `device`.

    `data` is a user's batch of any structure (Any, as in Determined's signature).
    """
    if isinstance(data, torch.Tensor):
        return data.to(device)
    if isinstance(data, dict):
        return {k: to_device(v, device, warned_types) for k, v in data.items()}
    if isinstance(data, list):
        return [to_device(v, device, warned_types) for v in data]
    if isinstance(data, tuple):
        items = [to_device(v, device, warned_types) for v in data]
        return type(data)(*items) if hasattr(data, "_fields") else tuple(items)
    if isinstance(data, np.ndarray):
        return torch.from_numpy(data).to(device)
    if hasattr(data, "to") and callable(data.to):
        return data.to(device)
    if warned_types is not None and type(data) not in warned_types and not isinstance(data, (str, int, float, bool)):
        warned_types.add(type(data))
        log.warning("to_device: left a %s where it was (it has no .to())", type(data).__name__)
    return data


def is_on_cpu_already(data: Any) -> bool:
    """Cheap check for the common CPU case: a tensor, or a flat list/tuple of CPU tensors."""
    if isinstance(data, torch.Tensor):
        return data.device.type == "cpu"
    if isinstance(data, (list, tuple)):
        return all(isinstance(v, torch.Tensor) and v.device.type == "cpu" for v in data)
    return False
