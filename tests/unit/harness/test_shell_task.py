"""The shell task's sshd config (harness/shell_task.py): sshd itself accepts it, it passes the task's environment
but not the service token, and it listens on loopback only when the master is on the same machine."""

from __future__ import annotations

import pathlib
import shutil
import subprocess

import pytest

from stalwart.cli.shell_ssh import remote_command
from stalwart.harness import shell_task


def test_sshd_accepts_the_config(tmp_path: pathlib.Path) -> None:
    if not pathlib.Path(shell_task.SSHD).exists() or shutil.which("ssh-keygen") is None:
        pytest.skip("no OpenSSH server on this machine (.ci/run installs it)")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "host_ed25519")], check=True)
    env = shell_task.session_env({"DET_TASK_ID": "shell-3", "STALWART_SERVICE_TOKEN": "secret", "HOME": "/root",
                                  "PYTHONPATH": "/a b"}, "/work dir")
    assert env == {"DET_TASK_ID": "shell-3", "PYTHONPATH": "/a b", "STALWART_WORKDIR": "/work dir"}
    config = tmp_path / "sshd_config"
    config.write_text(shell_task.sshd_config(tmp_path, "root", "127.0.0.1", env))
    shell_task.PRIVSEP_DIR.mkdir(parents=True, exist_ok=True)
    checked = subprocess.run([shell_task.SSHD, "-t", "-f", str(config), "-o", "Port=2222"], capture_output=True,
                             text=True)
    assert checked.returncode == 0, checked.stderr


@pytest.mark.parametrize(("url", "listen"), [
    ("http://127.0.0.1:8080", "127.0.0.1"), ("http://localhost:1", "127.0.0.1"), ("https://[::1]:8080", "127.0.0.1"),
    ("http://10.0.0.5:8080", "0.0.0.0"), ("https://master.example:443", "0.0.0.0")])
def test_it_listens_on_loopback_only_when_the_master_is_local(url: str, listen: str) -> None:
    assert shell_task.listen_address(url) == listen


def test_a_session_starts_in_the_work_dir() -> None:
    assert remote_command(()) == 'cd "${STALWART_WORKDIR:-.}" 2>/dev/null; exec "${SHELL:-/bin/sh}" -l'
    assert remote_command(("python3", "-c", "print(6*7)")).endswith("exec python3 -c 'print(6*7)'")
