"""Which master a command talks to: -m, STALWART_MASTER, DET_MASTER, else the local cluster (started if needed)."""

from __future__ import annotations

import os

from stalwart.cli import home as homes, local_cluster, prompts
from stalwart.cli.output import info
from stalwart.client import Client, credentials, normalize_master_url


def configured_master(flag: str | None) -> str | None:
    for value in (flag, os.environ.get("STALWART_MASTER"), os.environ.get("DET_MASTER")):
        if value:
            return normalize_master_url(value)
    return None


def master_url(flag: str | None) -> str:
    url = configured_master(flag)
    if url:
        return url
    rec = local_cluster.running_local()
    if rec:
        return rec["url"]
    info("No master configured (pass -m or set STALWART_MASTER); starting a local cluster "
         f"in {homes.home()} ...")
    rec = local_cluster.start()
    info(f"Local cluster started: master at {rec['url']} (stop it with `stalwart down`).")
    return rec["url"]


def client(flag: str | None, user: str | None = None) -> Client:
    """A client of the chosen master carrying the session `credentials.session_for` picks (asking for the
    password of a user named with -u when none is kept). As in Determined's CLI, only `stalwart user login`
    changes the active user: a session opened for -u (or DET_USER/DET_PASS) is kept, not made active."""
    url = master_url(flag)
    token = credentials.session_for(url, user, ask_password=_ask_password, make_active=False)
    return Client(url, session_token=token)


def _ask_password(username: str) -> str:
    return prompts.secret(f"Password for user '{username}'")
