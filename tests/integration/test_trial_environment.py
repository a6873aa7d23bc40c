"""A trial's environment is clean, and the secrets it was handed never reach its stored logs (issue 25, hole 12).

A real local cluster whose agent runs with SECRET_AGENT_VAR, CUDA_TEST_VAR, NCCL_TEST_VAR, https_proxy and a
locale in its environment runs one trial of `env_probe/probe.py`, which writes down its environment and prints
its allocation's token and its owner session. The trial sees the base (PATH, LANG, ...), what the agent's
default `task_env_passthrough` lists (CUDA_*, NCCL_*, the proxies), what Stalwart sets and what the experiment
config asks; not SECRET_AGENT_VAR. Its logs, read through the API, hold neither token: each shows `********`.
"""

from __future__ import annotations

import json
import pathlib
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from helpers import create, first_trial, logs, wait_state

from stalwart.master.logs import MASK
from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

PROBE = pathlib.Path(__file__).resolve().parent / "env_probe"
AGENT_ENV = {"SECRET_AGENT_VAR": "x", "CUDA_TEST_VAR": "y", "NCCL_TEST_VAR": "n", "https_proxy": "http://proxy:3128",
             "LC_TEST_LOCALE": "C.UTF-8"}
CONFIG = """name: environment
entrypoint: python3 probe.py {out}
environment:
  environment_variables: [CONFIG_VAR=from-the-config]
searcher: {{name: single, metric: loss, max_length: {{batches: 1}}}}
max_restarts: 0
"""


@dataclass
class Ran:
    env: dict[str, str]
    lines: list[str]


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ran]:
    home = tmp_path_factory.mktemp("environment") / "home"
    out = tmp_path_factory.mktemp("environment-probe") / "env.json"
    cluster = LocalTestCluster(home)
    cluster.env.update(AGENT_ENV)
    with cluster:
        exp_id = create(cluster, CONFIG.format(out=out), PROBE)
        state = wait_state(cluster, exp_id, ("COMPLETED", "ERROR", "CANCELED"))["experiment"]["state"]
        trial_id = first_trial(cluster, exp_id)
        lines = [str(entry.get("log", "")) for entry in logs(cluster, trial_id)]
        assert state == "COMPLETED", "\n".join(lines[-40:]) + cluster.log("agent-0.log")[-3000:]
        yield Ran(json.loads(out.read_text()), lines)


def test_the_trial_gets_the_base_the_passthrough_the_task_and_the_config(ran: Ran) -> None:
    env = ran.env
    for name, value in AGENT_ENV.items():
        if name != "SECRET_AGENT_VAR":
            assert env.get(name) == value, f"${name} did not reach the trial"
    assert env["CONFIG_VAR"] == "from-the-config"
    assert env["STALWART_ALLOCATION_ID"] and env["DET_TRIAL_ID"] and env["STALWART_INFO_FILE"]
    assert env["PATH"] and env["HOME"]


def test_the_trial_does_not_inherit_the_rest_of_the_agents_environment(ran: Ran) -> None:
    assert "SECRET_AGENT_VAR" not in ran.env
    for name in ("STALWART_HOME", "STALWART_CLUSTER_TOKEN", "PYTEST_CURRENT_TEST"):
        assert name not in ran.env, f"${name} reached the trial"


def test_the_tokens_a_trial_prints_are_masked_in_its_stored_logs(ran: Ran) -> None:
    text = "\n".join(ran.lines)
    assert "the probe ran" in text, text[-2000:]
    for secret in (ran.env["STALWART_ALLOCATION_TOKEN"], ran.env["STALWART_USER_TOKEN"]):
        assert secret not in text
    assert f"allocation token: {MASK}" in text
    assert f"owner session: {MASK}" in text
    assert f"both, on stderr: {MASK}|{MASK}|{MASK}" in text
