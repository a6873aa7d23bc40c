"""The master itself: identity and version."""

from __future__ import annotations

from typing import Optional

from stalwart.api.models.common import Response


class MasterInfo(Response):
    cluster_id: str
    version: str
    url: Optional[str] = None
