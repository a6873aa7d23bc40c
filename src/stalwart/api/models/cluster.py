"""The master itself: identity and version."""

from __future__ import annotations

from stalwart.api.models.common import Response


class MasterInfo(Response):
    cluster_id: str
    version: str
    url: str | None = None
