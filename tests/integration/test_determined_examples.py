"""Determined's tutorial shapes (examples/determined/) run unchanged on a cluster, resume exactly,
and are valid Determined code: they also run off-cluster with the real determined==0.38.1."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import sysconfig

import pytest

from integration.helpers import REPO, checkpoints, create, experiment, first_trial, live_run, metrics, wait_state

pytestmark = pytest.mark.integration

EXAMPLES = REPO / "examples" / "determined"
LEGACY = EXAMPLES / "legacy_trial"
SCRIPT = EXAMPLES / "trainer_script"


@pytest.mark.parametrize("config, batches", [("const.yaml", 200), ("const_epochs.yaml", 3 * 1437 // 32)])
def test_legacy_trial_class_runs_with_lengths_in_batches_and_epochs(cluster, config, batches):
    exp_id = create(cluster, (LEGACY / config).read_text(), LEGACY)
    d = wait_state(cluster, exp_id, {"COMPLETED", "ERROR"})
    assert d["experiment"]["state"] == "COMPLETED", d["experiment"]["error_message"]
    trial = d["trials"][0]
    vals = metrics(cluster, trial["id"], "validation")
    assert vals[-1]["steps_completed"] == batches and vals[-1]["metrics"]["batches"] == batches
    assert vals[-1]["metrics"]["accuracy"] > 0.85
    assert checkpoints(cluster, trial["id"])


def test_trainer_script_runs_with_its_callbacks_and_scheduler(cluster):
    exp_id = create(cluster, (SCRIPT / "const.yaml").read_text(), SCRIPT)
    d = wait_state(cluster, exp_id, {"COMPLETED", "ERROR"})
    assert d["experiment"]["state"] == "COMPLETED", d["experiment"]["error_message"]
    train = metrics(cluster, d["trials"][0]["id"], "training")
    assert max(m["metrics"]["epochs"] for m in train) == 2
    lrs = [m["metrics"]["lr"] for m in train]
    assert lrs[0] == pytest.approx(1.0) and lrs[-1] == pytest.approx(0.7)  # STEP_EVERY_EPOCH took effect


def _curve(c, trial_id: int, group: str) -> list[tuple[int, dict]]:
    return [(m["steps_completed"], m["metrics"]) for m in metrics(c, trial_id, group)]


def test_pause_and_activate_resume_exactly(cluster):
    c = cluster
    config = (LEGACY / "const.yaml").read_text()
    straight = create(c, config, LEGACY)
    wait_state(c, straight, "COMPLETED")
    reference = first_trial(c, straight)

    paused = create(c, config.replace("batch_sleep: 0.0", "batch_sleep: 0.03"), LEGACY)
    trial_id = first_trial(c, paused)
    c.wait_for(lambda: any(s >= 40 for s, _ in _curve(c, trial_id, "training")), what="some training")
    c.cli("e", "pause", str(paused), check=True)
    c.wait_for(lambda: experiment(c, paused)["trials"][0]["state"] == "PAUSED" and live_run(c, trial_id) is None,
               what="the pause")
    stopped_at = max(ck["steps_completed"] for ck in checkpoints(c, trial_id))
    assert 0 < stopped_at < 200
    c.cli("e", "activate", str(paused), check=True)
    wait_state(c, paused, "COMPLETED")
    assert len(c.client().get(f"/trials/{trial_id}")["runs"]) == 2
    for group in ("training", "validation"):
        assert _curve(c, trial_id, group) == _curve(c, reference, group), group


@pytest.fixture(scope="session")
def determined_venv(tmp_path_factory):
    """A separate virtual environment with the real determined==0.38.1 (and torch, sklearn).

    torch, scikit-learn and tensorboard come from this test run's own environment, made visible with a .pth
    file after the new environment's own site-packages: installing torch again took 10-12 minutes on a
    loaded 2-core machine. Stalwart's `determined` is not among them (trials get it through PYTHONPATH only), so
    `import determined` finds the real one installed here."""
    venv = tmp_path_factory.mktemp("det-venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    ours = sysconfig.get_paths()["purelib"]
    where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    theirs = subprocess.run([str(venv / "bin" / "python"), "-c", where], check=True, capture_output=True,
                            text=True).stdout.strip()
    pathlib.Path(theirs, "stalwart-test-run.pth").write_text(ours + "\n")
    # --no-compile: byte-compiling is most of an install's CPU, and this runs beside other tests
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-compile"]
    subprocess.run([*pip, "torch==2.13.0", "determined==0.38.1", "scikit-learn", "tensorboard"], check=True,
                   timeout=900)
    return venv / "bin" / "python"


def _run_real(python, cwd, *args, timeout=300):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STALWART_", "DET_", "PYTHONPATH"))}
    env["HOME"] = str(cwd.parent / "home")
    return subprocess.run([str(python), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.timeout(900)  # its fixture installs determined into a fresh venv first (see above)
def test_examples_are_valid_determined_code(determined_venv, tmp_path):
    check = _run_real(determined_venv, tmp_path, "-c", "import determined; print(determined.__version__)")
    assert check.stdout.strip() == "0.38.1", check.stderr
    for example, args in ((EXAMPLES / "core_api", ["train.py"]), (SCRIPT, ["train.py"])):
        work = tmp_path / example.name
        subprocess.run(["cp", "-r", str(example), str(work)], check=True)
        res = _run_real(determined_venv, work, *args)
        assert res.returncode == 0, f"{example.name}:\n{res.stdout[-2000:]}\n{res.stderr[-4000:]}"
    work = tmp_path / "legacy"
    subprocess.run(["cp", "-r", str(LEGACY), str(work)], check=True)
    local = (
        "import determined as det\nfrom determined import pytorch\nfrom model_def import DigitsTrial\n"
        "hp = {'global_batch_size': 32, 'learning_rate': 0.05, 'hidden': 64}\n"
        "with pytorch.init(hparams=hp, exp_conf={'hyperparameters': hp}) as ctx:\n"
        "    pytorch.Trainer(DigitsTrial(ctx), ctx).fit(max_length=pytorch.Batch(60),"
        " validation_period=pytorch.Batch(30))\n"
    )
    res = _run_real(determined_venv, work, "-c", local)
    assert res.returncode == 0, f"{res.stdout[-2000:]}\n{res.stderr[-4000:]}"
