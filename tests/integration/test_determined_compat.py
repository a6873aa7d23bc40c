"""Determined experiment directories run unchanged: `import determined` inside trials is Stalwart's."""

from __future__ import annotations

import subprocess
import sys

import pytest

from integration.helpers import (
    REPO,
    create,
    first_trial,
    logs,
    pause_after_first_checkpoint,
    wait_state,
)
from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

CORE_API = REPO / "examples" / "determined" / "core_api"


@pytest.fixture(scope="session")
def real_determined(tmp_path_factory):
    """The real determined==0.38.1 package files, installed into a directory that goes on PYTHONPATH."""
    target = tmp_path_factory.mktemp("real-determined")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target),
                    "determined==0.38.1"], check=True, timeout=600)
    return target


def test_real_determined_is_installed_but_trials_import_stalwarts(tmp_path, real_determined):
    probe = subprocess.run([sys.executable, "-c",
                            "import importlib.util; print(importlib.util.find_spec('determined').origin)"],
                           env={"PYTHONPATH": str(real_determined), "PATH": "/usr/bin:/bin"},
                           capture_output=True, text=True)
    assert str(real_determined) in probe.stdout, probe.stderr  # outside trials: the real package

    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "probe.py").write_text(
        "import determined, determined.core\n"
        "from determined import pytorch\n"
        "print('DETERMINED', determined.__version__, determined.__file__)\n"
        "print('CLUSTER', determined.get_cluster_info().trial.trial_id)\n"
        "try:\n    import determined.horovod\nexcept ImportError as err:\n    print('HOROVOD', err)\n"
    )
    config = ("entrypoint: python3 probe.py\nsearcher: {name: single, metric: x, max_length: 1}\n"
              "environment:\n  environment_variables: [MY_FLAG=1]\n")
    cluster = LocalTestCluster(tmp_path / "home")
    cluster.env["PYTHONPATH"] = str(real_determined)
    with cluster as c:
        exp_id = create(c, config, ctx)
        d = wait_state(c, exp_id, {"COMPLETED", "ERROR"})
        lines = [entry["log"] for entry in logs(c, d["trials"][0]["id"])]
    assert d["experiment"]["state"] == "COMPLETED", lines
    assert any(line.startswith("DETERMINED 0.38.1+stalwart") and "stalwart/harness/compat" in line
               for line in lines), lines
    assert f"CLUSTER {d['trials'][0]['id']}" in lines
    assert any(line.startswith("HOROVOD determined.horovod is not implemented by Stalwart") for line in lines), lines


def test_core_api_example_trains_pauses_resumes_and_completes(cluster):
    c = cluster
    exp_id = create(c, (CORE_API / "const.yaml").read_text().replace("batch_sleep: 0.0", "batch_sleep: 0.02"),
                    CORE_API)
    trial_id = first_trial(c, exp_id)
    pause_after_first_checkpoint(c, exp_id, trial_id)
    d = wait_state(c, exp_id, {"COMPLETED", "ERROR"})
    assert d["experiment"]["state"] == "COMPLETED"
    trial = d["trials"][0]
    assert trial["latest_validation"]["metrics"]["accuracy"] > 0.9
    lines = [entry["log"] for entry in logs(c, trial_id)]
    assert any("preempted at steps_completed=" in line for line in lines)
    assert any("resumed at steps_completed=" in line and "steps_completed=0" not in line for line in lines)


def test_invalid_hp_ends_the_trial_as_an_early_exit(cluster):
    c = cluster
    exp_id = create(c, (CORE_API / "const.yaml").read_text().replace("invalid: false", "invalid: true"), CORE_API)
    d = wait_state(c, exp_id, {"COMPLETED", "ERROR"})
    trial = d["trials"][0]
    assert trial["early_exit"] == "INVALID_HP" and trial["restarts"] == 0
    # single has no other hyperparameters to try: the search fails, saying why
    assert d["experiment"]["state"] == "ERROR"
    assert "InvalidHP" in d["experiment"]["error_message"]
