"""A task that serves (a notebook, a TensorBoard, a shell's sshd, one's own web app): start the server on a free port
of this machine, tell the master where it listens once it answers, and end as it ends.

`python -m stalwart.harness.service [--busy PROBE] -- ARGV...` as a task's entrypoint. In ARGV, `{port}` becomes the
port picked, `{base_url}` the server's base path behind the master's proxy (`/proxy/<task id>/`: a server started
with it keeps its own links working there) and `{service_token}` the token the master sends, in `Authorization:
token ...`, with every request it passes on (the server may require it; no browser ever holds it). The server's port
goes to the master (`POST /api/v1/allocations/{id}/service`) only once something accepts connections on it, so the
proxy never forwards to a server still starting. SIGTERM and SIGINT are passed on to the server; this process ends
with the server's exit status (a death by signal N as 128 + N, as a shell reports it). With `--busy PROBE`
(harness/busy.py: `jupyter:<notebook_idle_type>`, `sshd`) it asks the server every few seconds whether it is in use
and tells the master when it is, which keeps the task's idle timeout from running out.
"""

from __future__ import annotations

import ipaddress
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Sequence
from types import FrameType

from stalwart.harness.busy import Probe, Server, probe_named
from stalwart.harness.info import ClusterInfo, get_cluster_info
from stalwart.harness.session import trial_client

READY_TIMEOUT_S = float(os.environ.get("STALWART_SERVICE_READY_TIMEOUT_S", "300"))
"""How long the server may take to accept connections before the task fails."""
STOP_GRACE_S = 30.0
"""How long a server that never became ready is given to stop after SIGTERM, before SIGKILL."""
SERVICE_TOKEN_ENV = "STALWART_SERVICE_TOKEN"
BUSY_EVERY_S = float(os.environ.get("STALWART_SERVICE_BUSY_EVERY_S", "5"))
"""How often a `--busy` probe asks the server whether it is in use."""


def free_port() -> int:
    """A port no one listens on now (the server binds it right after)."""
    with socket.socket() as s:
        s.bind(("", 0))
        return int(s.getsockname()[1])


def listen_address(master_url: str) -> str:
    """Where a task's server listens: 127.0.0.1 when the master is on this machine, else every address (the
    master's proxy reaches it at its agent's address)."""
    host = urllib.parse.urlsplit(master_url).hostname or ""
    if host == "localhost":
        return "127.0.0.1"
    try:
        return "127.0.0.1" if ipaddress.ip_address(host).is_loopback else "0.0.0.0"
    except ValueError:
        return "0.0.0.0"


def expand(argv: Sequence[str], port: int, base_url: str, token: str) -> list[str]:
    """ARGV with its placeholders filled in (other braces are left as they are)."""
    values = {"{port}": str(port), "{base_url}": base_url, "{service_token}": token}
    out = []
    for arg in argv:
        for key, value in values.items():
            arg = arg.replace(key, value)
        out.append(arg)
    return out


def wait_until_listening(port: int, server: subprocess.Popen[bytes], timeout: float) -> bool:
    """True once something accepts a connection on the port; False if the server ends or the time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and server.poll() is None:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1.0):
                return True
        except OSError:
            time.sleep(0.1)
    return False


def _status(code: int) -> int:
    return 128 - code if code < 0 else code


def watch_busy(probe: Probe, server: Server, info: ClusterInfo, done: threading.Event) -> None:
    """Until `done`: report the task's activity to the master each time `probe` finds the server in use."""
    client = trial_client(info)
    while not done.wait(BUSY_EVERY_S):
        try:
            if probe(server):
                client.allocation_activity(info.allocation_id)
        except Exception as err:  # a server busy starting or stopping, the master away: the next round asks again
            print(f"could not tell whether the service is in use: {err}", file=sys.stderr, flush=True)


def serve(argv: Sequence[str], info: ClusterInfo, busy: str | None = None) -> int:
    """Run the server of ARGV (with `busy`: the probe telling the master whether it is in use); its exit status."""
    probe = probe_named(busy) if busy else None  # ValueError before anything starts
    if not argv:
        print("stalwart.harness.service: give the server's command after --", file=sys.stderr)
        return 2
    port = free_port()
    base_url = f"/proxy/{info.task_id}/"
    token = os.environ.get(SERVICE_TOKEN_ENV, "")
    server = subprocess.Popen(expand(argv, port, base_url, token))
    done = threading.Event()

    def pass_on(signum: int, _frame: FrameType | None) -> None:
        if server.poll() is None:
            server.send_signal(signum)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, pass_on)
    if wait_until_listening(port, server, READY_TIMEOUT_S):
        trial_client(info).allocation_service(info.allocation_id, port=port)
        print(f"the service of task {info.task_id} listens on port {port}; it is reached through the master at "
              f"{base_url}", flush=True)
        if probe is not None:
            threading.Thread(target=watch_busy, args=(probe, Server(server.pid, port, base_url, token), info, done),
                             daemon=True, name="busy-probe").start()
    elif server.poll() is None:
        print(f"the service of task {info.task_id} did not accept connections on port {port} within "
              f"{READY_TIMEOUT_S:.0f} s; it is stopped", file=sys.stderr, flush=True)
        server.terminate()
        try:
            server.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            server.kill()
    code = server.wait()
    done.set()
    return _status(code)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    busy = None
    if argv[:1] == ["--busy"] and len(argv) > 1:
        busy, argv = argv[1], argv[2:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    info = get_cluster_info()
    if info is None:
        print("stalwart.harness.service runs inside a task started by a Stalwart agent", file=sys.stderr)
        return 2
    try:
        return serve(argv, info, busy)
    except ValueError as err:
        print(f"stalwart.harness.service: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
