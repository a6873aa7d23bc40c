"""Checkpoints (users): describe one, download its files as a .tgz through the master."""

from __future__ import annotations

from stalwart.api.models import checkpoints
from stalwart.client.endpoints import Api, endpoint, file_route

DESCRIBE = endpoint("GET", "/api/v1/checkpoints/{uuid}", checkpoints.CheckpointEnvelope)
DOWNLOAD = file_route("GET", "/api/v1/checkpoints/{uuid}/download")


class CheckpointsApi(Api):
    def get_checkpoint(self, uuid: str) -> checkpoints.CheckpointEnvelope:
        return self.call(DESCRIBE, path={"uuid": uuid})

    def download_checkpoint(self, uuid: str) -> bytes:
        """The checkpoint's files as a gzipped tar archive."""
        return self.call_bytes(DOWNLOAD, path={"uuid": uuid})
