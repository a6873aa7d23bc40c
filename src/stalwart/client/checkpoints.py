"""Checkpoints (users): describe one, download its files as a .tgz through the master, delete some."""

from __future__ import annotations

from stalwart.api.models import checkpoints, common
from stalwart.client.endpoints import Api, body, endpoint, file_route

DESCRIBE = endpoint("GET", "/api/v1/checkpoints/{uuid}", checkpoints.CheckpointEnvelope)
DELETE = endpoint("DELETE", "/api/v1/checkpoints", common.Empty, checkpoints.DeleteCheckpoints)
DOWNLOAD = file_route("GET", "/api/v1/checkpoints/{uuid}/download")


class CheckpointsApi(Api):
    def get_checkpoint(self, uuid: str) -> checkpoints.CheckpointEnvelope:
        return self.call(DESCRIBE, path={"uuid": uuid})

    def download_checkpoint(self, uuid: str) -> bytes:
        """The checkpoint's files as a gzipped tar archive."""
        return self.call_bytes(DOWNLOAD, path={"uuid": uuid})

    def delete_checkpoints(self, uuids: list[str]) -> None:
        """Remove these checkpoints' files from storage and mark them DELETED (404 naming the first unknown uuid,
        and then nothing is deleted)."""
        self.call(DELETE, json_body=body(checkpoints.DeleteCheckpoints, uuids=list(uuids)))
