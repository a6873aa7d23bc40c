"""Tiny finished experiments whose trials wrote TensorBoard event files, for the TensorBoard tests (issue 32).

Each is a single trial of a Core API script that reports a `loss` for a few steps and exits; the harness writes the
reports as TensorBoard scalars into the experiment's checkpoint storage (shared_fs: in place).
"""

from __future__ import annotations

import base64
import pathlib
import tempfile

from stalwart.context import pack_context
from stalwart.testing import LocalTestCluster

TRAIN = """\
from stalwart import core

with core.init() as ctx:
    for step in range(1, 6):
        ctx.train.report_training_metrics(step, {"loss": 1.0 / step})
    ctx.train.report_validation_metrics(5, {"validation_loss": 0.2})
"""
CONFIG = """\
name: {name}
entrypoint: python3 train.py
searcher: {{name: single, metric: validation_loss, max_length: {{batches: 5}}}}
max_restarts: 0
"""


def context_b64() -> str:
    """The script's context directory, packed (base64)."""
    with tempfile.TemporaryDirectory() as tmp:
        (pathlib.Path(tmp) / "train.py").write_text(TRAIN)
        return base64.b64encode(pack_context(tmp).data).decode()


def finished_experiments(c: LocalTestCluster, count: int, prefix: str = "tb") -> list[tuple[int, int]]:
    """`count` experiments created as the admin and run to COMPLETED: (experiment id, its trial's id) each."""
    client = c.client()
    context = context_b64()
    ids = [int(client.post("/experiments", {"config": CONFIG.format(name=f"{prefix}-{i}"), "context": context,
                                            "activate": True})["experiment"]["id"]) for i in range(count)]
    out = []
    for exp_id in ids:
        done = c.wait_for(lambda e=exp_id: (d := client.get(f"/experiments/{e}"))["experiment"]["state"]
                          in ("COMPLETED", "ERROR", "CANCELED") and d, timeout=120, what=f"experiment {exp_id}")
        assert done["experiment"]["state"] == "COMPLETED", c.log("agent-0.log")[-3000:]
        out.append((exp_id, int(done["trials"][0]["id"])))
    return out


def event_dir(c: LocalTestCluster, exp_id: int, trial_id: int) -> pathlib.Path:
    """Where the trial's event files are in the cluster's shared_fs checkpoint storage."""
    return c.home / "checkpoints" / "tensorboard" / "experiment" / str(exp_id) / "trial" / str(trial_id)
