"""The Determined listener's routes for who the master is, logging in and out, and who is calling."""

from __future__ import annotations

from stalwart.api import permissions as P
from stalwart.api.determined_routes.declare import d
from stalwart.api.models.determined import users, wire
from stalwart.api.routes_table import AUTH, BAD, OPEN, OWN, SLOW, USER, RouteSpec

ROUTES: tuple[RouteSpec, ...] = (
    # who the master is (plain snake_case JSON; the CLI parses `version`), logging in and out, who is calling
    d("GET", "/info", OPEN, users.MasterInfo),
    d("POST", "/api/v1/auth/login", OPEN, users.LoginResponse, BAD, AUTH, SLOW, request=users.LoginRequest),
    d("POST", "/api/v1/auth/logout", USER, wire.Empty, permission=P.SIGN_OUT, scope=OWN),
    d("GET", "/api/v1/me", USER, users.GetMeResponse, permission=P.VIEW_USERS, scope=OWN),
)
