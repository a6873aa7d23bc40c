"""A tiny real HTTP/1.1 server (asyncio, in a thread) whose answers and connection handling a test scripts."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field


@dataclass
class Seen:
    """One request as the server read it: which connection it came on, and its n-th request there."""

    connection: int
    index: int
    method: str
    target: str
    body: bytes


@dataclass
class Answer:
    status: int = 200
    body: bytes = b"{}"
    content_type: str = "application/json"
    drop: bool = False  # close the connection without answering (as a server closing a kept-alive one does)


Handler = Callable[[Seen], Answer]


@dataclass
class TinyServer:
    url: str
    handler: list[Handler]
    seen: list[Seen] = field(default_factory=list)
    connections: int = 0
    open_writers: set[asyncio.StreamWriter] = field(default_factory=set)

    def answer_with(self, handler: Handler) -> None:
        self.handler[0] = handler


def json_answer(data: object, status: int = 200) -> Answer:
    return Answer(status, json.dumps(data).encode())


async def _serve_connection(server: TinyServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    server.connections += 1
    server.open_writers.add(writer)
    connection, index = server.connections, 0
    try:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            lines = head.decode("latin-1").split("\r\n")
            method, target, _version = lines[0].split(" ", 2)
            headers = {k.strip().lower(): v.strip() for k, v in (x.split(":", 1) for x in lines[1:] if ":" in x)}
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            index += 1
            seen = Seen(connection, index, method, target, body)
            server.seen.append(seen)
            answer = server.handler[0](seen)
            if answer.drop:
                return
            writer.write(f"HTTP/1.1 {answer.status} X\r\ncontent-type: {answer.content_type}\r\n"
                         f"content-length: {len(answer.body)}\r\n\r\n".encode() + answer.body)
            await writer.drain()
    finally:
        server.open_writers.discard(writer)
        writer.close()


@contextlib.contextmanager
def serving() -> Iterator[TinyServer]:
    """A server on 127.0.0.1 answering `{}` until the test sets its handler with `answer_with`."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    state: dict[str, object] = {}

    async def start() -> None:
        holder: list[TinyServer] = []
        srv = await asyncio.start_server(lambda r, w: _serve_connection(holder[0], r, w), "127.0.0.1", 0)
        port = srv.sockets[0].getsockname()[1]
        holder.append(TinyServer(f"http://127.0.0.1:{port}", [lambda seen: Answer()]))
        state["server"], state["asyncio_server"] = holder[0], srv
        ready.set()

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(start())
        loop.run_forever()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(10), "the tiny server did not start"
    server: TinyServer = state["server"]  # type: ignore[assignment]
    yield server

    async def stop() -> None:
        srv = state["asyncio_server"]
        srv.close()  # type: ignore[attr-defined]
        for writer in list(server.open_writers):  # the handlers read EOF and return
            writer.close()
        await asyncio.sleep(0.05)

    asyncio.run_coroutine_threadsafe(stop(), loop).result(10)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
    loop.close()
