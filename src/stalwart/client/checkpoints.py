"""Checkpoints (users): describe one, download its files as a .tgz stream through the master, delete some."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator

import httpx

from stalwart.api.errors import MasterUnavailable
from stalwart.api.models import checkpoints, common
from stalwart.client.endpoints import Api, body, endpoint, file_route

DESCRIBE = endpoint("GET", "/api/v1/checkpoints/{uuid}", checkpoints.CheckpointEnvelope)
DELETE = endpoint("DELETE", "/api/v1/checkpoints", common.Empty, checkpoints.DeleteCheckpoints)
DOWNLOAD = file_route("GET", "/api/v1/checkpoints/{uuid}/download")


class CheckpointsApi(Api):
    def get_checkpoint(self, uuid: str) -> checkpoints.CheckpointEnvelope:
        return self.call(DESCRIBE, path={"uuid": uuid})

    def download_checkpoint(self, uuid: str) -> bytes:
        """The checkpoint's files as a gzipped tar archive, whole in memory (for small ones; `open_checkpoint_download`
        reads one as it arrives)."""
        return self.call_bytes(DOWNLOAD, path={"uuid": uuid})

    @contextlib.contextmanager
    def open_checkpoint_download(self, uuid: str) -> Iterator[io.RawIOBase]:
        """The checkpoint's gzipped tar archive as a file to `read(n)` while the master sends it (never whole in
        memory); closed when the block ends. A connection lost half-way raises MasterUnavailable."""
        resp = self.send(DOWNLOAD.method, DOWNLOAD.path(uuid=uuid), stream=True)
        try:
            yield _ResponseReader(resp, self.url)
        finally:
            resp.close()

    def delete_checkpoints(self, uuids: list[str]) -> None:
        """Remove these checkpoints' files from storage and mark them DELETED (404 naming the first unknown uuid,
        and then nothing is deleted)."""
        self.call(DELETE, json_body=body(checkpoints.DeleteCheckpoints, uuids=list(uuids)))


class _ResponseReader(io.RawIOBase):
    """A streamed answer's body as a readable file: the chunks as they arrive, one at a time in memory."""

    def __init__(self, resp: httpx.Response, url: str) -> None:
        self._chunks = resp.iter_bytes()
        self._pending = b""
        self._url = url

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]  # io's stubs name a Buffer
        while not self._pending:
            try:
                self._pending = next(self._chunks)
            except StopIteration:
                return 0
            except httpx.TransportError as err:
                raise MasterUnavailable(f"lost the connection to the master at {self._url} during the download: "
                                        f"{err or type(err).__name__}") from None
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n
