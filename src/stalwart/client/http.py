"""The transport under the typed client: one master, its headers, retries, and how failures read.

Failures read in three ways, never confused: an answer >= 400 raises the StalwartError its body names
(5xx: `MasterInternalError`, "the master answered an internal error"); a connection that the master had kept
alive and then closed under a request is sent again on a fresh connection; only a failure below HTTP on a
fresh connection is `MasterUnavailable` ("cannot reach the master").
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from typing import Any, Self

import httpx

from stalwart.api.errors import MasterUnavailable, StalwartError

API_PREFIX = "/api/v1"
ALLOCATION_HEADER = "x-allocation-token"

# one line per HTTP request would drown trial and agent logs
logging.getLogger("httpx").setLevel(logging.WARNING)

MIB = 1024 * 1024
_BIG_BODY = 16 * MIB  # a closed connection while sending this much is more likely a refusal than a dead master
_STALE_CONNECTION_ERRORS = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)
_MAX_STALE_RETRIES = 8  # kept-alive connections tried before the last attempt (each failure drops one)
_CONNECT_EVENTS = ("connection.connect_tcp.started", "connection.connect_unix_socket.started")

Params = dict[str, str | int | float | bool | list[str] | None]


class MasterInternalError(StalwartError):
    """The master answered, with a 5xx: it is up, something inside it failed. Never read as unreachable."""

    kind = "internal"

    def __init__(self, status: int, message: str, *, details: list[str] | None = None) -> None:
        super().__init__(message, details=details)
        self.http_status = status


def normalize_master_url(url: str) -> str:
    url = url.strip().rstrip("/")
    if "://" not in url:
        url = "http://" + url
    return url


def _body_size(err: httpx.TransportError) -> int:
    try:
        content = err.request.content
    except (RuntimeError, httpx.RequestNotRead):  # no request attached, or a streamed body
        return 0
    return len(content)


class _ConnectionTrace:
    """httpcore's trace hook: did this request open a new connection, or go out on a kept-alive one?"""

    __slots__ = ("connected",)

    def __init__(self) -> None:
        self.connected = False

    def __call__(self, event: str, info: dict[str, Any]) -> None:
        if event in _CONNECT_EVENTS:
            self.connected = True


class Transport:
    """HTTP to one master. `retry_for` > 0 keeps retrying connection failures and 5xx answers that long (s)."""

    def __init__(
        self,
        master_url: str,
        *,
        cluster_token: str | None = None,
        allocation_token: str | None = None,
        session_token: str | None = None,
        retry_for: float = 0.0,
        timeout: float = 30.0,
    ) -> None:
        self.url = normalize_master_url(master_url)
        headers: dict[str, str] = {}
        if cluster_token:
            headers["authorization"] = f"Bearer {cluster_token}"
        if session_token:  # a user's session or access token (never together with a cluster token)
            headers["authorization"] = f"Bearer {session_token}"
        if allocation_token:
            headers[ALLOCATION_HEADER] = f"Bearer {allocation_token}"
        self.retry_for = retry_for
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def set_session_token(self, token: str | None) -> None:
        """Carry this user session (or access token) from now on; None: carry none."""
        if token:
            self._http.headers["authorization"] = f"Bearer {token}"
        else:
            self._http.headers.pop("authorization", None)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- sending ----------------------------------------------------------------------------
    def send(self, method: str, path: str, *, json_body: Any = None, params: Params | None = None,
             timeout: float | None = None, stream: bool = False) -> httpx.Response:
        """One call to `path` (the full path, /api/v1 included), patient for `retry_for` seconds; an answer
        >= 400 raises its StalwartError. With `stream` the caller reads and closes the response."""
        request = self._http.build_request(
            method, path, json=json_body, params=_query(params),
            timeout=timeout if timeout is not None else httpx.USE_CLIENT_DEFAULT)
        deadline = time.monotonic() + self.retry_for
        delay = 0.2
        while True:
            try:
                resp = self._send_once(request, stream)
            except httpx.TransportError as err:
                if time.monotonic() >= deadline:
                    raise MasterUnavailable(self._unreachable(err)) from None
            else:
                if resp.status_code < 500 or time.monotonic() >= deadline:
                    if resp.status_code >= 400:
                        self._raise_for(resp)
                    return resp
                resp.close()
            time.sleep(delay)
            delay = min(delay * 2, 2.0)

    def _send_once(self, request: httpx.Request, stream: bool) -> httpx.Response:
        """Send. A kept-alive connection that the master closed under the request is dropped by the pool and the
        request goes again, until it has failed on a freshly opened connection (which means the master is away)."""
        for _ in range(_MAX_STALE_RETRIES):
            trace = _ConnectionTrace()
            request.extensions["trace"] = trace
            try:
                return self._http.send(request, stream=stream)
            except _STALE_CONNECTION_ERRORS:
                if trace.connected:
                    raise
        request.extensions["trace"] = _ConnectionTrace()
        return self._http.send(request, stream=stream)

    def _unreachable(self, err: httpx.TransportError) -> str:
        """What to say when a call failed below HTTP. A master refusing a big body answers 413 (read as such);
        one behind a proxy may close the connection instead, which must not read as a master that is down."""
        sent = _body_size(err)
        if sent >= _BIG_BODY and isinstance(err, (httpx.WriteError, httpx.ReadError, httpx.RemoteProtocolError)):
            return (f"the master at {self.url} closed the connection while receiving a {sent / MIB:.0f} MiB request; "
                    f"it is likely over the master's request size limit (limits.max_request_body in the master "
                    f"config, 130 MiB by default): {err or type(err).__name__}")
        return f"cannot reach the master at {self.url}: {err or type(err).__name__}"

    def _raise_for(self, resp: httpx.Response) -> None:
        """The StalwartError of an answer >= 400 (its body read and the response closed)."""
        try:
            resp.read()
        finally:
            resp.close()
        raise decode_error(self.url, resp)

    # -- reading answers ----------------------------------------------------------------------
    def lines(self, path: str, params: Params | None = None) -> Iterator[bytes]:
        """The non-empty lines of a streaming answer (NDJSON), as they arrive; closed when the caller stops."""
        resp = self.send("GET", path, params=params, timeout=None, stream=True)
        try:
            for line in resp.iter_lines():
                if line.strip():
                    yield line.encode()
        except httpx.TransportError as err:
            raise MasterUnavailable(f"lost the connection to the master at {self.url}: {err}") from None
        finally:
            resp.close()

    # -- untyped calls (paths relative to /api/v1), for tests and scripts that probe the API itself ------
    def request(self, method: str, path: str, *, json_body: Any = None, params: Params | None = None,
                timeout: float | None = None) -> Any:
        resp = self.send(method, API_PREFIX + path, json_body=json_body, params=params, timeout=timeout)
        return resp.json() if resp.content else {}

    def get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params=params)

    def post(self, path: str, body: Any = None, **kw: Any) -> Any:
        return self.request("POST", path, json_body=body if body is not None else {}, **kw)

    def get_bytes(self, path: str) -> bytes:
        return self.send("GET", API_PREFIX + path).content

    def stream_lines(self, path: str, **params: Any) -> Iterator[Any]:
        """Newline-delimited JSON objects from a streaming endpoint."""
        for line in self.lines(API_PREFIX + path, params):
            yield json.loads(line)


def _query(params: Params | None) -> dict[str, str | int | float | bool | list[str]] | None:
    if not params:
        return None
    return {k: v for k, v in params.items() if v is not None}


def decode_error(url: str, resp: httpx.Response) -> StalwartError:
    """The error an answer >= 400 stands for: its body's kind and message; a 5xx is the master's own failure."""
    try:
        data = resp.json() if resp.content else {}
    except ValueError:
        data = None
    detail = data.get("error") if isinstance(data, dict) else None
    if resp.status_code >= 500:
        if isinstance(detail, dict):
            message, details = str(detail.get("message", "")), list(detail.get("details") or [])
        else:
            message, details = resp.text[:500].strip() or resp.reason_phrase, []
        return MasterInternalError(
            resp.status_code,
            f"the master at {url} answered an internal error (HTTP {resp.status_code}): {message}",
            details=details)
    if not isinstance(detail, dict):
        return StalwartError.from_dict(resp.status_code, {"error": {"message": (
            f"the master answered HTTP {resp.status_code}: {resp.text[:500]}")}})
    return StalwartError.from_dict(resp.status_code, {"error": detail})
