"""Acceptance 4 of issue 29: `stalwart e set gc-policy` on a finished 6-trial search keeps exactly what the new
policy says, and its dry run listed exactly those deletions.

A real master and agent run a grid of six tiny Core API trials; each reports a validation loss from a fixed table
and saves a checkpoint at steps 1, 2 and 3 (the search's own policy keeps all 18). The new policy (the 2 best of the
experiment, each trial's best, each trial's latest) must delete exactly the six checkpoints worked out by hand below:
the CLI's dry run (no terminal, no --yes: it lists them and exits 2) and the API's name exactly those, answering
"n" at a terminal changes nothing, and after --yes exactly those rows read DELETED and their directories are gone
from storage while the other twelve remain.
"""

from __future__ import annotations

import os
import pathlib
import pty
import subprocess
import sys
import time

import pytest
import yaml

from integration.helpers import one_file_context_b64
from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

LOSS = {  # x: the validation loss at steps 1, 2, 3 (None: no validation at that step)
    0: (0.10, 0.20, 0.90),  # the experiment's two best (steps 1 and 2); its best at 1, its latest at 3
    1: (0.50, 0.30, 0.60),  # best at 2
    2: (0.80, 0.70, 0.40),  # best at 3, which is its latest too
    3: (0.35, 0.95, 0.85),  # best at 1
    4: (0.55, 0.65, 0.75),  # best at 1
    5: (0.60, None, 0.99),  # best at 1; step 2 has no number, so it is never "best"
}
KEPT = {(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3), (3, 1), (3, 3), (4, 1), (4, 3), (5, 1), (5, 3)}
"""(x, step) of what save_experiment_best=2, save_trial_best=1, save_trial_latest=1 keeps; the other six go."""
POLICY = ["--save-experiment-best", "2", "--save-trial-best", "1", "--save-trial-latest", "1"]

TRIAL = f"""import json
from determined import core

LOSS = {LOSS!r}

with core.init() as ctx:
    x = ctx.info.trial.hparams["x"]
    for op in ctx.searcher.operations():
        for step, loss in enumerate(LOSS[x], 1):
            if loss is not None:
                ctx.train.report_validation_metrics(step, {{"loss": loss}})
            with ctx.checkpoint.store_path({{"steps_completed": step}}) as (path, uuid):
                (path / "state.json").write_text(json.dumps({{"x": x, "step": step}}))
            op.report_progress(step)
        op.report_completed(LOSS[x][2])
"""


def context_b64() -> str:
    return one_file_context_b64("gc_trial.py", TRIAL)


def answered_at_a_terminal(cluster: LocalTestCluster, answer: str, *args: str) -> tuple[int, str]:
    """The CLI run with a terminal on standard input that answers its question with `answer`: (exit, its output)."""
    leader, follower = pty.openpty()
    with subprocess.Popen([sys.executable, "-m", "stalwart.cli.main", *args], env=cluster.env, stdin=follower,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        os.close(follower)
        os.write(leader, f"{answer}\n".encode())
        out, _ = proc.communicate(timeout=60)
    os.close(leader)
    return proc.returncode, out


def stalwart(cluster: LocalTestCluster, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI as a user runs it from a script: no terminal on standard input."""
    return subprocess.run([sys.executable, "-m", "stalwart.cli.main", *args], env=cluster.env, capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)


@pytest.mark.timeout(180)
def test_set_gc_policy_on_a_finished_search_deletes_exactly_what_its_dry_run_listed(tmp_path: pathlib.Path) -> None:
    storage = tmp_path / "checkpoints"
    config = {"name": "gc-policy", "entrypoint": "python3 gc_trial.py", "max_restarts": 0,
              "searcher": {"name": "grid", "metric": "loss", "smaller_is_better": True, "max_length": 3},
              "hyperparameters": {"x": {"type": "categorical", "vals": sorted(LOSS)}},
              "checkpoint_storage": {"type": "shared_fs", "host_path": str(storage), "save_trial_latest": 10}}
    with LocalTestCluster(tmp_path / "cluster", slots=3) as cluster, cluster.client() as client:
        created = client.create_experiment(yaml.safe_dump(config), context_b64()).experiment
        assert created is not None
        deadline = time.monotonic() + 120
        while not (detail := client.get_experiment(created.id)).experiment.state.terminal:
            assert time.monotonic() < deadline, "the search did not end"
            time.sleep(0.2)
        assert detail.experiment.state.value == "COMPLETED", cluster.log("master.log")[-3000:]
        x_of = {trial.id: trial.hparams["x"] for trial in detail.trials}
        uuid_of = {(x_of[c.trial_id or 0], c.steps_completed): c.uuid
                   for c in client.experiment_checkpoints(created.id).checkpoints}
        assert len(uuid_of) == 18 and all((storage / u).is_dir() for u in uuid_of.values())
        doomed = {uuid_of[key] for key in uuid_of if key not in KEPT}
        assert len(doomed) == 6

        dry = stalwart(cluster, "e", "set", "gc-policy", str(created.id), *POLICY)
        assert dry.returncode == 2 and "pass --yes" in dry.stderr, dry.stdout + dry.stderr
        listed, _, kept = dry.stdout.partition("Kept")
        assert {u for u in uuid_of.values() if u in listed} == doomed, dry.stdout
        assert {u for u in uuid_of.values() if u in kept} == set(uuid_of.values()) - doomed, dry.stdout
        preview = client.change_gc_policy(created.id, save_experiment_best=2, save_trial_best=1, save_trial_latest=1,
                                          dry_run=True)
        assert {c.uuid for c in preview.to_delete} == doomed
        assert {c.uuid: c.reason for c in preview.to_keep}[uuid_of[(0, 2)]] == "best of the experiment (2nd)"
        assert {c.state for c in client.experiment_checkpoints(created.id).checkpoints} == {"COMPLETED"}

        code, asked = answered_at_a_terminal(cluster, "n", "e", "set", "gc-policy", str(created.id), *POLICY)
        assert code == 0 and "Apply this policy?" in asked and "as they were" in asked, asked
        assert {c.state for c in client.experiment_checkpoints(created.id).checkpoints} == {"COMPLETED"}

        applied = stalwart(cluster, "e", "set", "gc-policy", str(created.id), *POLICY, "--yes")
        assert applied.returncode == 0, applied.stdout + applied.stderr
        assert "deleted 6 checkpoint(s) and keeps 12" in applied.stdout
        states = {c.uuid: c.state for c in client.experiment_checkpoints(created.id).checkpoints}
        assert {u for u, s in states.items() if s == "DELETED"} == doomed
        assert {u for u, s in states.items() if s == "COMPLETED"} == set(uuid_of.values()) - doomed
        assert {u for u in uuid_of.values() if (storage / u).exists()} == set(uuid_of.values()) - doomed
        stored = client.get_experiment(created.id).config["checkpoint_storage"]
        assert (stored["save_experiment_best"], stored["save_trial_best"], stored["save_trial_latest"]) == (2, 1, 1)
