"""A master reachable beyond loopback never starts with an account anyone could log in to (issue 19,
acceptance 3): `stalwart master run --host 0.0.0.0` refuses while an active account has an empty password and
says how to set one; with `security.initial_user_password` it starts, and the empty password is refused."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import time

import httpx
import pytest

from stalwart.client import Client
from stalwart.testing import free_port

pytestmark = pytest.mark.integration


def master_run(home: pathlib.Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STALWART_", "DET_"))}
    env["STALWART_HOME"] = str(home)
    return subprocess.run([sys.executable, "-m", "stalwart.cli.main", "master", "run", "--home", str(home), *args],
                          env=env, capture_output=True, text=True, timeout=timeout)


def test_a_master_on_all_interfaces_refuses_to_start_with_empty_passwords(tmp_path):
    port = free_port()
    res = master_run(tmp_path / "home", "--host", "0.0.0.0", "--port", str(port))
    assert res.returncode == 2, res.stdout + res.stderr
    message = res.stderr
    assert "refusing to listen on 0.0.0.0" in message
    assert "admin, determined" in message and "empty password" in message
    assert "stalwart user change-password" in message and "initial_user_password" in message
    assert "Traceback" not in message
    with pytest.raises(httpx.TransportError):  # nothing listens
        httpx.get(f"http://127.0.0.1:{port}/api/v1/master", timeout=2)


def test_with_an_initial_password_it_starts_and_the_empty_password_is_refused(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    config = home / "master.yaml"
    config.write_text("security:\n  initial_user_password: 'c0rrect horse'\n")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STALWART_", "DET_"))}
    proc = subprocess.Popen([sys.executable, "-m", "stalwart.cli.main", "master", "run", "--home", str(home),
                             "--config", str(config), "--host", "0.0.0.0", "--port", str(port)],
                            env={**env, "STALWART_HOME": str(home)}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(url + "/api/v1/master", timeout=1)
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.monotonic() < deadline, "the master did not come up"
                time.sleep(0.2)
        with Client(url) as anon:
            answer = httpx.post(url + "/api/v1/auth/login", json={"username": "admin", "password": ""})
            assert answer.status_code == 401
            assert anon.login("admin", "c0rrect horse").user.admin
            assert anon.me().username == "admin"
        with Client(url) as other:
            assert not other.login("determined", "c0rrect horse").user.admin
    finally:
        proc.terminate()
        proc.wait(15)
