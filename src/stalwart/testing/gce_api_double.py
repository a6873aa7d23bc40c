"""A TEST DOUBLE of Google Compute Engine's API: the three calls of its v1 REST API the `gcp` provider makes
(`instances.insert`, `instances.list` with a `labels.K="V" AND ...` filter, `instances.delete`) for any project and
zone, kept in memory, served on 127.0.0.1 by a thread. It is not Google's API and checks nothing else (no auth,
no quotas, no operations to wait on); the tests use it because GCE cannot be run here.

An inserted instance is PROVISIONING and becomes RUNNING `boot_s` later. The tests' side reads instances with their
startup scripts (`instances`) and plays GCE taking a preemptible instance back (`preempt`: status TERMINATED)."""

from __future__ import annotations

import datetime
import json
import re
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_PATH = re.compile(r"^/compute/v1/projects/(?P<project>[^/]+)/zones/(?P<zone>[^/]+)/instances(?:/(?P<name>[^/]+))?$")
_LABEL = re.compile(r'labels\.([\w-]+)\s*=\s*"?([\w-]*)"?')


@dataclass
class FakeInstance:
    """One instance the double holds: the insert body as given, its status and when it was inserted."""

    body: dict[str, Any]
    status: str = "PROVISIONING"
    inserted_at: float = field(default_factory=time.time)

    @property
    def startup_script(self) -> str:
        items = (self.body.get("metadata") or {}).get("items") or []
        return next((i["value"] for i in items if i.get("key") == "startup-script"), "")

    def view(self) -> dict[str, Any]:
        created = datetime.datetime.fromtimestamp(self.inserted_at, datetime.UTC).isoformat()
        return {**self.body, "status": self.status, "creationTimestamp": created, "id": str(abs(hash(self.name))),
                "networkInterfaces": [{**n, "networkIP": "10.128.0.2"} for n in self.body.get("networkInterfaces")
                                      or [{}]]}

    @property
    def name(self) -> str:
        return str(self.body["name"])


class GceApiDouble:
    """The double's state and server: `start()`, `endpoint`, `instances()`, `preempt(name)`, `stop()`."""

    def __init__(self, boot_s: float = 0.5) -> None:
        self.boot_s = boot_s
        self.lock = threading.Lock()
        self.zones: dict[tuple[str, str], dict[str, FakeInstance]] = {}
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self.thread = threading.Thread(target=self.server.serve_forever, name="gce-api-double", daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> GceApiDouble:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def instances(self) -> list[FakeInstance]:
        """Every instance of every project and zone, with statuses brought up to now."""
        with self.lock:
            return [self._aged(i) for zone in self.zones.values() for i in zone.values()]

    def preempt(self, name: str) -> None:
        """GCE takes a preemptible instance back: it is stopped (TERMINATED) and stays listed."""
        with self.lock:
            for zone in self.zones.values():
                if name in zone:
                    zone[name].status = "TERMINATED"

    def _aged(self, inst: FakeInstance) -> FakeInstance:
        if inst.status == "PROVISIONING" and time.time() - inst.inserted_at >= self.boot_s:
            inst.status = "RUNNING"
        return inst

    def answer(self, method: str, path: str, query: dict[str, str], body: Any) -> tuple[int, dict[str, Any]]:
        """One call: (status, JSON answer)."""
        found = _PATH.match(path)
        if found is None:
            return 404, {"error": {"code": 404, "message": f"the double does not serve {path}"}}
        key, name = (found["project"], found["zone"]), found["name"]
        with self.lock:
            zone = self.zones.setdefault(key, {})
            if method == "POST" and name is None:
                return self._insert(zone, body)
            if method == "GET" and name is None:
                wanted = dict(_LABEL.findall(query.get("filter", "")))
                items = [self._aged(i).view() for i in zone.values()
                         if all((i.body.get("labels") or {}).get(k) == v for k, v in wanted.items())]
                return 200, {"kind": "compute#instanceList", "items": items}
            if method == "DELETE" and name is not None:
                if zone.pop(name, None) is None:
                    return 404, {"error": {"code": 404, "message": f"instance {name} not found"}}
                return 200, {"kind": "compute#operation", "operationType": "delete", "status": "DONE"}
        return 405, {"error": {"code": 405, "message": f"the double does not serve {method} {path}"}}

    @staticmethod
    def _insert(zone: dict[str, FakeInstance], body: Any) -> tuple[int, dict[str, Any]]:
        if not isinstance(body, dict) or not body.get("name"):
            return 400, {"error": {"code": 400, "message": "an instance needs a name"}}
        if body["name"] in zone:
            return 409, {"error": {"code": 409, "message": f"instance {body['name']} already exists"}}
        zone[body["name"]] = FakeInstance(body)
        return 200, {"kind": "compute#operation", "operationType": "insert", "status": "RUNNING"}


def _handler_for(double: GceApiDouble) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            parts = urllib.parse.urlsplit(self.path)
            query = {k: v[0] for k, v in urllib.parse.parse_qs(parts.query).items()}
            size = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(size)) if size else None
            status, answer = double.answer(self.command, parts.path, query, body)
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            """Quiet: the tests read the double's state, not its log."""

    return Handler
