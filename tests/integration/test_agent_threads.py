"""Trial processes get their slot's share of the machine's cores as OMP_NUM_THREADS (so trials sharing a
machine do not each start a thread per core), and a value set in the experiment config wins."""

from __future__ import annotations

import os

import pytest

from integration.helpers import create, logs, wait_state
from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

PROBE = "import os, torch\nprint('THREADS', os.environ.get('OMP_NUM_THREADS'), torch.get_num_threads())\n"


def _config(env: list[str]) -> str:
    return ("entrypoint: python3 probe.py\nsearcher: {name: single, metric: x, max_length: 1}\n"
            f"environment:\n  environment_variables: {env}\n")


def _threads_line(c, exp_id: int) -> str:
    d = wait_state(c, exp_id, {"COMPLETED", "ERROR"})
    lines = [entry["log"] for entry in logs(c, d["trials"][0]["id"])]
    assert d["experiment"]["state"] == "COMPLETED", lines
    return next(line for line in lines if line.startswith("THREADS"))


def test_each_trial_gets_its_slots_share_of_the_cores_unless_the_config_sets_it(tmp_path):
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "probe.py").write_text(PROBE)
    share = max(1, len(os.sched_getaffinity(0)) // 2)
    own = 1 if share > 1 else 2  # differs from the share, and torch takes no more threads than there are cores
    with LocalTestCluster(tmp_path / "home", slots=2) as c:
        plain = create(c, _config([]), ctx)
        chosen = create(c, _config([f"OMP_NUM_THREADS={own}"]), ctx)
        assert _threads_line(c, plain) == f"THREADS {share} {share}"
        assert _threads_line(c, chosen) == f"THREADS {own} {own}"
