"""Single sign-on in Chromium (issue 20): the login page's "Sign in with" button goes through a real OpenID Connect
provider (tests/oidc/provider.mjs), which creates the user on its first login (remote, no password), gives it the
user groups its groups claim names, and lands on the page asked for, signed in."""

from __future__ import annotations

from urllib.parse import urlparse

import httpx
import pytest
import sqlalchemy as sa

from conftest import UICluster
from oidc.oidc_provider import started_with_sso
from stalwart.db import tables as t

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def sso(tmp_path_factory):
    """A master (no agent) whose single sign-on goes through a provider of its own."""
    with started_with_sso(UICluster(tmp_path_factory.mktemp("sso-ui") / "home", agents=0)) as started:
        yield started


def _groups_of(cluster, username: str) -> list[str]:
    engine = sa.create_engine(cluster.db_url)
    try:
        with engine.connect() as conn:
            q = (sa.select(t.user_groups.c.name).join(t.group_members, t.group_members.c.group_id == t.user_groups.c.id)
                 .join(t.users, t.users.c.id == t.group_members.c.user_id).where(t.users.c.username == username))
            return sorted(conn.execute(q).scalars())
    finally:
        engine.dispose()


def test_sign_in_with_the_provider_creates_the_user_and_lands_on_the_experiments(sso, new_page):
    cluster, provider = sso
    provider.set_groups({"alice": ["ml-team"]})
    page = new_page(None, username=None)
    page.goto(cluster.url + "/experiments")
    assert urlparse(page.url).path == "/login"
    button = page.locator("#sso-login")
    assert button.inner_text() == "Sign in with TestIdP"

    button.click()
    assert page.url.startswith(provider.issuer + "/interaction/")  # the provider's own login form
    page.fill("input[name=login]", "alice")
    page.fill("input[name=password]", "anything")
    page.click("button[type=submit]")
    page.wait_for_url(cluster.url + "/experiments")
    assert "alice@example.test" in page.locator("header").inner_text()  # signed in, as the email claim

    user = cluster.client().get_user("alice@example.test")
    assert user.remote and user.active and not user.hasPassword and not user.admin
    assert _groups_of(cluster, "alice@example.test") == ["ml-team"]
    # a remote user has no password to log in with
    res = httpx.post(cluster.url + "/api/v1/auth/login", json={"username": "alice@example.test", "password": ""},
                     timeout=10)
    assert res.status_code == 401


def test_a_login_page_without_single_sign_on_shows_no_button(ui_cluster, new_page):
    page = new_page(None, username=None)
    page.goto(ui_cluster.url + "/login")
    assert page.locator("#login-form").is_visible()
    assert page.locator("#sso-login").count() == 0
