"""A real OpenID Connect provider for the single sign-on tests: tests/oidc/provider.mjs (npm's oidc-provider) in a
Node process, and the master config that points a LocalTestCluster at it.

`npm ci` installs the locked packages into tests/oidc/node_modules the first time (CI runs it up front, .ci/run).
Its login form accepts any login name and password; `set_groups` says which groups each login's claim lists (read
at every login).
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import time

import pytest

from stalwart.testing import free_port

HERE = pathlib.Path(__file__).parent
CLIENT_ID = "stalwart-tests"
CLIENT_SECRET = "a-test-client-secret"


def _need_node() -> str:
    node = shutil.which("node")
    if node is None:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("node is not installed: the single sign-on tests need Node 20+", pytrace=False)
        pytest.skip("node is not installed (the single sign-on tests need Node 20+)")
    if not (HERE / "node_modules" / "oidc-provider").is_dir():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=HERE, check=True, timeout=300,
                       stdout=subprocess.DEVNULL)
    return node


class OidcProvider:
    """The provider process for one master (its client's only redirect is `<master_url>/oidc/callback`)."""

    def __init__(self, master_url: str, home: pathlib.Path) -> None:
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.master_url = master_url
        self.log = home / "oidc-provider.log"
        self.groups_file = home / "oidc-groups.json"
        self.set_groups({})
        self.proc: subprocess.Popen | None = None

    def set_groups(self, groups: dict[str, list[str]]) -> None:
        """The groups claim of each login name from the next login on."""
        self.groups_file.write_text(json.dumps(groups))

    def master_config(self, **oidc: object) -> str:
        """The master config enabling single sign-on through this provider (`oidc` overrides keys)."""
        section = {"enabled": True, "provider": "TestIdP", "idp_sso_url": self.issuer,
                   "idp_recipient_url": self.master_url, "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET,
                   "scopes": ["openid", "email", "profile", "groups"], **oidc}
        return json.dumps({"oidc": section})  # JSON is YAML

    def start(self) -> None:
        node = _need_node()
        env = {**os.environ, "OIDC_PORT": str(self.port), "OIDC_REDIRECT_URI": self.master_url + "/oidc/callback",
               "OIDC_CLIENT_ID": CLIENT_ID, "OIDC_CLIENT_SECRET": CLIENT_SECRET,
               "OIDC_GROUPS_FILE": str(self.groups_file)}
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen([node, str(HERE / "provider.mjs")], cwd=HERE, env=env, stdout=out,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while "ready " not in self.log.read_text(errors="replace"):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the OIDC provider did not start: {self.log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)



@contextlib.contextmanager
def started_with_sso(cluster):
    """Start `cluster` (a LocalTestCluster, not yet started) with single sign-on through a provider of its own;
    yields (cluster, provider) and stops both."""
    provider = OidcProvider(cluster.url, cluster.home.parent)
    cluster.master_config = provider.master_config()
    provider.start()
    try:
        with cluster:
            yield cluster, provider
    finally:
        provider.stop()


def sign_in_over_http(http, start_url: str, login: str):
    """Go from `start_url` (the master's /oidc/login) through the provider's login form as `login`, over plain HTTP
    (`http`: an httpx.Client that keeps cookies and follows redirects); the last answer."""
    form_page = http.get(start_url)
    match = re.search(r'<form[^>]*action="([^"]+)"', form_page.text)
    assert match is not None, f"no login form at {form_page.url}: {form_page.text[:500]}"
    action = str(form_page.url.join(match.group(1)))
    return http.post(action, data={"prompt": "login", "login": login, "password": "anything"})
