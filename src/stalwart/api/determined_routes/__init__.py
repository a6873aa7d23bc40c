"""The route table of the Determined listener: the calls Determined 0.38.1's own CLI and SDK make, at its paths.

Entries are declared as the master's own (`declare.d`: auth kind, permission, scope, errors), so the same checks run
on them and the authorization conformance suite covers them; their error bodies are Determined's (`DetErrorBody`).
Stalwart's own contract stays on the master's port; this table is served on the port of the master config's
`determined_api` (ARCHITECTURE.md, "Determined's CLI and SDK on a listener of their own"). One module per area.
"""

from __future__ import annotations

from stalwart.api.determined_routes import auth, checkpoints, detached, experiments, logs
from stalwart.api.routes_table import RouteSpec

DET_ROUTES: tuple[RouteSpec, ...] = (*auth.ROUTES, *experiments.ROUTES, *logs.ROUTES, *checkpoints.ROUTES,
                                     *detached.ROUTES)
DET_BY_KEY: dict[tuple[str, str], RouteSpec] = {r.key: r for r in DET_ROUTES}
