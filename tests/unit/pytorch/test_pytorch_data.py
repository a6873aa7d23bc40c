"""stalwart.pytorch.DataLoader: torch-like batches, seeded shuffling, exact skip, sharding by rank, units."""

from __future__ import annotations

import itertools

import pytest
import torch

from stalwart import pytorch
from stalwart.config import Length
from stalwart.harness.pytorch._trainer import legacy_max_length
from stalwart.harness.pytorch._units import from_length

DATA = torch.utils.data.TensorDataset(torch.arange(10))


def ids(loader, n=None):
    it = iter(loader) if n is None else itertools.islice(iter(loader), n)
    return [b[0].tolist() for b in it]


@pytest.mark.parametrize("kwargs", [{"batch_size": 3}, {"batch_size": 3, "drop_last": True}, {"batch_size": 4},
                                    {"batch_size": None}])
def test_unshuffled_batches_match_torch(kwargs):
    ours = pytorch.DataLoader(DATA, **kwargs)
    theirs = torch.utils.data.DataLoader(DATA, **kwargs)
    assert len(ours) == len(theirs)
    got, want = list(ours), list(theirs)
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


def test_shuffle_is_seeded_per_epoch_and_reshuffles():
    loader = pytorch.DataLoader(DATA, batch_size=5, shuffle=True)
    stream = ids(loader.get_data_loader(repeat=True, seed=7), 6)
    assert stream == ids(loader.get_data_loader(repeat=True, seed=7), 6)
    assert stream != ids(loader.get_data_loader(repeat=True, seed=8), 6)
    epochs = [sorted(stream[0] + stream[1]), sorted(stream[2] + stream[3])]
    assert epochs == [list(range(10))] * 2
    assert stream[:2] != stream[2:4]  # a new order every epoch


def test_iterating_leaves_the_global_rng_alone():
    loader = pytorch.DataLoader(DATA, batch_size=2, shuffle=True, num_workers=0)
    state = torch.random.get_rng_state()
    ids(loader.get_data_loader(repeat=True, seed=1), 12)
    list(loader)
    assert torch.equal(state, torch.random.get_rng_state())


@pytest.mark.parametrize("skip", [0, 1, 3, 4, 5, 9, 13])
@pytest.mark.parametrize("shuffle", [False, True])
def test_skip_continues_the_same_stream(skip, shuffle):
    loader = pytorch.DataLoader(DATA, batch_size=3, shuffle=shuffle)  # 4 batches an epoch
    full = ids(loader.get_data_loader(repeat=True, seed=5), skip + 6)
    assert ids(loader.get_data_loader(repeat=True, skip=skip, seed=5), 6) == full[skip:]


def test_user_sampler_is_replayed_in_order_when_skipping():
    make = lambda: pytorch.DataLoader(DATA, batch_size=4, sampler=torch.utils.data.RandomSampler(  # noqa: E731
        DATA, generator=torch.Generator().manual_seed(3)))
    full = ids(make().get_data_loader(repeat=True), 9)
    assert ids(make().get_data_loader(repeat=True, skip=4), 5) == full[4:]


def test_batch_sampler_is_used_as_given():
    batches = [[9, 8], [1], [2, 3, 4]]
    loader = pytorch.DataLoader(DATA, batch_sampler=batches)
    assert len(loader) == 3 and ids(loader) == batches
    assert ids(loader.get_data_loader(repeat=True, skip=2), 3) == [[2, 3, 4], [9, 8], [1]]


def test_sharding_by_rank():
    loader = pytorch.DataLoader(DATA, batch_size=2, shuffle=True)  # 5 global batches an epoch
    ranks = [loader.get_data_loader(repeat=True, num_replicas=2, rank=r, seed=1) for r in range(2)]
    assert [len(r) for r in ranks] == [3, 3]  # padded so both ranks step together
    first_epoch = [ids(r, 3) for r in ranks]
    assert sorted(sum(first_epoch[0] + first_epoch[1], [])) == sorted(list(range(10)) + first_epoch[0][0])
    # validation: no repeat, no padding, together exactly the data
    val = [ids(loader.get_data_loader(num_replicas=2, rank=r, seed=1)) for r in range(2)]
    assert sorted(sum(val[0] + val[1], [])) == list(range(10)) and [len(v) for v in val] == [3, 2]


def test_sharded_skip_continues_each_rank():
    loader = pytorch.DataLoader(DATA, batch_size=2, shuffle=True)
    for rank in range(3):
        full = ids(loader.get_data_loader(repeat=True, num_replicas=3, rank=rank, seed=2), 8)
        assert ids(loader.get_data_loader(repeat=True, skip=3, num_replicas=3, rank=rank, seed=2), 5) == full[3:]


def test_argument_errors():
    with pytest.raises(ValueError, match="mutually exclusive with shuffle"):
        pytorch.DataLoader(DATA, shuffle=True, sampler=[1, 2])
    with pytest.raises(ValueError, match="batch_sampler"):
        pytorch.DataLoader(DATA, batch_size=2, batch_sampler=[[1]])
    with pytest.raises(ValueError, match="num_workers"):
        pytorch.DataLoader(DATA, num_workers=-1)

    class Stream(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter(range(3))

    with pytest.raises(TypeError, match="IterableDataset"):
        pytorch.DataLoader(Stream())


def test_worker_processes_give_the_same_batches():
    loader = pytorch.DataLoader(DATA, batch_size=3, shuffle=True, num_workers=2)
    assert ids(loader.get_data_loader(repeat=True, skip=2, seed=4), 4) == \
        ids(pytorch.DataLoader(DATA, batch_size=3, shuffle=True).get_data_loader(repeat=True, skip=2, seed=4), 4)


def test_data_length_and_to_device():
    batch = {"x": torch.zeros(4, 2), "y": [torch.zeros(4)]}
    assert pytorch.data_length(batch) == 4 and pytorch.data_length((torch.zeros(3),)) == 3
    import numpy as np

    moved = pytorch.to_device({"a": np.zeros(2), "b": (torch.ones(1),)}, torch.device("cpu"))
    assert isinstance(moved["a"], torch.Tensor) and isinstance(moved["b"], tuple)
    with pytest.raises(TypeError, match="get_batch_length"):
        pytorch.data_length("text")


def test_train_units():
    assert pytorch.Batch(5).should_stop(10) and not pytorch.Batch(5).should_stop(0)
    assert pytorch.Batch([3, 7]).should_stop(7) and not pytorch.Batch([3, 7]).should_stop(6)
    assert pytorch.Epoch(0).should_stop(1)
    with pytest.raises(TypeError):
        pytorch.Batch("5")


def test_lengths_from_config():
    assert from_length({"batches": 7}) == pytorch.Batch(7)
    assert from_length({"records": 3200}, 32) == pytorch.Batch(100)
    assert from_length({"records": 10}, 32) == pytorch.Batch(1)
    assert from_length({"epochs": 2}) == pytorch.Epoch(2)
    assert from_length({"epochs": 2}, 32, records_per_epoch=640) == pytorch.Batch(40)
    assert from_length({"batches": 0}, zero_is_never=True) is None
    assert from_length(Length("batches", 3)) == pytorch.Batch(3)
    with pytest.raises(ValueError, match="global_batch_size"):
        from_length({"records": 100})
    conf = {"searcher": {"max_length": {"records": 6400}}, "hyperparameters": {"global_batch_size": 64}}
    assert legacy_max_length(conf) == pytorch.Batch(100)
    assert legacy_max_length(conf, target_length=640) == pytorch.Batch(10)
    assert legacy_max_length({"searcher": {"max_length": 12}}) == pytorch.Batch(12)
    with pytest.raises(ValueError, match="max_length"):
        legacy_max_length({"searcher": {}})
