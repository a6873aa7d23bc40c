"""A server that closes the connection while a big body is being sent: the client says so, naming the size limit."""

from __future__ import annotations

import socket
import threading

import pytest

from stalwart.api.errors import MasterUnavailable
from stalwart.client import Client

MIB = 1024 * 1024


@pytest.fixture
def closing_server():
    """Reads the request head and 64 KiB of its body, then closes (as a proxy refusing a big upload may)."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(30)

    def serve() -> None:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(30)
            got = b""
            while b"\r\n\r\n" not in got or len(got) < 64 * 1024:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                got += chunk

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    listener.close()
    thread.join(10)


def test_a_connection_closed_during_a_big_upload_names_the_request_size_limit(closing_server):
    client = Client(closing_server, timeout=30)
    with pytest.raises(MasterUnavailable) as err:
        client.post("/experiments", {"config": "x", "context": "A" * (40 * MIB)})
    message = str(err.value)
    assert "closed the connection while receiving a 40 MiB request" in message, message
    assert "limits.max_request_body" in message

    with socket.create_server(("127.0.0.1", 0)) as s:  # a small request to nothing still reads as unreachable
        port = s.getsockname()[1]
    with pytest.raises(MasterUnavailable, match="cannot reach the master"):
        Client(f"http://127.0.0.1:{port}", timeout=5).post("/experiments", {"config": "x"})
