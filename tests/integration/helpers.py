"""Helpers for integration tests: create experiments, wait for states, find trial processes."""

from __future__ import annotations

import base64
import io
import os
import pathlib
import tarfile

import yaml

from stalwart.context import pack_context

REPO = pathlib.Path(__file__).resolve().parents[2]
DIGITS = REPO / "examples" / "digits"


def digits_config(**changes) -> str:
    cfg = yaml.safe_load((DIGITS / "const.yaml").read_text())
    for dotted, value in changes.items():
        node = cfg
        *parents, last = dotted.split("__")
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = value
    return yaml.safe_dump(cfg)


def create(cluster, config_text: str, context_dir: pathlib.Path = DIGITS, activate: bool = True) -> int:
    reply = cluster.client().post("/experiments", {
        "config": config_text,
        "context": base64.b64encode(pack_context(context_dir).data).decode(),
        "activate": activate,
    })
    return reply["experiment"]["id"]


def experiment(cluster, exp_id: int) -> dict:
    return cluster.client().get(f"/experiments/{exp_id}")


def wait_state(cluster, exp_id: int, states, timeout: float = 180) -> dict:
    states = {states} if isinstance(states, str) else set(states)
    return cluster.wait_for(
        lambda: (d := experiment(cluster, exp_id))["experiment"]["state"] in states and d,
        timeout=timeout, what=f"experiment {exp_id} to reach {states}",
    )


def first_trial(cluster, exp_id: int) -> int:
    def first_id() -> int | None:
        trials = experiment(cluster, exp_id)["trials"]
        return trials[0]["id"] if trials else None

    return cluster.wait_for(first_id, what="the first trial")


def checkpoints(cluster, trial_id: int) -> list[dict]:
    return cluster.client().get(f"/trials/{trial_id}/checkpoints")["checkpoints"]


def metrics(cluster, trial_id: int, group: str) -> list[dict]:
    return cluster.client().get(f"/trials/{trial_id}/metrics", group=group)["metrics"]


def logs(cluster, trial_id: int) -> list[dict]:
    return list(cluster.client().stream_lines(f"/trials/{trial_id}/logs", follow="false"))


def training_pids(allocation_id: str) -> list[int]:
    """PIDs of processes running inside this allocation whose command line runs train.py."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            env = pathlib.Path(f"/proc/{entry}/environ").read_bytes()
            cmd = pathlib.Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if f"STALWART_ALLOCATION_ID={allocation_id}".encode() in env and b"train.py" in cmd and b"sh\x00-c" not in cmd:
            found.append(int(entry))
    return found


def live_run(cluster, trial_id: int) -> dict | None:
    runs = cluster.client().get(f"/trials/{trial_id}")["runs"]
    live = [r for r in runs if r["state"] == "RUNNING"]
    return live[-1] if live else None


def pause_after_first_checkpoint(cluster, exp_id: int, trial_id: int, checkpoint_timeout: float = 120,
                                 pause_timeout: float = 120) -> int:
    """Wait for the trial's first checkpoint, pause the experiment until the trial is PAUSED with no live run, and
    activate it again: the steps_completed of the latest checkpoint, where the next run resumes."""
    cluster.wait_for(lambda: checkpoints(cluster, trial_id), timeout=checkpoint_timeout, what="the first checkpoint")
    cluster.cli("e", "pause", str(exp_id), check=True)
    cluster.wait_for(lambda: experiment(cluster, exp_id)["trials"][0]["state"] == "PAUSED"
                     and live_run(cluster, trial_id) is None, timeout=pause_timeout, what="the pause")
    stopped_at = max(ck["steps_completed"] for ck in checkpoints(cluster, trial_id))
    cluster.cli("e", "activate", str(exp_id), check=True)
    return stopped_at


def one_file_context_b64(name: str, text: str) -> str:
    """A context of one file, `name` holding `text`, as the base64 .tgz the experiments API takes."""
    data = text.encode()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tgz:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tgz.addfile(info, io.BytesIO(data))
    return base64.b64encode(buffer.getvalue()).decode()
