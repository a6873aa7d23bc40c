"""TEST DOUBLE of the Kubernetes API server — not a Kubernetes implementation.

The double's HTTP edge (stdlib `ThreadingHTTPServer`, HTTP/1.1 on 127.0.0.1): parses a request's path into
group, namespace, resource, name and subresource and its RBAC verb, records it, requires the bearer token (401
Status otherwise), answers injected failures, runs the operation of `api.py`, and streams watches (newline-
delimited JSON events, chunked; BOOKMARKs every second when asked; an ERROR event with a 410 Status when the
resourceVersion is too old) and followed logs. Unknown paths answer a 404 Status.
"""

from __future__ import annotations

import hmac
import json
import re
import select
import socket
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from stalwart.testing.k8s_api_double.api import (
    KINDS,
    JsonReply,
    KubeApi,
    LogFollowReply,
    Reply,
    Request,
    TextReply,
    WatchReply,
    flag,
    read_log,
)
from stalwart.testing.k8s_api_double.calls import CallJournal, RecordedCall
from stalwart.testing.k8s_api_double.objects import ApiError, JsonObject
from stalwart.testing.k8s_api_double.store import ObjectStore

BOOKMARK_SECONDS = 1.0
_RESOURCE_PATH = re.compile(
    r"^/(?:api/v1|apis/(?P<group>batch)/v1)(?:/namespaces/(?P<namespace>[^/]+))?"
    r"/(?P<resource>[^/]+)(?:/(?P<name>[^/]+)(?:/(?P<subresource>[^/]+))?)?$"
)
_DISCOVERY: dict[str, JsonObject] = {
    "/version": {"major": "1", "minor": "30", "gitVersion": "v1.30.0-k8s-api-double", "platform": "linux/amd64"},
    "/api": {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []},
    "/apis": {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [
            {
                "name": "batch",
                "versions": [{"groupVersion": "batch/v1", "version": "v1"}],
                "preferredVersion": {"groupVersion": "batch/v1", "version": "v1"},
            }
        ],
    },
}


class ApiHttpServer(ThreadingHTTPServer):
    """The listening server with what its handlers need."""

    daemon_threads = True

    def __init__(self, api: KubeApi, store: ObjectStore, journal: CallJournal, token: str):
        super().__init__(("127.0.0.1", 0), ApiRequestHandler)
        self.api = api
        self.store = store
        self.journal = journal
        self.token = token
        self.stopping = threading.Event()


def parse_request(method: str, path: str, query: dict[str, str], body: Any) -> Request | None:
    match = _RESOURCE_PATH.match(path)
    if match is None:
        return None
    name = match.group("name")
    namespace = match.group("namespace")
    resource = match.group("resource")
    if resource == "namespaces" and namespace is None and name is not None and match.group("subresource") is None:
        namespace = name
    if name is None:
        verbs = {"GET": "watch" if flag(query.get("watch")) else "list", "POST": "create", "DELETE": "deletecollection"}
    else:
        verbs = {"GET": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
    verb = verbs.get(method, method.lower())
    group = match.group("group") or ""
    return Request(method, group, namespace, resource, name, match.group("subresource"), verb, query, body)


class ApiRequestHandler(BaseHTTPRequestHandler):
    """One connection; keep-alive for plain answers, chunked bodies for streams."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are separate writes: no 40 ms delayed-ACK stall
    server: ApiHttpServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's parameter name
        """Quiet: the tests read `calls`, not an access log."""

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def _handle(self, method: str) -> None:
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        try:
            body = self._read_body()
            request = parse_request(method, url.path, query, body)
            resource = ""
            if request is not None:
                resource = request.resource + (f"/{request.subresource}" if request.subresource else "")
            verb = request.verb if request is not None else ("get" if method == "GET" else method.lower())
            call = RecordedCall(method, url.path, query, verb, resource, request.group if request else "")
            self.server.journal.record(call)
            self._authenticate()
            failure = self.server.journal.injected_failure(call)
            if failure is not None:
                raise failure
            reply = self._dispatch(method, url.path, request)
        except ApiError as error:
            self._send_json(error.code, error.status())
            return
        self._send_reply(reply)

    def _read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw.strip():
            return None
        try:
            return json.loads(raw)
        except json.JSONDecodeError as error:
            raise ApiError(400, f"the request body is not valid JSON: {error}", "BadRequest") from error

    def _authenticate(self) -> None:
        given = self.headers.get("Authorization", "")
        expected = f"Bearer {self.server.token}"
        if not hmac.compare_digest(given.encode(), expected.encode()):
            raise ApiError(401, "Unauthorized", "Unauthorized")

    def _dispatch(self, method: str, path: str, request: Request | None) -> Reply:
        if method == "GET" and path.rstrip("/") in _DISCOVERY:
            return JsonReply(200, _DISCOVERY[path.rstrip("/")])
        operation = self.server.api.operation(request) if request is not None else None
        if operation is None or request is None:
            if request is not None and self.server.api.knows(request.group, request.resource):
                message = f"the Kubernetes API test double does not serve {request.verb} on {request.resource}"
                raise ApiError(405, message, "MethodNotAllowed")
            raise ApiError(404, "the server could not find the requested resource", "NotFound")
        return operation(request)

    def _send_reply(self, reply: Reply) -> None:
        if isinstance(reply, JsonReply):
            self._send_json(reply.code, reply.body)
        elif isinstance(reply, TextReply):
            self._send_bytes(reply.code, "text/plain", reply.text.encode())
        elif isinstance(reply, WatchReply):
            self._stream_watch(reply)
        else:
            self._stream_log(reply)

    def _send_json(self, code: int, body: JsonObject) -> None:
        self._send_bytes(code, "application/json", json.dumps(body).encode())

    def _send_bytes(self, code: int, content_type: str, data: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _start_chunks(self, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        if data:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

    def _end_chunks(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _event(self, event_type: str, obj: JsonObject) -> None:
        self._chunk(json.dumps({"type": event_type, "object": obj}).encode() + b"\n")

    def _stream_watch(self, watch: WatchReply) -> None:
        store = self.server.store
        if watch.resource_version not in (None, "", "0"):
            try:
                cursor = int(str(watch.resource_version))
            except ValueError:
                self._send_json(400, ApiError(400, f"invalid resourceVersion {watch.resource_version!r}").status())
                return
            initial: list[JsonObject] = []
        else:
            initial, cursor = store.list(watch.resource, watch.namespace, watch.selector, copies=False)
        self._start_chunks("application/json")
        try:
            for obj in initial:
                self._event("ADDED", obj)
            self._follow_events(watch, cursor)
            self._end_chunks()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _follow_events(self, watch: WatchReply, cursor: int) -> None:
        store = self.server.store
        deadline = time.monotonic() + watch.timeout_seconds
        next_bookmark = time.monotonic() + BOOKMARK_SECONDS
        while not self.server.stopping.is_set() and time.monotonic() < deadline and not self._client_gone():
            try:
                with store.changed:
                    events, revision = store.events_after(cursor, watch.resource, watch.namespace)
                    if not events:
                        store.changed.wait(timeout=min(0.2, max(0.0, deadline - time.monotonic())))
                        events, revision = store.events_after(cursor, watch.resource, watch.namespace)
            except ApiError as gone:
                self._event("ERROR", gone.status())
                return
            for event in events:
                if watch.selector.matches(event.object):
                    self._event(event.type, event.object)
            cursor = revision
            if watch.bookmarks and time.monotonic() >= next_bookmark:
                kind, api_version = KINDS[watch.resource]
                bookmark = {"kind": kind, "apiVersion": api_version, "metadata": {"resourceVersion": str(cursor)}}
                self._event("BOOKMARK", bookmark)
                next_bookmark = time.monotonic() + BOOKMARK_SECONDS

    def _client_gone(self) -> bool:
        """Whether the caller closed the connection (a stream's client sends nothing until it has read it)."""
        readable, _, _ = select.select([self.connection], [], [], 0)
        if not readable:
            return False
        try:
            peeked: bytes = self.connection.recv(1, socket.MSG_PEEK)
        except OSError:
            return True
        return peeked == b""

    def _stream_log(self, follow: LogFollowReply) -> None:
        kubelet = self.server.api.cluster.kubelet
        log_path = kubelet.log_paths[follow.uid]
        self._start_chunks("text/plain")
        try:
            data = log_path.read_bytes()
            sent = len(data)
            self._chunk(read_log(data, follow.tail_lines).encode())
            while not self.server.stopping.is_set() and not self._client_gone():
                record = kubelet.processes.get(follow.uid)
                ended = record is None or record.process.poll() is not None
                data = log_path.read_bytes()
                self._chunk(data[sent:])
                sent = len(data)
                if ended:
                    break
                time.sleep(0.1)
            self._end_chunks()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
