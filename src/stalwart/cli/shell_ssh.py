"""`ssh` to a shell through the master: the key file, the ssh command line, and the tunnel ssh runs as its
ProxyCommand.

The tunnel (`stalwart shell tunnel ID`, hidden) opens a WebSocket to the master's `/proxy/shell-<id>/` with the
CLI's credentials and copies its standard input to the WebSocket and the WebSocket to its standard output; the
master relays the bytes to the shell's sshd (master/proxy/tcp_tunnel.py). No agent port needs to be reachable from
the user's machine. The private key only ever lives in a 0600 file: a temporary one while `shell open`'s ssh runs,
or the one `shell show-ssh-command` writes under the CLI's home for the user's own ssh.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import pathlib
import shlex
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence

from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException
from websockets.sync.client import ClientConnection, connect

from stalwart.api.models.shells import ShellKey

SSH = "ssh"
OPEN_TIMEOUT_S = 30.0
CHUNK = 65536


def login_user(key: ShellKey) -> str:
    """Whom ssh logs in as: the OS user the shell runs as where the master knows it (an agent-user link), else the
    user running this command (a shell on an agent without a link runs as the agent's user; on a local cluster
    that is this user)."""
    return key.user or getpass.getuser()


def remote_command(command: Sequence[str]) -> str:
    """What the shell runs: COMMAND (else a login shell), started in the task's working directory."""
    start = 'cd "${STALWART_WORKDIR:-.}" 2>/dev/null; '
    if not command:
        return start + 'exec "${SHELL:-/bin/sh}" -l'
    return start + "exec " + shlex.join(command)


def tunnel_argv(shell_id: int, master: str | None, user: str | None) -> list[str]:
    """The ProxyCommand: this CLI's `shell tunnel ID`, with the same -m and -u."""
    argv = [sys.executable, "-m", "stalwart.cli.main"]
    if master:
        argv += ["-m", master]
    if user:
        argv += ["-u", user]
    return [*argv, "shell", "tunnel", str(shell_id)]


def ssh_argv(shell_id: int, key_file: pathlib.Path, login: str, proxy: Sequence[str], command: Sequence[str],
             *, tty: bool) -> list[str]:
    """The ssh command line for the shell: its key, the tunnel, no host key prompt or file, no password prompt."""
    argv = [SSH, "-i", str(key_file), "-o", f"ProxyCommand={shlex.join(proxy)}", "-o", "StrictHostKeyChecking=no",
            "-o", "UserKnownHostsFile=/dev/null", "-o", "BatchMode=yes", "-o", "LogLevel=ERROR",
            "-o", "IdentitiesOnly=yes"]
    if tty:
        argv.append("-t")
    return [*argv, f"{login}@shell-{shell_id}", remote_command(command)]


def _write_private(path: pathlib.Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        os.fchmod(f.fileno(), 0o600)
        f.write(text)


@contextlib.contextmanager
def temporary_key(key: ShellKey) -> Iterator[pathlib.Path]:
    """The private key in a 0600 file that is removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="stalwart-shell-") as folder:
        path = pathlib.Path(folder) / "key"
        _write_private(path, key.private_key)
        try:
            yield path
        finally:
            path.unlink(missing_ok=True)


def kept_key(key: ShellKey, shell_id: int) -> pathlib.Path:
    """The private key in a 0600 file under the CLI's home (`$STALWART_HOME`, else ~/.stalwart), for one's own ssh."""
    home = pathlib.Path(os.environ.get("STALWART_HOME") or pathlib.Path.home() / ".stalwart").expanduser()
    folder = home / "shell-keys"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = folder / f"shell-{shell_id}.key"
    _write_private(path, key.private_key)
    return path


def run_tunnel(url: str, headers: dict[str, str], shell_id: int) -> int:
    """Copy stdin to the shell's tunnel and the tunnel to stdout until either ends; the exit status."""
    try:
        ws = connect(url, additional_headers=headers, open_timeout=OPEN_TIMEOUT_S, max_size=None, compression=None)
    except InvalidStatus as err:
        status = err.response.status_code
        why = err.response.body.decode(errors="replace")[:300] if err.response.body else (
            "only its owner may open it, while it runs (`stalwart shell describe` shows its state)")
        print(f"stalwart shell tunnel: the master refused the tunnel to shell {shell_id} ({status}): {why}",
              file=sys.stderr)
        return 1
    except (OSError, TimeoutError, WebSocketException) as err:
        print(f"stalwart shell tunnel: cannot reach the master at {url}: {err}", file=sys.stderr)
        return 1
    threading.Thread(target=_stdin_to_tunnel, args=(ws,), daemon=True, name="stdin-to-tunnel").start()
    out = sys.stdout.fileno()
    try:
        for message in ws:
            os.write(out, message if isinstance(message, bytes) else message.encode())
    except ConnectionClosed:
        pass
    reason = ws.close_reason
    if ws.close_code not in (None, 1000) and reason:
        print(f"stalwart shell tunnel: {reason}", file=sys.stderr)
        return 1
    return 0


def _stdin_to_tunnel(ws: ClientConnection) -> None:
    with contextlib.suppress(ConnectionClosed, OSError):
        for chunk in iter(lambda: os.read(0, CHUNK), b""):
            ws.send(chunk)
    with contextlib.suppress(ConnectionClosed, OSError):
        ws.close()
