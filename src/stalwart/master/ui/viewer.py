"""Who is looking at a page: the signed-in user the header names (display name or user name), admin or not.

A page route leaves the caller's identity in `request.state.identity` (routes/contract); pages answered before
that check (the router's 404) look at the request's session themselves, quietly: no session, no name.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request

from stalwart.api.errors import StalwartError
from stalwart.master.identity import sessions
from stalwart.master.identity.sessions import Identity
from stalwart.master.queries import users as q


@dataclass(frozen=True)
class Viewer:
    username: str
    name: str  # what the header shows: the display name, else the user name
    admin: bool


def identity_of(request: Request) -> Identity | None:
    """The request's identity: the one its route's check found, else its session's (None without a live one)."""
    ident: Identity | None = getattr(request.state, "identity", None)
    if ident is not None:
        return ident
    try:
        return sessions.authenticate(request.app.state.master, request)
    except StalwartError:
        return None


def viewer_of(request: Request) -> Viewer | None:
    ident = identity_of(request)
    if ident is None:
        return None
    with request.app.state.master.db.begin() as conn:
        user = q.by_name(conn, ident.username)
    shown = (user["display_name"] if user is not None else None) or ident.username
    return Viewer(ident.username, shown, ident.admin)
