"""PyTorchTrial under DDP with 2 real gloo workers (our launcher, off-cluster): wrapping, sharding, metrics,
checkpoints.

Each test runs twice: both workers in one container (2 slots), and one worker in each of two
containers (two launcher processes on loopback, as the master starts them across agents).
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from stalwart.testing.cluster import rendezvous_port
from stalwart.testing.gang import wait_for_gang

WORKER = str(pathlib.Path(__file__).with_name("ddp_worker.py"))


def _launch(storage: pathlib.Path, containers: int) -> str:
    """Run ddp_worker.py on 2 workers: 2 slots in one container, or two launchers of 1 slot as 2 containers."""
    drop = ("STALWART_", "DET_", "TORCHELASTIC_", "RANK", "LOCAL_", "GROUP_", "WORLD_SIZE", "MASTER_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    cmd = [sys.executable, "-m", "stalwart.harness.torch_distributed", "python3", WORKER, str(storage)]
    if containers == 1:
        envs = [{**env, "DET_SLOT_IDS": "[0, 1]"}]
    else:
        shared = {"STALWART_NUM_CONTAINERS": "2", "STALWART_CONTAINER_ADDRS": '["127.0.0.1", "127.0.0.1"]',
                  "STALWART_RENDEZVOUS_PORT": str(rendezvous_port()), "DET_SLOT_IDS": "[0]"}
        envs = [{**env, **shared, "STALWART_CONTAINER_RANK": str(r)} for r in (0, 1)]
    procs = [subprocess.Popen(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for e in envs]
    outs = wait_for_gang(procs, timeout=240)
    return "\n".join(o for o, _ in outs)


@pytest.fixture(scope="module", params=[1, 2], ids=["one-container", "two-containers"])
def ranks(request, tmp_path_factory) -> dict:
    storage = tmp_path_factory.mktemp("ddp") / "checkpoints"
    found: dict = {}
    for line in _launch(storage, request.param).splitlines():
        prefix, _, payload = line.partition("RESULT ")
        if payload:
            value = json.loads(payload)
            assert prefix.strip() == f"[rank={value['rank']}]"
            found[value["rank"]] = value
    assert sorted(found) == [0, 1]
    found["storage"] = storage
    return found


def test_context_wraps_the_model_in_ddp_and_splits_the_global_batch(ranks):
    for rank in (0, 1):
        r = ranks[rank]
        assert (r["size"], r["ddp"], r["per_slot"], r["global"]) == (2, True, 8, 16)


def test_each_global_batch_is_split_between_the_ranks_without_overlap(ranks):
    seen = []
    for step in range(6):  # 6 global batches of 16 are exactly one epoch of the 96 records
        b0, b1 = ranks[0]["batches"][step], ranks[1]["batches"][step]
        assert b0[0] == b1[0] == step and len(b0[1]) == len(b1[1]) == 8
        assert not set(b0[1]) & set(b1[1])
        seen += b0[1] + b1[1]
    assert sorted(seen) == list(range(96))


def test_metrics_are_averaged_across_ranks(ranks):
    for rank in (0, 1):
        training = ranks[rank]["training"]
        assert [m["rank"] for m in training] == [0.5, 0.5]  # each rank reports its own rank: the mean is 0.5
        validation = ranks[rank]["validation"]
        assert validation and all(m["records"] == pytest.approx(8.0) for m in validation)
    assert ranks[0]["training"] == ranks[1]["training"] and ranks[0]["validation"] == ranks[1]["validation"]


def test_only_the_chief_writes_checkpoints_and_every_rank_resumes_from_them(ranks):
    assert ranks[0]["checkpoints"] == ranks[1]["checkpoints"] and len(ranks[0]["checkpoints"]) == 2
    assert sorted(p.name for p in ranks["storage"].iterdir()) == sorted(
        ranks[0]["checkpoints"] + _later_checkpoints(ranks))
    for rank in (0, 1):
        assert [b[0] for b in ranks[rank]["resumed_batches"]] == [6, 7, 8]  # training went on at batch 6
        assert ranks[rank]["loaded_phase2"] == ranks[0]["weights_phase1"]  # both loaded the chief's weights
    assert ranks[0]["weights_phase1"] == ranks[1]["weights_phase1"]  # DDP kept the replicas equal


def test_a_stop_asked_by_one_worker_stops_all_at_the_same_boundary(ranks):
    for rank in (0, 1):  # rank 1 asked during batch 10; everyone stops at the next boundary (batch 12)
        assert ranks[rank]["stopped_batches"] == [9, 10, 11]


def _later_checkpoints(ranks) -> list[str]:
    extra = [p.name for p in ranks["storage"].iterdir() if p.name not in ranks[0]["checkpoints"]]
    assert len(extra) == 2  # phase 2 (batch 9) and phase 3 (its stop at 12) wrote one checkpoint each, once
    return extra
