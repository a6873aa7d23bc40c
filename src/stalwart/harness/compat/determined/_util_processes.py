"""The process and file-system helpers of `determined.util` (Determined 0.38.1's signatures and behaviour)."""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
import signal
import socket
import stat
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

from stalwart.process_tree import descendants

logger = logging.getLogger("determined")
_RMTREE_TRIES = 5
_FORWARDED_BY_DEFAULT = ("SIGINT", "SIGTERM", "SIGHUP", "SIGUSR1", "SIGUSR2", "SIGWINCH", "SIGBREAK")


def rmtree_nfs_safe(path: str | os.PathLike[str], ignore_errors: bool = False,
                    onerror: Callable[[Any, Any, Any], Any] | None = None) -> None:
    """shutil.rmtree, tried up to 5 times when it fails with ENOTEMPTY (seen on NFS)."""
    for attempt in range(1, _RMTREE_TRIES + 1):
        try:
            shutil.rmtree(path, ignore_errors=ignore_errors, onerror=onerror)
            return
        except OSError as err:
            if err.errno != errno.ENOTEMPTY or attempt == _RMTREE_TRIES:
                raise
            logger.debug(f"rmtree() failed ({err}), is this NFS?  Retrying (tries={attempt})...")
            time.sleep(2**attempt / 100)


def check_sshd(peer_addr: str, deadline: float, port: int) -> None:
    """Wait until `peer_addr:port` accepts a connection and sends a byte; ValueError after `deadline` (epoch s)."""
    while True:
        try:
            with socket.create_connection((peer_addr, port), timeout=1) as sock:
                if sock.recv(1):
                    return
        except OSError:
            pass
        if time.time() > deadline:
            raise ValueError(f"Chief machine was unable to connect to sshd on peer machine at {peer_addr}:{port}")
        time.sleep(0.1)


def force_create_symlink(src: str, dst: str) -> None:
    """Make `src` (a directory) and point `dst` at it, replacing whatever `dst` was."""
    os.makedirs(src, exist_ok=True)
    try:
        os.symlink(src, dst, target_is_directory=True)
        return
    except FileExistsError:
        pass
    try:
        if os.path.islink(dst) or os.path.isfile(dst):
            os.unlink(dst)
        else:
            rmtree_nfs_safe(dst)
        with contextlib.suppress(FileExistsError):  # another worker won the race
            os.symlink(src, dst, target_is_directory=True)
            os.chmod(dst, os.stat(dst).st_mode | stat.S_IWOTH)
    except PermissionError as err:
        logger.warning(f"{err} trying to remove {dst}")


def signal_process_tree(p: subprocess.Popen[Any], signum: Any) -> None:
    """Send `signum` to every descendant of `p` (not to `p` itself); failures are logged."""
    try:
        for pid in descendants(p.pid):
            with contextlib.suppress(ProcessLookupError):  # it exited meanwhile
                os.kill(pid, signum)
    except Exception as err:  # noqa: BLE001 - Determined logs any failure and goes on
        logger.error(f"{err} trying to forward signal {signum} to children")


@contextlib.contextmanager
def forward_signals(p: subprocess.Popen[Any], *signums: signal.Signals,
                    signal_children: bool = False) -> Iterator[None]:
    """While inside, pass `signums` (default INT, TERM, HUP, USR1, USR2, WINCH) on to `p` (and its
    descendants with `signal_children`); the previous handlers come back afterwards."""
    chosen = signums or tuple(getattr(signal, n) for n in _FORWARDED_BY_DEFAULT if hasattr(signal, n))

    def pass_on(signum: int, _frame: Any) -> None:
        if signal_children:
            signal_process_tree(p, signum)
        p.send_signal(signum)

    previous: list[tuple[signal.Signals, Any]] = []
    try:
        for signum in chosen:
            previous.append((signum, signal.signal(signum, pass_on)))
        yield
    finally:
        for signum, handler in previous:
            if handler is not None:
                signal.signal(signum, handler)
