"""`experiment create --test-mode [--local]`: run a short smoke test and show each stage's outcome."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from typing import Any

import yaml

from stalwart.api.states import ExperimentState
from stalwart.cli import output
from stalwart.cli.follow import format_line, wait_for_first_trial
from stalwart.client import Client

STAGES = ("Scheduling", "Training", "Validation", "Checkpointing")


def _reached(client: Client, trial_id: int) -> set[str]:
    d = client.get_trial(trial_id)
    got = set()
    if any(r.started_at for r in d.runs):
        got.add("Scheduling")
    groups = {m.group for m in client.trial_metrics(trial_id, limit=1000).metrics}
    if "training" in groups:
        got.add("Training")
    if "validation" in groups:
        got.add("Validation")
    if client.trial_checkpoints(trial_id).checkpoints:
        got.add("Checkpointing")
    return got


def watch_stages(client: Client, exp_id: int, timeout: float = 1800) -> int:
    """Print each stage as the trial reaches it; on failure, the trial's last log lines (the traceback)."""
    trial_id = wait_for_first_trial(client, exp_id, timeout)
    shown: set[str] = set()
    deadline = time.monotonic() + timeout
    state = ExperimentState.ACTIVE
    while trial_id is not None and time.monotonic() < deadline:
        state = client.get_experiment(exp_id).experiment.state
        reached = _reached(client, trial_id)
        for stage in STAGES:
            if stage in reached and stage not in shown:
                output.console.print(f"  ✔ {stage}")
                shown.add(stage)
        if state.terminal:
            break
        time.sleep(0.3)
    missing = [s for s in STAGES if s not in shown]
    if state is ExperimentState.COMPLETED and not missing:
        output.console.print(f"Test experiment {exp_id} passed every stage.")
        return 0
    failed = missing[0] if missing else "Completion"
    output.console.print(f"  ✘ {failed} failed: experiment {exp_id} ended {state.value}.")
    if trial_id is not None:
        lines = list(client.stream_trial_logs(trial_id))
        output.console.print("Last lines of the trial's log:")
        for entry in lines[-40:]:
            output.console.print(format_line(entry))
    return 1


def run_local(config: dict[str, Any], context_dir: str) -> int:
    """Run the test-mode config's entrypoint on this machine, with no master."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        yaml.safe_dump(config, f)
    output.console.print(f"Running {config.get('entrypoint')!r} locally in {context_dir} (no master)...")
    try:
        code = subprocess.call([sys.executable, "-m", "stalwart.harness.launch", "--local", f.name], cwd=context_dir)
    finally:
        os.unlink(f.name)
    if code == 0:
        output.console.print("Local test passed: training, validation and checkpointing ran without error.")
    else:
        output.console.print(f"Local test failed: the entrypoint exited with code {code} (traceback above).")
    return code
