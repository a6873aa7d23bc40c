"""Signing in to the web UI, in Chromium (issue 19): the login page, the cookie session and its CSRF token, the
user in the header, logging out, and what two users and an admin may do to each other's experiments."""

from __future__ import annotations

import base64
import uuid
from urllib.parse import parse_qs, quote, urlparse

import httpx
import pytest
import yaml

from stalwart.context import pack_context

pytestmark = pytest.mark.integration

PASSWORD = "correct horse battery staple"
AUDIT_ROWS = ("trs => trs.map(tr => [tr.querySelector('td.user').textContent, tr.querySelector('code').textContent, "
              "tr.dataset.outcome])")


def _path(page) -> str:
    return urlparse(page.url).path


def _experiment(client, tmp_path, name: str) -> int:
    """A paused experiment (it never runs) created through `client`, so owned by its user; its id."""
    ctx = tmp_path / "ctx"
    ctx.mkdir(exist_ok=True)
    (ctx / "train.py").write_text("print('never runs')\n")
    cfg = {"name": name, "entrypoint": "python3 train.py", "hyperparameters": {"lr": 0.1},
           "searcher": {"name": "single", "metric": "acc", "smaller_is_better": False, "max_length": {"batches": 10}}}
    reply = client.post("/experiments", {"config": yaml.safe_dump(cfg), "activate": False,
                                         "context": base64.b64encode(pack_context(ctx).data).decode()})
    return reply["experiment"]["id"]


def _state(cluster, exp_id: int) -> str:
    return cluster.client().get(f"/experiments/{exp_id}")["experiment"]["state"]


def _kill_from_the_page(page) -> None:
    page.click("#actions button[data-action=kill]")
    page.click("#actions button[data-action=kill]")  # the second click confirms


def test_a_page_without_a_session_goes_to_login_and_back(ui_cluster, new_page):
    c = ui_cluster
    page = new_page(c, username=None)
    page.goto(c.url + "/cluster?tab=agents")
    assert _path(page) == "/login"
    assert parse_qs(urlparse(page.url).query)["next"] == ["/cluster?tab=agents"]
    assert page.request.get(c.url + "/api/v1/ui/cluster").status == 401  # the JSON API answers 401, no redirect

    page.fill("#login-form input[name=username]", "admin")
    page.fill("#login-form input[name=password]", "not the password")
    with page.expect_response(lambda r: r.request.method == "POST" and urlparse(r.url).path == "/login") as answer:
        page.click("#login-form button[type=submit]")
    assert answer.value.status == 401
    assert "invalid credentials: wrong user name or password" in page.text_content("#login-error")
    assert page.locator("#user-name").count() == 0

    page.fill("#login-form input[name=password]", "")  # the local cluster's admin has an empty password
    page.click("#login-form button[type=submit]")
    page.wait_for_selector("#agents-table")
    assert _path(page) == "/cluster" and urlparse(page.url).query == "tab=agents"
    assert page.text_content("#user-name").strip() == "admin"
    cookies = {ck["name"]: ck for ck in page.context.cookies()}
    session, csrf = cookies["stalwart_session"], cookies["stalwart_csrf"]
    assert session["httpOnly"] is True and session["sameSite"] == "Lax" and session["path"] == "/"
    assert csrf["httpOnly"] is False and csrf["sameSite"] == "Lax"
    assert page.evaluate("document.cookie").find(session["value"]) == -1  # the page's scripts cannot read it


def test_login_never_redirects_off_the_master(ui_cluster, new_page):
    c = ui_cluster
    page = new_page(c, username=None)
    for evil in ("https://example.com/", "//example.com/x", "/\\example.com", "javascript:alert(1)"):
        page.goto(c.url + "/login?next=" + quote(evil, safe=""))
        assert page.get_attribute("#login-form input[name=next]", "value") == "/"
    page.goto(f"{c.url}/login?next=/jobs")
    page.fill("#login-form input[name=username]", "admin")
    page.click("#login-form button[type=submit]")
    page.wait_for_url(f"{c.url}/jobs")


def test_mutating_calls_with_the_cookie_need_the_csrf_header(page, ui_cluster):
    page.goto(ui_cluster.url + "/")
    page.wait_for_selector("#experiments")
    call = """async (withToken) => {
      const token = document.cookie.split('; ').find(c => c.startsWith('stalwart_csrf=')).split('=')[1];
      const res = await fetch('/api/v1/experiments/987654/archive',
                              {method: 'POST', headers: withToken ? {'X-CSRF-Token': token} : {}});
      return [res.status, (await res.json()).error.message];
    }"""
    status, message = page.evaluate(call, False)
    assert status == 403 and "CSRF" in message
    status, message = page.evaluate(call, True)  # past the CSRF check: the admin may, but there is no such experiment
    assert status == 404 and "experiment 987654 not found" in message


def test_logout_ends_the_session(ui_cluster, new_page):
    c = ui_cluster
    page = new_page(c)
    page.goto(c.url + "/tasks")
    assert page.text_content("#user-name").strip() == "admin"
    old = next(ck["value"] for ck in page.context.cookies() if ck["name"] == "stalwart_session")
    assert httpx.get(c.url + "/api/v1/me", cookies={"stalwart_session": old}).status_code == 200
    page.click("#logout button")
    page.wait_for_url(f"{c.url}/login")
    assert not [ck for ck in page.context.cookies() if ck["name"].startswith("stalwart_")]
    assert httpx.get(c.url + "/api/v1/me", cookies={"stalwart_session": old}).status_code == 401
    page.context.add_cookies([{"name": "stalwart_session", "value": old, "url": c.url}])  # the old cookie, again
    page.goto(c.url + "/tasks")
    assert _path(page) == "/login"


@pytest.fixture
def two_users(ui_cluster):
    """Users A and B (not admins), made by the admin through the client; their names."""
    tag = uuid.uuid4().hex[:6]
    names = (f"ann-{tag}", f"bob-{tag}")
    admin = ui_cluster.client()
    admin.create_user(names[0], password=PASSWORD, display_name=f"Ann {tag}")
    admin.create_user(names[1], password=PASSWORD)
    return names


def test_owners_and_admins_in_the_ui(ui_cluster, new_page, two_users, tmp_path):
    c = ui_cluster
    ann, bob = two_users
    as_ann, as_bob = c.client(session_token=None), c.client(session_token=None)
    as_ann.login(ann, PASSWORD)
    as_bob.login(bob, PASSWORD)
    anns = _experiment(as_ann, tmp_path, f"of-{ann}")
    bobs = _experiment(as_bob, tmp_path, f"of-{bob}")

    page = new_page(c, ann, PASSWORD)
    _an_owner_kills_their_own(c, page, ann, anns)
    _another_owners_is_refused(c, page, ann, bob, bobs)
    # the audit page is an admin's: a 403 page naming the permission for A
    res = page.goto(f"{c.url}/audit")
    assert res.status == 403
    assert "lacks view_audit" in page.text_content("#error-message")

    _an_admin_kills_it_and_reads_the_audit_log(c, new_page(c), ann, bob, anns, bobs)
    _a_deactivated_user_is_sent_to_log_in(c, page, ann, anns)


def _an_owner_kills_their_own(c, page, ann: str, anns: int) -> None:
    """A (with a display name, no audit link) kills A's own experiment."""
    page.goto(f"{c.url}/experiments/{anns}")
    assert page.text_content("#user-name").strip() == f"Ann {ann[4:]}"  # the display name
    assert page.locator("#audit-link").count() == 0
    page.wait_for_selector("#actions button[data-action=kill]:not([disabled])")
    _kill_from_the_page(page)
    page.wait_for_function("() => document.querySelector('#flash').textContent.includes('kill: done')")
    c.wait_for(lambda: _state(c, anns) in ("STOPPING_CANCELED", "CANCELED"), what=f"{ann}'s experiment killed")


def _another_owners_is_refused(c, page, ann: str, bob: str, bobs: int) -> None:
    """B's experiment: its page disables the controls and says why; a kill from the list is refused."""
    page.goto(f"{c.url}/experiments/{bobs}")
    page.wait_for_selector("#actions-note:not([hidden])")
    assert f"belongs to {bob}" in page.text_content("#actions-note")
    assert "edit_experiments" in page.text_content("#actions-note")
    assert page.is_disabled("#actions button[data-action=kill]")
    assert page.is_disabled("#actions button[data-action=pause]")
    # ... and a kill from the list is refused with the master's message, naming the permission
    page.goto(f"{c.url}/?q=of-{bob}")
    page.check(f'#experiments tr[data-key="{bobs}"] input[type=checkbox]')
    page.click("#bulk button[data-action=kill]")
    page.click("#bulk button[data-action=kill]")
    page.wait_for_selector("#flash:not([hidden])")
    flash = page.text_content("#flash")
    assert "1 failed" in flash and f"{ann} lacks edit_experiments" in flash and f"belongs to {bob}" in flash, flash
    assert _state(c, bobs) == "PAUSED"


def _an_admin_kills_it_and_reads_the_audit_log(c, admin, ann: str, bob: str, anns: int, bobs: int) -> None:
    """The admin may kill B's experiment, and reads A's refused attempt in the audit log."""
    admin.goto(f"{c.url}/experiments/{bobs}")
    admin.wait_for_selector("#actions button[data-action=kill]:not([disabled])")
    assert admin.is_hidden("#actions-note")
    _kill_from_the_page(admin)
    admin.wait_for_function("() => document.querySelector('#flash').textContent.includes('kill: done')")
    c.wait_for(lambda: _state(c, bobs) in ("STOPPING_CANCELED", "CANCELED"), what=f"{bob}'s experiment killed")
    admin.click("#audit-link")
    admin.wait_for_selector("#audit")
    admin.fill("#audit-filters input[name=user]", ann)
    admin.click("#audit-filters button[type=submit]")
    admin.wait_for_url(f"**/audit?user={ann}*")
    rows = admin.eval_on_selector_all("#audit tbody tr[data-key]", AUDIT_ROWS)
    assert rows and {user for user, _, _ in rows} == {ann}, rows
    calls = [(call, outcome) for _, call, outcome in rows]
    refused = (f"POST /api/v1/experiments/{bobs}/kill", "refused")
    done = (f"POST /api/v1/experiments/{anns}/kill", "ok")
    assert refused in calls and done in calls, calls
    assert calls.index(refused) < calls.index(done)  # newest first


def _a_deactivated_user_is_sent_to_log_in(c, page, ann: str, anns: int) -> None:
    """Deactivating A (the admin, through the client) sends A's next page load to the login page."""
    c.client().edit_user(ann, active=False)
    page.goto(f"{c.url}/experiments/{anns}")
    assert _path(page) == "/login"
    page.fill("#login-form input[name=username]", ann)
    page.fill("#login-form input[name=password]", PASSWORD)
    page.click("#login-form button[type=submit]")
    page.wait_for_selector("#login-error")
    assert f"user {ann} is not active" in page.text_content("#login-error")
