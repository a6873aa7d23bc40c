"""The real `det` 0.38.1 logs in and out of a Stalwart master through its Determined listener: the same users and
sessions as Stalwart's own API, Determined's salted password hash, its messages for bad credentials."""

from __future__ import annotations

import uuid

import pytest

from stalwart.api.errors import AuthError

pytestmark = pytest.mark.integration


def test_det_user_login_whoami_and_logout_with_a_password(det_master, tmp_path):
    name = f"dl-{uuid.uuid4().hex[:8]}"
    det_master.make_user(name, "Secret-pass-1")
    res = det_master.det(tmp_path, "user", "login", name, stdin="Secret-pass-1\n")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Traceback" not in res.stderr and "less than master version" not in res.stderr  # /info says 0.38.1
    res = det_master.det(tmp_path, "user", "whoami")
    assert res.returncode == 0 and f"You are logged in as user '{name}'" in res.stdout, res.stdout + res.stderr
    token = _saved_token(tmp_path, det_master.det_url, name)
    with det_master.client(token) as c:  # a session made through `det` is a Stalwart session like any other
        assert c.me().username == name
    assert det_master.det(tmp_path, "user", "logout").returncode == 0
    with det_master.client(token) as c, pytest.raises(AuthError):
        c.me()


def test_a_wrong_password_gets_determineds_own_message_and_no_traceback(det_master, tmp_path):
    name = f"dw-{uuid.uuid4().hex[:8]}"
    det_master.make_user(name, "Right-pass-1")
    res = det_master.det(tmp_path, "user", "login", name, stdin="wrong\n")
    assert res.returncode != 0
    assert "Invalid username/password combination" in res.stdout + res.stderr
    assert "Traceback" not in res.stderr


def test_env_credentials_log_in_without_a_prompt(det_master, tmp_path):
    name = f"de-{uuid.uuid4().hex[:8]}"
    det_master.make_user(name, "Env-pass-12")
    res = det_master.det(tmp_path, "user", "whoami", DET_USER=name, DET_PASS="Env-pass-12")
    assert res.returncode == 0 and name in res.stdout, res.stdout + res.stderr


def _saved_token(config_dir, det_url: str, name: str) -> str:
    import json

    store = json.loads((config_dir / "auth.json").read_text())
    token: str = store["masters"][det_url]["tokens"][name]
    return token
