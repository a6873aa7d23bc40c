"""The local cluster's ports: whether one is free, and the one to take (the preferred one, else a free one)."""

from __future__ import annotations

import socket

DEFAULT_PORT = 8080


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    """Could a server listen on host:port now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True


def pick_port(preferred: int = DEFAULT_PORT) -> int:
    """`preferred` when it is free, else a port the kernel finds free."""
    if port_free(preferred):
        return preferred
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port
