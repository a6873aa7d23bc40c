"""How an entry of the Determined listener's table is declared: as the master's own, with Determined's error body."""

from __future__ import annotations

from stalwart.api.models.determined.wire import DetErrorBody
from stalwart.api.routes_table import RouteSpec, declare


def d(method: str, path: str, *args: object, **kw: object) -> RouteSpec:
    """`routes_table.declare` (its checks: a user route's permission and scope, known path values, the errors of
    its auth kind) with `DetErrorBody` as the error model."""
    return declare(method, path, *args, error_model=DetErrorBody, **kw)  # type: ignore[arg-type]  # declare's values
