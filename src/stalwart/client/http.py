"""Low-level JSON-over-HTTP calls to the master, with error decoding and optional patient retries."""

from __future__ import annotations

import json
import logging
import time
from typing import Any, Iterator

import httpx

from stalwart.api.errors import MasterUnavailable, StalwartError

ALLOCATION_HEADER = "x-allocation-token"

# one line per HTTP request would drown trial and agent logs
logging.getLogger("httpx").setLevel(logging.WARNING)


MIB = 1024 * 1024
_BIG_BODY = 16 * MIB  # a closed connection while sending this much is more likely a refusal than a dead master


def _body_size(err: httpx.TransportError) -> int:
    try:
        content = err.request.content
    except (RuntimeError, httpx.RequestNotRead):  # no request attached, or a streamed body
        return 0
    return len(content)


def normalize_master_url(url: str) -> str:
    url = url.strip().rstrip("/")
    if "://" not in url:
        url = "http://" + url
    return url


class Client:
    """One master. `retry_for` > 0 keeps retrying connection failures and 5xx answers that long (seconds)."""

    def __init__(
        self,
        master_url: str,
        *,
        cluster_token: str | None = None,
        allocation_token: str | None = None,
        retry_for: float = 0.0,
        timeout: float = 30.0,
    ) -> None:
        self.url = normalize_master_url(master_url)
        headers = {}
        if cluster_token:
            headers["authorization"] = f"Bearer {cluster_token}"
        if allocation_token:
            headers[ALLOCATION_HEADER] = f"Bearer {allocation_token}"
        self.retry_for = retry_for
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def close(self) -> None:
        self._http.close()

    def request(self, method: str, path: str, *, json_body: Any = None, params: dict | None = None,
                timeout: float | None = None) -> Any:
        deadline = time.monotonic() + self.retry_for
        delay = 0.2
        while True:
            try:
                resp = self._http.request(method, "/api/v1" + path, json=json_body, params=params,
                                          timeout=timeout if timeout is not None else httpx.USE_CLIENT_DEFAULT)
            except httpx.TransportError as err:
                if time.monotonic() >= deadline:
                    raise MasterUnavailable(self._unreachable(err)) from None
            else:
                if resp.status_code < 500 or time.monotonic() >= deadline:
                    return self._decode(resp)
            time.sleep(delay)
            delay = min(delay * 2, 2.0)

    def _unreachable(self, err: httpx.TransportError) -> str:
        """What to say when a call failed below HTTP. A master refusing a big body answers 413 (read as such);
        one behind a proxy may close the connection instead, which must not read as a master that is down."""
        sent = _body_size(err)
        if sent >= _BIG_BODY and isinstance(err, (httpx.WriteError, httpx.ReadError, httpx.RemoteProtocolError)):
            return (f"the master at {self.url} closed the connection while receiving a {sent / MIB:.0f} MiB request; "
                    f"it is likely over the master's request size limit (limits.max_request_body in the master "
                    f"config, 130 MiB by default): {err or type(err).__name__}")
        return f"cannot reach the master at {self.url}: {err or type(err).__name__}"

    @staticmethod
    def _decode(resp: httpx.Response) -> Any:
        try:
            data = resp.json() if resp.content else {}
        except ValueError:
            data = {"error": {"kind": "internal", "message": resp.text[:500]}}
        if resp.status_code >= 400:
            raise StalwartError.from_dict(resp.status_code, data)
        return data

    def get(self, path: str, **params) -> Any:
        return self.request("GET", path, params={k: v for k, v in params.items() if v is not None})

    def post(self, path: str, body: Any = None, **kw) -> Any:
        return self.request("POST", path, json_body=body if body is not None else {}, **kw)

    def get_bytes(self, path: str) -> bytes:
        try:
            resp = self._http.get("/api/v1" + path)
        except httpx.TransportError as err:
            raise MasterUnavailable(f"cannot reach the master at {self.url}: {err}") from None
        if resp.status_code >= 400:
            self._decode(resp)
        return resp.content

    def stream_lines(self, path: str, **params) -> Iterator[dict]:
        """Newline-delimited JSON objects from a streaming endpoint."""
        try:
            with self._http.stream("GET", "/api/v1" + path, params=params, timeout=None) as resp:
                if resp.status_code >= 400:
                    resp.read()
                    self._decode(resp)
                for line in resp.iter_lines():
                    if line.strip():
                        yield json.loads(line)
        except httpx.TransportError as err:
            raise MasterUnavailable(f"lost the connection to the master at {self.url}: {err}") from None
