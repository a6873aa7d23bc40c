"""Which master the SDK talks to, and with which credentials.

The master: the `master` argument, else STALWART_MASTER, else DET_MASTER, else the running local cluster that
`stalwart up` (or any CLI command) started, found the way the CLI finds it: the record in
$STALWART_HOME/local-cluster.json, whose master must answer with the recorded cluster id.

The session: `client.credentials.session_for` (a user and password given to `login`, else STALWART_USER /
DET_USER with STALWART_PASSWORD / DET_PASS, else a task's owner session STALWART_USER_TOKEN / DET_USER_TOKEN,
else the auth file's active user for that master, which `stalwart user login` and `stalwart up` keep).

Inside a task (a trial, a command) the environment the master gives it names the master (STALWART_MASTER) and
holds the task's credentials: its allocation's token (STALWART_ALLOCATION_TOKEN, also DET_SESSION_TOKEN) and its
owner's session (STALWART_USER_TOKEN, also DET_USER_TOKEN). The SDK sends the allocation token only to that
master, and is patient there the way the harness is (a master restart is waited out).
"""

from __future__ import annotations

import json
import os
import pathlib
from dataclasses import dataclass

from stalwart.api.errors import MasterUnavailable, StalwartError
from stalwart.client import Client, credentials, normalize_master_url

TASK_RETRY_S = 900.0  # the harness's patience (stalwart.harness.session), unless STALWART_TRIAL_RETRY_S says


@dataclass(frozen=True)
class Target:
    """A master's URL and what to send it: a user's session, and the task's allocation token inside a task."""

    url: str
    allocation_token: str | None = None
    retry_for: float = 0.0
    session_token: str | None = None

    def client(self) -> Client:
        return Client(self.url, allocation_token=self.allocation_token, session_token=self.session_token,
                      retry_for=self.retry_for)


def resolve(master: str | None, user: str | None = None, password: str | None = None) -> Target:
    """Where to connect and as whom: the argument, the environment, or the local cluster (MasterUnavailable if
    none); with `user`, that user's kept session or a login with `password` (AuthError when neither works)."""
    url = _configured(master) or _local_cluster_url()
    if url is None:
        raise MasterUnavailable(
            "no Stalwart master to connect to: pass login(master=...), set STALWART_MASTER (or DET_MASTER), "
            "or start a local cluster with `stalwart up`")
    token, patience = _task_credentials(url)
    session = credentials.session_for(url, user, password, make_active=False)
    return Target(url, token, patience, session)


def _configured(master: str | None) -> str | None:
    for value in (master, os.environ.get("STALWART_MASTER"), os.environ.get("DET_MASTER")):
        if value and value.strip():
            return normalize_master_url(value)
    return None


def _task_credentials(url: str) -> tuple[str | None, float]:
    """The task's allocation token and patience when `url` is the master of the task this process runs in."""
    token = os.environ.get("STALWART_ALLOCATION_TOKEN") or os.environ.get("DET_SESSION_TOKEN")
    task_master = os.environ.get("STALWART_MASTER") or os.environ.get("DET_MASTER")
    if not token or not task_master or normalize_master_url(task_master) != url:
        return None, 0.0
    try:
        patience = float(os.environ.get("STALWART_TRIAL_RETRY_S", TASK_RETRY_S))
    except ValueError:
        patience = TASK_RETRY_S
    return token, patience


def _stalwart_home() -> pathlib.Path:
    return pathlib.Path(os.environ.get("STALWART_HOME") or pathlib.Path.home() / ".stalwart").expanduser()


def _local_cluster_url() -> str | None:
    """The URL of this home's local cluster when its master answers as that cluster, else None."""
    try:
        record = json.loads((_stalwart_home() / "local-cluster.json").read_text())
    except (OSError, ValueError):
        return None
    url = record.get("url") if isinstance(record, dict) else None
    if not isinstance(url, str) or not url:
        return None
    try:
        with Client(url, timeout=2.0) as probe:
            info = probe.master_info()
    except StalwartError:
        return None
    expected = record.get("cluster_id")
    if expected and info.cluster_id != expected:
        return None
    return normalize_master_url(url)
