"""The master itself: who it is (cluster id, version), also the cheapest "is it up" probe."""

from __future__ import annotations

from stalwart.api.models import cluster
from stalwart.client.endpoints import Api, endpoint

INFO = endpoint("GET", "/api/v1/master", cluster.MasterInfo)


class MasterApi(Api):
    def master_info(self, *, timeout: float | None = None) -> cluster.MasterInfo:
        return self.call(INFO, timeout=timeout)
