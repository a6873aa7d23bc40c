"""Webhooks end to end (issue 29, acceptance 7): a real master and agent, tiny trials, and a receiver this test
serves on loopback (http.server in a thread).

- Signed payloads arrive for a COMPLETED and an ERROR experiment and for a trial's `core.alert()`.
- With the receiver down (over 10 s) and a master restart (SIGKILL) in between, every payload arrives once it is
  back, and a retried one carries the same `X-Stalwart-Delivery-Id` on each attempt.
- Receivers that hang do not slow the master's other calls.
- A WorkspaceAdmin of W1 creates webhooks in W1 only (not in W2, not the cluster's); W1's webhook hears nothing
  of other workspaces' experiments. A target outside `webhooks.allowed_hosts` is refused.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.server
import json
import pathlib
import threading
import time
from typing import Any

import httpx
import pytest

from helpers_auth import bearer, log_in
from integration.helpers import wait_state
from stalwart.api.errors import InvalidRequest
from stalwart.context import pack_context
from stalwart.testing import LocalTestCluster, free_port

pytestmark = pytest.mark.integration

KEY = "test-signing-key-5d1e"
MASTER_CONFIG = f"""
security: {{authz: {{type: rbac}}}}
webhooks: {{signing_key: {KEY}, allowed_hosts: [127.0.0.1]}}
"""
TRAIN_PY = """\
import os, sys
from stalwart import core

with core.init() as ctx:
    if os.environ.get("ALERT"):
        ctx.alert("loss spiked", "from the trial", "WARN")
    ctx.train.report_validation_metrics(1, {"loss": 0.5})
sys.exit(int(os.environ.get("EXIT", "0")))
"""
CONFIG = """name: {name}
entrypoint: python3 train.py
searcher: {{name: single, metric: loss, max_length: {{batches: 1}}}}
max_restarts: 0
environment: {{environment_variables: [EXIT={exit}, ALERT={alert}]}}
"""


class Receiver:
    """Records every POST (path, headers, JSON body). `/hang` answers after 30 s; while `flaky`, the first attempt
    of each delivery id gets a 503. `stop()` and `start()` take it down and bring it back on the same port."""

    def __init__(self) -> None:
        self.port = free_port()
        self.got: list[tuple[str, dict[str, str], bytes]] = []
        self.flaky = False
        self.hanging = 0  # requests /hang has taken (each answered only after 30 s)
        self._seen: set[str] = set()
        self._server: http.server.ThreadingHTTPServer | None = None

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                if self.path == "/hang":
                    receiver.hanging += 1
                    time.sleep(30)
                delivery = self.headers.get("X-Stalwart-Delivery-Id", "")
                receiver.got.append((self.path, dict(self.headers), body))
                first = delivery not in receiver._seen
                receiver._seen.add(delivery)
                self.send_response(503 if receiver.flaky and first else 200)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        return Handler

    def start(self) -> None:
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), self._handler())
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def events(self, path: str = "/ok") -> list[tuple[dict[str, str], dict[str, Any]]]:
        """The signed, accepted payloads at `path`: (headers, body); a bad signature fails the test."""
        out = []
        for where, headers, body in list(self.got):
            if where != path:
                continue
            stamp = headers["X-Stalwart-Signature-Timestamp"]
            want = hmac.new(KEY.encode(), f"{stamp},".encode() + body, hashlib.sha256).hexdigest()
            assert headers["X-Stalwart-Signature"] == want, "a payload whose signature does not verify"
            out.append((headers, json.loads(body)))
        return out


def _experiment(c: LocalTestCluster, ctx: pathlib.Path, name: str, *, exit: int = 0, alert: bool = False) -> int:
    context = base64.b64encode(pack_context(ctx).data).decode()
    config = CONFIG.format(name=name, exit=exit, alert="1" if alert else "")
    return int(c.client().post("/experiments", {"config": config, "context": context, "activate": True})[
        "experiment"]["id"])


def _state_events(rx: Receiver) -> dict[tuple[int, str], str]:
    """(experiment id, state) -> delivery id of each state-change payload received."""
    return {(b["event_data"]["experiment"]["id"], b["event_data"]["experiment"]["state"]):
            h["X-Stalwart-Delivery-Id"] for h, b in rx.events() if b["event_type"] == "EXPERIMENT_STATE_CHANGE"
            and "experiment" in b["event_data"]}


@pytest.fixture
def world(tmp_path: pathlib.Path):
    rx = Receiver()
    rx.start()
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "train.py").write_text(TRAIN_PY)
    with LocalTestCluster(tmp_path / "home", slots=2, master_config=MASTER_CONFIG) as c:
        yield c, rx, ctx
    rx.stop()


def test_webhooks_end_to_end(world) -> None:
    c, rx, ctx = world
    c.cli("webhook", "create", rx.url("/ok"), "--trigger", "experiment-state:COMPLETED,ERROR", "--trigger",
          "custom", "--name", "ops", check=True)
    with pytest.raises(InvalidRequest, match=r"localhost:\d+ is not in the master config's webhooks.allowed_hosts"):
        c.client().create_webhook(f"http://localhost:{rx.port}/ok", [{"trigger_type": "CUSTOM"}])
    w1_hook = _workspace_admins(c, rx)

    rx.flaky = True  # each delivery's first attempt gets a 503: it is sent again, with the same delivery id
    done, failed = _experiment(c, ctx, "done", alert=True), _experiment(c, ctx, "fails", exit=1)
    wait_state(c, done, "COMPLETED")
    wait_state(c, failed, "ERROR")
    c.wait_for(lambda: {(done, "COMPLETED"), (failed, "ERROR")} <= set(_state_events(rx)), timeout=60,
               what="the COMPLETED and ERROR payloads")
    alerts = c.wait_for(lambda: [b for _, b in rx.events() if b["event_type"] == "CUSTOM"], timeout=60,
                        what="the alert's payload")
    assert alerts[0]["event_data"]["custom"] == {"title": "loss spiked", "description": "from the trial",
                                                 "level": "WARN"}
    assert alerts[0]["event_data"]["experiment"]["id"] == done
    c.wait_for(lambda: all(n >= 2 for n in _attempts(rx).values()) and len(_attempts(rx)) == 3, timeout=30,
               what="each payload to be sent again after its 503")
    rx.flaky = False

    _down_and_restarted(c, rx, ctx)
    _hanging_receivers(c, rx)
    assert [p for p, _, _ in rx.got if p == "/w1"] == [], "W1's webhook heard of another workspace's experiment"
    c.client().delete_webhook(w1_hook)


def _attempts(rx: Receiver) -> dict[str, int]:
    """Attempts received per delivery id (at /ok)."""
    out: dict[str, int] = {}
    for headers, _ in rx.events():
        out[headers["X-Stalwart-Delivery-Id"]] = out.get(headers["X-Stalwart-Delivery-Id"], 0) + 1
    return out


def _workspace_admins(c: LocalTestCluster, rx: Receiver) -> int:
    """W1's admin creates a webhook in W1, none in W2 nor of the cluster, and lists only W1's; its id."""
    admin = c.client()
    ids = {w: admin.post("/workspaces", {"name": w})["workspace"]["id"] for w in ("w1", "w2")}
    admin.post("/users", {"username": "wsadmin", "password": "pw-123456"})
    admin.post("/rbac/assignments", {"role": "WorkspaceAdmin", "username": "wsadmin", "workspaceId": ids["w1"]})
    with httpx.Client(base_url=c.url, timeout=30) as http:
        http.headers.update(bearer(log_in(http, "wsadmin", "pw-123456")))
        hook = {"url": rx.url("/w1"), "triggers": [{"trigger_type": "EXPERIMENT_STATE_CHANGE",
                                                     "condition": {"state": "COMPLETED"}}]}
        made = http.post("/api/v1/webhooks", json={**hook, "workspace": "w1"})
        assert made.status_code == 200, made.text
        for elsewhere in ({**hook, "workspace": "w2"}, hook):
            refused = http.post("/api/v1/webhooks", json=elsewhere)
            assert refused.status_code == 403 and "edit_webhooks" in refused.text, refused.text
        listed = http.get("/api/v1/webhooks").json()["webhooks"]
        assert [h["workspace"] for h in listed] == ["w1"]
    return int(made.json()["webhook"]["id"])


def _down_and_restarted(c: LocalTestCluster, rx: Receiver, ctx: pathlib.Path) -> None:
    """Receiver down over 10 s, the master killed and started again meanwhile: every payload queued meanwhile
    arrives once it is back."""
    rx.stop()
    down_at = time.monotonic()
    hook_id = next(h.id for h in c.client().list_webhooks() if h.name == "ops")
    tested = c.client().test_webhook(hook_id).delivery_id
    later = _experiment(c, ctx, "while-down")
    wait_state(c, later, "COMPLETED")
    c.kill_master()
    c.start_master()
    time.sleep(max(0.0, 10.5 - (time.monotonic() - down_at)))
    rx.start()
    c.wait_for(lambda: (later, "COMPLETED") in _state_events(rx) and tested in _attempts(rx), timeout=90,
               what="the payloads queued while the receiver was down")


def _hanging_receivers(c: LocalTestCluster, rx: Receiver) -> None:
    """More hanging deliveries than the loop sends at once: the master's other calls are not slowed (the median
    of a few calls while every attempt hangs, loosely)."""
    client = c.client()
    hang = client.create_webhook(rx.url("/hang"), [{"trigger_type": "CUSTOM"}], name="hangs").webhook.id
    for _ in range(12):
        client.test_webhook(hang)
    c.wait_for(lambda: rx.hanging >= 8, timeout=30, what="the loop's attempts to hang at the receiver")
    took = []
    for _ in range(9):
        started = time.monotonic()
        client.get("/experiments")
        client.list_webhooks()
        took.append(time.monotonic() - started)
    assert sorted(took)[len(took) // 2] < 2, f"API calls took {took} s while receivers hung"
    client.delete_webhook(hang)
