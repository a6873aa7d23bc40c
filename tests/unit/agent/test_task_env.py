"""A task's processes start from a clean environment (issue 25, hole 12): the base, what the agent config's
`task_env_passthrough` matches, never the agent's own STALWART_/DET_ variables; the agent config file is checked."""

from __future__ import annotations

import subprocess
import sys

import pytest

from stalwart.agent.task_env import inherited
from stalwart.api.errors import ConfigError
from stalwart.config.agent import DEFAULT_TASK_ENV_PASSTHROUGH, load_agent_config

AGENT_ENV = {
    "PATH": "/usr/bin", "HOME": "/home/a", "USER": "a", "LOGNAME": "a", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
    "TZ": "UTC", "TMPDIR": "/tmp", "PYTHONPATH": "/src",
    "LD_LIBRARY_PATH": "/usr/local/cuda/lib64", "CUDA_VISIBLE_DEVICES": "0,1", "CUDA_HOME": "/usr/local/cuda",
    "NCCL_DEBUG": "INFO", "http_proxy": "http://p:1", "HTTPS_PROXY": "http://p:2", "no_proxy": "localhost",
    "SECRET_AGENT_VAR": "x", "AWS_SECRET_ACCESS_KEY": "k", "STALWART_CLUSTER_TOKEN": "t", "STALWART_HOME": "/h",
    "DET_MASTER": "http://m", "HF_HOME": "/cache/hf", "PYTHONSTARTUP": "/x.py", "cuda_lower": "no",
}


def test_the_default_gives_the_base_and_what_gpu_jobs_need() -> None:
    got = inherited(AGENT_ENV, DEFAULT_TASK_ENV_PASSTHROUGH)
    assert set(got) == {"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ", "TMPDIR", "PYTHONPATH",
                        "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "NCCL_DEBUG", "http_proxy",
                        "HTTPS_PROXY", "no_proxy"}
    assert got["CUDA_HOME"] == "/usr/local/cuda"


def test_the_passthrough_is_names_and_globs_and_never_reaches_the_agents_own() -> None:
    got = inherited(AGENT_ENV, ["HF_*", "AWS_SECRET_ACCESS_KEY", "*"])
    assert got["HF_HOME"] == "/cache/hf" and got["AWS_SECRET_ACCESS_KEY"] == "k"
    assert not [k for k in got if k.startswith(("STALWART_", "DET_"))]
    assert set(inherited(AGENT_ENV, [])) == {"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ", "TMPDIR",
                                             "PYTHONPATH"}


def test_the_agent_config_file(tmp_path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text("task_env_passthrough: [HF_HOME, 'CUDA_*']\n")
    assert load_agent_config(path).task_env_passthrough == ("HF_HOME", "CUDA_*")
    path.write_text("")
    assert load_agent_config(path).task_env_passthrough == DEFAULT_TASK_ENV_PASSTHROUGH


@pytest.mark.parametrize("text, message", [
    ("task_env_passthrough: HF_HOME\n", "task_env_passthrough: expected a list"),
    ("task_env_passthrough: ['']\n", "task_env_passthrough[0]"),
    ("task_env_passthru: [A]\n", "task_env_passthru"),
    ("task_env_passthrough: [\n", "malformed YAML"),
])
def test_a_bad_agent_config_names_what_is_wrong(tmp_path, text: str, message: str) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=r"agent config") as err:
        load_agent_config(path)
    assert message in err.value.full_message()


def test_agent_run_refuses_a_bad_config_before_it_starts(tmp_path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text("task_env_passthrough: 3\n")
    res = subprocess.run([sys.executable, "-m", "stalwart.cli.main", "agent", "run", "--master", "http://127.0.0.1:9",
                          "--token", "t", "--work-dir", str(tmp_path / "w"), "--config", str(path)],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode != 0
    assert "task_env_passthrough: expected a list" in res.stderr, res.stderr
