"""The task proxy on a host name of its own (`proxy_host`, docs/tasks.md), with a real master and a task's server.

One master answers both names: 127.0.0.1:PORT (the master) and localhost:PORT (its proxy_host; the requests go to
127.0.0.1 with that Host header, as DNS would send them). A browser's session cookie on the master's address is
sent over to the proxy host with a one-time ticket, traded there for a cookie good for that task alone; the master's
own cookie means nothing on the proxy host, which serves nothing but tasks; API clients with a token are served
where they ask; and the task's server sees none of these credentials.
"""

from __future__ import annotations

import re
import urllib.parse

import httpx
import pytest

from stalwart.api.errors import ConfigError
from stalwart.config.master import parse_master_config
from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

SERVER = ["python3", "-m", "stalwart.harness.service", "--",
          "python3", "-m", "stalwart.testing.recording_service", "{port}"]


def _served_command(c: LocalTestCluster) -> str:
    made = c.cli("cmd", "run", "-d", "--config", "resources.slots=0", *SERVER, check=True)
    cmd_id = re.search(r"Launched command (\d+)", made.stdout).group(1)
    c.wait_for(lambda: "listens on port" in c.cli("cmd", "logs", cmd_id).stdout, timeout=120,
               what="the task's server to answer")
    return cmd_id


def test_browsers_open_tasks_on_the_proxy_host_with_a_cookie_for_that_task_alone(tmp_path) -> None:
    c = LocalTestCluster(tmp_path / "home")
    proxy_host = f"localhost:{c.port}"
    c.master_config = f"proxy_host: {proxy_host}\n"
    with c, httpx.Client(base_url=c.url, follow_redirects=False) as http:
        task = f"command-{_served_command(c)}"
        on_proxy = {"Host": proxy_host}
        browser = {"Cookie": f"stalwart_session={c.admin_token}"}

        sent_over = http.get(f"/proxy/{task}/echo?q=1", headers=browser)
        assert sent_over.status_code == 302
        location = urllib.parse.urlsplit(sent_over.headers["location"])
        assert location.netloc == proxy_host and location.path == f"/proxy/{task}/_stalwart/enter"
        assert c.admin_token not in sent_over.headers["location"]
        assert urllib.parse.parse_qs(location.query)["next"] == [f"/proxy/{task}/echo?q=1"]

        entered = http.get(f"{location.path}?{location.query}", headers=on_proxy)
        assert entered.status_code == 302 and entered.headers["location"] == f"/proxy/{task}/echo?q=1"
        cookie = entered.headers["set-cookie"]
        assert f"Path=/proxy/{task}/" in cookie and "HttpOnly" in cookie and "SameSite=Lax" in cookie
        task_cookie = cookie.split(";")[0]
        assert http.get(f"{location.path}?{location.query}", headers=on_proxy).status_code == 401  # used once

        seen = http.get(f"/proxy/{task}/echo?q=1", headers={**on_proxy, "Cookie": f"{task_cookie}; own=1"}).json()
        assert seen["path"] == f"/proxy/{task}/echo" and seen["headers"]["cookie"] == "own=1"
        assert seen["headers"]["authorization"].startswith("token ") and "stalwart_task" not in str(seen)

        # the cookie is for this task alone; the master's own cookie means nothing here; only tasks are served here
        assert http.get("/proxy/command-999/echo", headers={**on_proxy, "Cookie": task_cookie}).status_code == 401
        assert http.get(f"/proxy/{task}/echo", headers={**on_proxy, **browser}).status_code == 401
        assert http.get("/api/v1/master", headers={**on_proxy, **browser}).status_code == 404

        # a change through the cookie must come from the proxy host's own pages
        from_proxy = {**on_proxy, "Cookie": task_cookie, "Origin": f"http://{proxy_host}"}
        assert http.post(f"/proxy/{task}/echo", headers=from_proxy, content=b"x").status_code == 200
        elsewhere = {**from_proxy, "Origin": c.url}
        assert http.post(f"/proxy/{task}/echo", headers=elsewhere, content=b"x").status_code == 403

        # on the master's address: a browser's change is refused, an API client with a token is served in place
        assert http.post(f"/proxy/{task}/echo", headers=browser, content=b"x").status_code == 403
        bearer = {"Authorization": f"Bearer {c.admin_token}"}
        assert http.get(f"/proxy/{task}/echo", headers=bearer).status_code == 200


def test_a_proxy_host_that_is_no_host_name_is_a_clear_config_error(tmp_path) -> None:
    with pytest.raises(ConfigError, match="proxy_host: expected a host name"):
        parse_master_config({"proxy_host": "http://tasks.example.com/"})
