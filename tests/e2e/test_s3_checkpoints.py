"""Checkpoints on S3 end to end (issue 29, acceptance 2): a real master, agent and trials writing to moto's S3 server
(an emulator started once per run by tests/storage_servers.py).

The digits example, trimmed to 80 batches: its checkpoints land under the configured prefix, a pause and an activate
resume from one, `checkpoint download` gets the bucket's bytes, GC leaves exactly the objects of the checkpoints it
kept, the trial's TensorBoard event files are synced beside them, and `e delete` empties the prefix. A 2-slot
distributed PyTorchTrial (gloo on CPU) checkpoints to S3 and resumes from it after a pause.
"""

from __future__ import annotations

import pathlib
import uuid
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from cli_runs import ok
from integration.helpers import (
    DIGITS,
    REPO,
    checkpoints,
    create,
    experiment,
    first_trial,
    live_run,
    logs,
    metrics,
    wait_state,
)
from stalwart.testing import LocalTestCluster
from storage_servers import S3_KEY, S3_SECRET, Emulator

pytestmark = pytest.mark.integration
boto3 = pytest.importorskip("boto3", reason="the S3 tests list the bucket with boto3: pip install 'moto[server]'")

DISTRIBUTED = REPO / "examples" / "distributed"


def _bucket(emulator: Emulator, prefix: str) -> dict[str, bytes]:
    """Every object under `prefix/` in the emulator's bucket: key (relative to the prefix) -> bytes."""
    s3 = boto3.client("s3", endpoint_url=emulator.endpoint, aws_access_key_id=S3_KEY,
                      aws_secret_access_key=S3_SECRET, region_name="us-east-1")
    out: dict[str, bytes] = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=emulator.bucket, Prefix=prefix + "/"):
        for obj in page.get("Contents", []):
            body = s3.get_object(Bucket=emulator.bucket, Key=obj["Key"])["Body"].read()
            out[obj["Key"][len(prefix) + 1:]] = body
    return out


def _config(source: pathlib.Path, storage: dict[str, Any], **changes: Any) -> str:
    cfg = yaml.safe_load(source.read_text())
    cfg.update(checkpoint_storage=storage, max_restarts=0)
    for dotted, value in changes.items():
        node = cfg
        *parents, last = dotted.split("__")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    return yaml.safe_dump(cfg)


def _pause_and_resume(c: LocalTestCluster, exp_id: int, trial_id: int) -> int:
    """Pause once a checkpoint is in, wait for the trial to stop, activate; the steps of the checkpoint paused at."""
    c.wait_for(lambda: checkpoints(c, trial_id), timeout=120, what="a first checkpoint")
    c.client().experiment_action(exp_id, "pause")
    c.wait_for(lambda: experiment(c, exp_id)["trials"][0]["state"] == "PAUSED" and live_run(c, trial_id) is None,
               timeout=120, what="the trial to stop")
    paused_at = max(ck["steps_completed"] for ck in checkpoints(c, trial_id))
    c.client().experiment_action(exp_id, "activate")
    return int(paused_at)


def _completed(c: LocalTestCluster, exp_id: int) -> dict:
    described = wait_state(c, exp_id, {"COMPLETED", "ERROR", "CANCELED"}, timeout=240)
    assert described["experiment"]["state"] == "COMPLETED", c.log("agent-0.log")[-4000:]
    return described


def _checkpoint_keys(objects: dict[str, bytes]) -> dict[str, set[str]]:
    """uuid -> its files, from the objects under the prefix (TensorBoard's left out)."""
    out: dict[str, set[str]] = {}
    for key in objects:
        head, _, rest = key.partition("/")
        if head != "tensorboard":
            out.setdefault(head, set()).add(rest)
    return out


def test_digits_on_s3_resume_download_gc_tensorboard_and_delete(storage_emulator: Callable[[str], Emulator],
                                                              tmp_path: pathlib.Path) -> None:
    emulator = storage_emulator("s3")
    prefix = f"e2e/{uuid.uuid4().hex[:10]}"
    storage = {**emulator.checkpoint_storage(prefix), "save_experiment_best": 0, "save_trial_best": 1,
               "save_trial_latest": 1}
    # 0.1 s a batch: 6 s between the first checkpoint (20) and the end (80), room for a loaded machine's pause
    config = _config(DIGITS / "const.yaml", storage, searcher__max_length={"batches": 80},
                     min_validation_period={"batches": 20}, hyperparameters__batch_sleep=0.1)
    with LocalTestCluster(tmp_path / "home") as c:
        exp_id = create(c, config, DIGITS)
        trial_id = first_trial(c, exp_id)
        paused_at = _pause_and_resume(c, exp_id, trial_id)
        _completed(c, exp_id)

        resumed = [line["log"] for line in logs(c, trial_id) if "resumed from checkpoint" in line["log"]]
        assert len(resumed) == 1 and f"steps_completed={paused_at}" in resumed[0], resumed
        second = [m["steps_completed"] for m in metrics(c, trial_id, "training") if m["trial_run_id"] == 2]
        assert second and min(second) > paused_at

        rows = checkpoints(c, trial_id)
        kept = {ck["uuid"] for ck in rows if ck["state"] == "COMPLETED"}
        gone = {ck["uuid"] for ck in rows if ck["state"] == "DELETED"}
        assert kept and gone and kept | gone == {ck["uuid"] for ck in rows}, rows
        objects = _bucket(emulator, prefix)
        stored = _checkpoint_keys(objects)
        assert set(stored) == kept  # GC deleted exactly the DELETED ones' objects, nothing of the kept ones
        for ck in rows:
            if ck["uuid"] in kept:
                assert stored[ck["uuid"]] == {k for k, size in ck["resources"].items() if not k.endswith("/")}

        latest = max((ck for ck in rows if ck["uuid"] in kept), key=lambda ck: ck["steps_completed"])
        dest = tmp_path / "downloaded"
        ok(c.env, "checkpoint", "download", latest["uuid"], "-o", str(dest), "--mode", "master")
        got = {p.relative_to(dest).as_posix(): p.read_bytes() for p in dest.rglob("*") if p.is_file()}
        want = {k.split("/", 1)[1]: v for k, v in objects.items() if k.startswith(latest["uuid"] + "/")}
        assert got == want

        events = [k for k in objects if k.startswith(f"tensorboard/experiment/{exp_id}/trial/{trial_id}/")]
        assert events and all("tfevents" in k for k in events), sorted(objects)

        ok(c.env, "e", "delete", str(exp_id), "--yes")
        assert _bucket(emulator, prefix) == {}


def test_two_slot_trial_checkpoints_to_s3_and_resumes_from_it(storage_emulator: Callable[[str], Emulator],
                                                            tmp_path: pathlib.Path) -> None:
    emulator = storage_emulator("s3")
    prefix = f"e2e-dist/{uuid.uuid4().hex[:10]}"
    storage = {**emulator.checkpoint_storage(prefix), "save_trial_latest": 10}
    config = _config(DISTRIBUTED / "distributed.yaml", storage, hyperparameters__batch_sleep=0.4)
    with LocalTestCluster(tmp_path / "home", slots=2) as c:
        exp_id = create(c, config, DISTRIBUTED)
        trial_id = first_trial(c, exp_id)
        paused_at = _pause_and_resume(c, exp_id, trial_id)
        assert 0 < paused_at < 40
        _completed(c, exp_id)
        runs = c.client().get(f"/trials/{trial_id}")["runs"]
        assert [r["exit_reason"] for r in runs] == ["PREEMPTED", "COMPLETED"] and runs[0]["slots"] == 2
        second = [m["steps_completed"] for m in metrics(c, trial_id, "training") if m["trial_run_id"] == 2]
        assert second and min(second) == paused_at + 10  # the second run started where the S3 checkpoint left off
        restored = [line for line in logs(c, trial_id) if "restoring trial from checkpoint" in line["log"]]
        assert restored, "the second run did not restore from a checkpoint"

        rows = [ck for ck in checkpoints(c, trial_id) if ck["state"] == "COMPLETED"]
        stored = _checkpoint_keys(_bucket(emulator, prefix))
        assert set(stored) == {ck["uuid"] for ck in rows}
        for ck in rows:
            assert stored[ck["uuid"]] == {k for k in ck["resources"] if not k.endswith("/")}
