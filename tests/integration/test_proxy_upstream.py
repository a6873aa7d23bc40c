"""The proxy's connections to a service (master/proxy/upstream.py, forward.py) against a raw HTTP/1.1 server.

The service here is a few lines of asyncio on loopback that misbehave on purpose, in the ways real services and
networks do: it closes a kept-alive connection just as the next request arrives, streams without end, or stops
in the middle of an answer. The front is the forwarder alone, served by uvicorn, and the caller is httpx.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Mount
from starlette.types import Receive, Scope, Send

from stalwart.api.errors import StalwartError
from stalwart.master.proxy import forward
from stalwart.master.proxy.upstream import Pool
from stalwart.testing.recording_service import ServedApp

pytestmark = pytest.mark.integration


@dataclass
class Misbehaving:
    """A service on loopback: what it saw, and how it ends its connections."""

    port: int = 0
    connections: int = 0
    requests: list[tuple[int, bytes]] = field(default_factory=list)  # (connection number, request line)
    stream_closed: threading.Event = field(default_factory=threading.Event)


async def _serve_connection(service: Misbehaving, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    service.connections += 1
    number, served = service.connections, 0
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            line = head.split(b"\r\n", 1)[0]
            service.requests.append((number, line))
            if b"chunked" in head.lower():
                await reader.readuntil(b"0\r\n\r\n")
            if served and b"/fresh-only" not in line:
                return  # a kept-alive connection closed by the service just as the next request came
            served += 1
            if b"/endless" in line:
                writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                while True:
                    writer.write(b"400\r\n" + b"e" * 1024 + b"\r\n")
                    await writer.drain()
                    await asyncio.sleep(0.01)
            if b"/cut" in line:
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + b"c" * 10)
                return
            body = f"{number}-{served}".encode()
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        service.stream_closed.set()
        writer.close()


@pytest.fixture
def service() -> Iterator[Misbehaving]:
    found = Misbehaving()
    ready = threading.Event()
    loop = asyncio.new_event_loop()
    servers: list[asyncio.Server] = []

    async def start() -> None:
        servers.append(await asyncio.start_server(lambda r, w: _serve_connection(found, r, w), "127.0.0.1", 0))
        found.port = servers[0].sockets[0].getsockname()[1]
        ready.set()

    thread = threading.Thread(target=lambda: (loop.run_until_complete(start()), loop.run_forever()), daemon=True)
    thread.start()
    assert ready.wait(10)
    yield found
    loop.call_soon_threadsafe(servers[0].close)  # its port closed, then its loop stopped and closed
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
    loop.close()


@pytest.fixture
def front(service: Misbehaving) -> Iterator[str]:
    pool = Pool()

    async def http(scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await forward.forward(pool, scope, receive, send, ("127.0.0.1", service.port), None, "notebook-1")
        except StalwartError as err:
            await PlainTextResponse(str(err), status_code=err.http_status)(scope, receive, send)

    with ServedApp(Starlette(routes=[Mount("/proxy", app=http)])) as served:
        yield served.url


def test_a_kept_alive_connection_the_service_closed_is_retried_on_a_new_one(service: Misbehaving, front: str) -> None:
    with httpx.Client(base_url=front) as caller:
        first = caller.get("/proxy/notebook-1/a")
        second = caller.get("/proxy/notebook-1/b")  # the pool's connection: the service closes it on this request
    assert (first.status_code, first.text) == (200, "1-1")
    assert (second.status_code, second.text) == (200, "2-1")
    assert [n for n, _ in service.requests] == [1, 1, 2]


def test_a_request_with_a_body_goes_out_on_a_new_connection_and_is_never_sent_twice(service: Misbehaving,
                                                                                    front: str) -> None:
    with httpx.Client(base_url=front) as caller:
        assert caller.get("/proxy/notebook-1/fresh-only").text == "1-1"
        assert caller.get("/proxy/notebook-1/fresh-only").text == "1-2"  # kept alive, reused
        posted = caller.post("/proxy/notebook-1/fresh-only", content=iter([b"part one, ", b"part two"]))
    assert (posted.status_code, posted.text) == (200, "2-1")
    assert [n for n, line in service.requests if line.startswith(b"POST")] == [2]


def test_a_caller_who_leaves_a_streaming_answer_closes_the_service_s_connection(service: Misbehaving,
                                                                               front: str) -> None:
    with httpx.stream("GET", f"{front}/proxy/notebook-1/endless") as answer:
        got = 0
        for chunk in answer.iter_raw():
            got += len(chunk)
            if got > 64 * 1024:
                break
    assert service.stream_closed.wait(30), "the service kept streaming to a master whose caller had gone"


def test_an_answer_the_service_cuts_short_is_cut_short_for_the_caller(service: Misbehaving, front: str) -> None:
    with pytest.raises(httpx.RemoteProtocolError):
        httpx.get(f"{front}/proxy/notebook-1/cut")
    with httpx.Client(base_url=front) as caller:  # the proxy goes on serving
        assert caller.get("/proxy/notebook-1/after").status_code == 200
