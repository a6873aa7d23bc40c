"""`stalwart auth login` (issue 20) against a real OpenID Connect provider (tests/oidc/provider.mjs), its login form
driven over plain HTTP: the headless flow (the master shows a one-time code, pasted into the CLI) and the browser
flow (the master hands the code to the CLI's listener on 127.0.0.1). The code works once, only with the CLI's
secret verifier; the user's groups follow its groups claim at every login."""

from __future__ import annotations

import re
import subprocess
import sys

import httpx
import pytest
import sqlalchemy as sa

from oidc.oidc_provider import sign_in_over_http, started_with_sso
from stalwart.client import Client
from stalwart.client.oidc import login_url, new_verifier
from stalwart.db import tables as t
from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration
CODE = re.compile(r'<code id="oidc-code"[^>]*>([^<]+)</code>')


@pytest.fixture(scope="module")
def sso(tmp_path_factory):
    with started_with_sso(LocalTestCluster(tmp_path_factory.mktemp("sso-cli") / "home", agents=0)) as started:
        yield started


def _auth_login(cluster, home, *args: str) -> subprocess.Popen:
    """`stalwart auth login ARGS` with its own STALWART_HOME (no browser: BROWSER=true opens nothing)."""
    env = {**cluster.env, "STALWART_HOME": str(home), "BROWSER": "true"}
    return subprocess.Popen([sys.executable, "-m", "stalwart.cli.main", "auth", "login", *args], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _url_printed(proc: subprocess.Popen) -> str:
    printed = []
    for line in proc.stdout:
        printed.append(line)
        if line.startswith("http"):
            return line.strip()
    raise AssertionError(f"no URL printed: {''.join(printed)}")


def _whoami(cluster, home) -> str:
    env = {**cluster.env, "STALWART_HOME": str(home)}
    out = subprocess.run([sys.executable, "-m", "stalwart.cli.main", "user", "whoami", "--json"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def test_headless_login_pastes_the_masters_one_time_code(sso, tmp_path):
    cluster, provider = sso
    provider.set_groups({"bob": ["vision", "ml-team"]})
    proc = _auth_login(cluster, tmp_path / "bob", "--headless")
    with httpx.Client(follow_redirects=True, timeout=30) as http:
        page = sign_in_over_http(http, _url_printed(proc), "bob")
    assert page.status_code == 200 and str(page.url).startswith(cluster.url + "/oidc/callback")
    code = CODE.search(page.text).group(1)
    out, _ = proc.communicate(code + "\n", timeout=60)
    assert proc.returncode == 0, out
    assert "Logged in as bob@example.test" in out
    assert '"bob@example.test"' in _whoami(cluster, tmp_path / "bob")
    with cluster.client() as admin:
        user = admin.get_user("bob@example.test")
    assert user.remote and not user.hasPassword


def test_browser_login_hands_the_code_to_the_cli_on_loopback_and_groups_follow_the_claim(sso, tmp_path):
    cluster, provider = sso
    for groups in (["team-a", "team-b"], ["team-b", "team-c"]):
        provider.set_groups({"carol": groups})
        proc = _auth_login(cluster, tmp_path / "carol")
        url = _url_printed(proc)
        assert "cli=loopback" in url
        with httpx.Client(follow_redirects=True, timeout=30) as http:
            page = sign_in_over_http(http, url, "carol")
        assert page.status_code == 200 and re.match(r"http://127\.0\.0\.1:\d+/callback\?code=", str(page.url))
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0, out
        assert "Logged in as carol@example.test" in out
        assert _db_groups(cluster, "carol@example.test") == groups  # exactly the claim's groups


def test_a_code_works_once_and_only_with_its_verifier(sso):
    cluster, _provider = sso
    codes = []
    for _ in range(2):
        verifier = new_verifier()
        with httpx.Client(follow_redirects=True, timeout=30) as http:
            page = sign_in_over_http(http, login_url(cluster.url, verifier, port=None), "dave")
        codes.append((CODE.search(page.text).group(1), verifier))
    (first, verifier), (second, _other) = codes
    with Client(cluster.url) as anonymous:
        assert anonymous.redeem_sso_code(first, verifier).user.username == "dave@example.test"
        for code, v in ((first, verifier), (second, verifier)):  # used; another login's code
            res = httpx.post(cluster.url + "/api/v1/auth/oidc/token", json={"code": code, "verifier": v}, timeout=10)
            assert res.status_code == 401, res.text


def test_a_login_from_another_browser_or_with_a_forged_state_is_refused(sso):
    cluster, provider = sso
    with httpx.Client(follow_redirects=False, timeout=30) as http:
        start = http.get(cluster.url + "/oidc/login?next=/experiments")
        assert start.status_code == 303 and start.headers["location"].startswith(provider.issuer)
        state = re.search(r"state=([^&]+)", start.headers["location"]).group(1)
    # the provider's answer arriving in a browser that did not start the login (no state cookie)
    res = httpx.get(cluster.url + f"/oidc/callback?state={state}&code=whatever", timeout=10)
    assert res.status_code == 401 and "another browser" in res.text
    res = httpx.get(cluster.url + "/oidc/callback?error=access_denied&error_description=nope", timeout=10)
    assert res.status_code == 401 and "access_denied" in res.text
    res = httpx.get(cluster.url + "/oidc/login?cli=loopback&port=80&challenge=x", timeout=10)
    assert res.status_code == 400 and "challenge" in res.text


def _db_groups(cluster, username: str) -> list[str]:
    engine = sa.create_engine(cluster.db_url)
    try:
        with engine.connect() as conn:
            q = (sa.select(t.user_groups.c.name).join(t.group_members, t.group_members.c.group_id == t.user_groups.c.id)
                 .join(t.users, t.users.c.id == t.group_members.c.user_id).where(t.users.c.username == username))
            return sorted(conn.execute(q).scalars())
    finally:
        engine.dispose()
