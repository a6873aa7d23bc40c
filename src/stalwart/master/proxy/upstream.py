"""Connections from the master to task services: HTTP/1.1 over asyncio streams, framed by h11, kept alive.

The proxy passes bytes through; it needs no client library's request and response objects, header models,
redirects, cookies or timeouts per read. `Pool` keeps a few idle connections per service address (a page's
hundreds of requests reuse them) and hands out `Upstream`s: one connection, its h11 state machine, and the reads
and writes the forwarder (proxy/forward.py) needs. A connection goes back to the pool only when both sides of its
exchange ended cleanly and the service did not ask to close it; any other ending closes it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import h11

CONNECT_TIMEOUT_S = 10.0
"""How long the master waits to reach a task's service before giving up."""
READ_CHUNK = 256 * 1024
"""The most bytes read from a service at once (what is there is passed on, up to this)."""
IDLE_PER_ADDRESS = 16
"""Idle connections kept per service address; more are closed as they are released."""


class Upstream:
    """One HTTP/1.1 connection to a service, with its h11 state machine."""

    def __init__(self, address: tuple[str, int], reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 reused: bool = False) -> None:
        self.address = address
        self.reader = reader
        self.writer = writer
        self.h11 = h11.Connection(h11.CLIENT)
        self.reused = reused

    async def write(self, event: h11.Event) -> None:
        """Send one h11 event (a request head, a body chunk, the end of the body)."""
        data = self.h11.send(event)
        if data:
            self.writer.write(data)
            await self.writer.drain()

    async def next_event(self, on_wait: Callable[[], None] | None = None) -> h11.Event:
        """The service's next event: a response head, a body chunk, the end of the body (h11.RemoteProtocolError
        when the connection ends mid-answer or the service breaks HTTP). `on_wait` is called before each read
        that has to wait for more bytes."""
        while True:
            event = self.h11.next_event()
            if event is not h11.NEED_DATA:
                return event  # type: ignore[return-value]  # h11 types its sentinels as classes
            if on_wait is not None:
                on_wait()
            self.h11.receive_data(await self.reader.read(READ_CHUNK))

    def reusable(self) -> bool:
        """Whether both sides finished their exchange and the connection may carry the next one."""
        return self.h11.our_state is h11.DONE and self.h11.their_state is h11.DONE

    def abort(self) -> None:
        """Drop the connection at once (the caller went away, or the exchange broke)."""
        self.writer.transport.abort()


class Pool:
    """Idle connections to services, per address; `connect` reuses one or opens one."""

    def __init__(self, idle_per_address: int = IDLE_PER_ADDRESS, connect_timeout: float = CONNECT_TIMEOUT_S) -> None:
        self._idle: dict[tuple[str, int], list[Upstream]] = {}
        self._idle_per_address = idle_per_address
        self._connect_timeout = connect_timeout

    async def connect(self, host: str, port: int, *, fresh: bool = False) -> Upstream:
        """A connection to `host:port`: an idle one unless `fresh`, else a new one (OSError/TimeoutError when the
        service cannot be reached within the connect timeout)."""
        address = (host, port)
        idle = self._idle.get(address)
        while idle and not fresh:
            conn = idle.pop()
            if not conn.writer.transport.is_closing() and not conn.reader.at_eof():
                conn.reused = True
                return conn
            conn.abort()
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port, limit=READ_CHUNK),
                                                self._connect_timeout)
        return Upstream(address, reader, writer)

    def release(self, conn: Upstream) -> None:
        """Done with `conn`: kept for the next exchange when it can carry one and there is room, else closed."""
        if not conn.reusable():
            conn.abort()
            return
        idle = self._idle.setdefault(conn.address, [])
        if len(idle) >= self._idle_per_address:
            conn.abort()
            return
        conn.h11.start_next_cycle()
        idle.append(conn)

    async def aclose(self) -> None:
        """Close every idle connection."""
        for idle in self._idle.values():
            for conn in idle:
                with contextlib.suppress(Exception):
                    conn.abort()
        self._idle.clear()
