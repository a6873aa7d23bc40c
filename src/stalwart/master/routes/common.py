"""Helpers shared by the route modules: the master from the request, JSON bodies, auth shortcuts."""

from __future__ import annotations

import json

from fastapi import Request

from stalwart.api.errors import InvalidRequest
from stalwart.master.auth import tokens
from stalwart.master.service import Master


def master(request: Request) -> Master:
    return request.app.state.master


async def body(request: Request) -> dict:
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


def agent_only(request: Request) -> Master:
    m = master(request)
    tokens.require_cluster_token(request, m.cluster_token)
    return m


def allocation_of(request: Request) -> tuple[Master, str]:
    m = master(request)
    return m, tokens.require_allocation(request, m.secret)
