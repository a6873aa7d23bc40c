"""Helpers shared by the route modules: the master from the request, typed path and query values, JSON bodies."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import Path, Query, Request

from stalwart.api.errors import InvalidRequest
from stalwart.api.models.common import MAX_ID
from stalwart.master.identity import tokens
from stalwart.master.service import Identity, Master

IdPath = Annotated[int, Path(ge=0, le=MAX_ID, description="a database id (64-bit)")]
"""A path id: out of a signed 64-bit column's range is a 400, not a database overflow."""
Offset = Annotated[int, Query(ge=0, le=MAX_ID, description="rows to skip")]
Limit = Annotated[int, Query(ge=1, le=100_000, description="the most rows to return")]
AfterId = Annotated[int, Query(ge=0, le=MAX_ID, description="only rows with a larger id")]


def identity(request: Request) -> Identity:
    """The caller of a user route (its check, `routes.contract.user_check`, left it on the request)."""
    ident: Identity = request.state.identity
    return ident


def master(request: Request) -> Master:
    m: Master = request.app.state.master
    return m


async def body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw:
        return {}
    try:
        data = json.loads(raw)
    except ValueError as err:
        raise InvalidRequest(f"request body is not valid JSON: {err}") from None
    except RecursionError:
        raise InvalidRequest("request body is nested too deeply to parse") from None
    if not isinstance(data, dict):
        raise InvalidRequest("request body must be a JSON object")
    return data


def caller(request: Request) -> str:
    """The name of the user a user route was called by (checked by routes/contract before the handler runs)."""
    name: str = request.state.identity.username
    return name


def owner_of_new(request: Request, asked: str | None) -> str:
    """Who owns what this call creates: its caller. A body naming someone else is refused, never ignored."""
    me = caller(request)
    if asked is not None and asked != me:
        raise InvalidRequest(f"owner: {asked!r} is not you ({me}); what you create is yours (leave owner out)")
    return me


def allocation_of(request: Request) -> tuple[Master, str]:
    m = master(request)
    return m, tokens.require_allocation(request, m.secret)
