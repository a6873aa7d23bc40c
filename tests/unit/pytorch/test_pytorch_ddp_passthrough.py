"""Under DDP (2 real gloo workers through our launcher), the model wrap_model() returns is used like the user's.

Mirrors Determined 0.38.1 harness/determined/pytorch/_pytorch_context.py: wrap_model() wraps the model in
`_PyTorchDistributedDataParallel`, whose __getattr__ falls back to `self.module`, so `self.model.my_attr` and
`self.model.my_method()` work with several workers as with one; and harness/determined/pytorch/_metric_utils.py
`_reduce_metrics`: each rank's metric is reduced to one number, then the ranks' numbers (AVG weighted by batches).
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

WORKER = str(pathlib.Path(__file__).with_name("ddp_passthrough_worker.py"))


@pytest.fixture(scope="module")
def ranks(tmp_path_factory) -> dict[int, dict]:
    """Both workers' RESULT lines, by rank (2 slots in one container)."""
    drop = ("STALWART_", "DET_", "TORCHELASTIC_", "RANK", "LOCAL_", "GROUP_", "WORLD_SIZE", "MASTER_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    storage = tmp_path_factory.mktemp("ddp_passthrough")
    cmd = [sys.executable, "-m", "stalwart.harness.torch_distributed", "python3", WORKER, str(storage)]
    done = subprocess.run(cmd, env={**env, "DET_SLOT_IDS": "[0, 1]"}, capture_output=True, text=True, timeout=120,
                          cwd=storage)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    found = {}
    for line in done.stdout.splitlines():
        _, _, payload = line.partition("RESULT ")
        if payload:
            value = json.loads(payload)
            found[value["rank"]] = value
    assert sorted(found) == [0, 1], done.stdout[-2000:]
    return found


def test_the_wrapped_model_passes_attribute_access_to_the_users_module(ranks):
    for rank in (0, 1):
        r = ranks[rank]
        assert (r["size"], r["ddp"], r["module_is_user"]) == (2, True, "ScaledLinear")
        assert (r["my_attr"], r["scale"], r["out_features"], r["has_linear"]) == ("hello", 2.0, 2, True)
        assert "no_such_attr" in r["missing"]  # a name neither has is still an AttributeError naming it


def test_a_user_method_called_through_the_wrapper_trains(ranks):
    for rank in (0, 1):
        losses = ranks[rank]["method_losses"]
        assert len(losses) == 2 and losses[1] < losses[0]  # the method's loss went through backward and a step
    assert ranks[0]["method_losses"] == ranks[1]["method_losses"]  # same data, replicas kept equal by DDP


def test_array_metrics_reduce_to_one_number_per_rank_then_across_ranks(ranks):
    # 2 global batches of 4 are one epoch. Each rank validates 2 batches: "one" is [rank] (AVG: 0 and 1,
    # weighted 2:2 -> 0.5), "three" is [rank, rank+10, rank+20] (MAX -> 21), "total" is [1, 2] (SUM: 6 per rank -> 12).
    assert ranks[0]["validations"] == [{"batches": 2, "epochs": 1, "one": 0.5, "three": 21.0, "total": 12.0}]
    assert ranks[1]["validations"] == []  # only the chief reports


def test_training_metrics_average_every_element_of_every_rank(ranks):
    # Determined: _average_training_metrics (each batch's values averaged over the ranks, Nones left out), then
    # make_metrics. "pair" is [rank, rank + 2] (mean of 0, 2, 1, 3 -> 1.5); "rank0_only" is 3.0 on rank 0, None on 1.
    [report] = ranks[0]["trainings"]
    assert (report["pair"], report["rank0_only"]) == (1.5, 3.0)
    assert ranks[1]["trainings"] == []
