"""A checkpoint's files as a .tgz stream for `checkpoint download` and the UI: the archive is written file by file
as the client reads it, never whole in the master's memory.

A writer thread reads the checkpoint (straight from a shared file system, or from a scratch copy on disk for other
backends) and writes its tar members through gzip into a `_Pipe`; the answer's body takes the pipe's chunks. The
pipe holds at most QUEUED_CHUNKS chunks of CHUNK_BYTES: a slow client makes the writer wait, it does not make the
master buffer. A client that goes away stops the writer and its scratch copy is removed.
"""

from __future__ import annotations

import pathlib
import queue
import tarfile
import tempfile
import threading
from collections.abc import Iterator, Mapping
from typing import IO, Any, cast

from stalwart.config import secrets
from stalwart.storage import make_storage

CHUNK_BYTES = 1 << 20
QUEUED_CHUNKS = 8
COMPRESS_LEVEL = 0  # a .tgz whose members are stored: weights barely compress, and zlib's lowest real level
# (1) runs at ~20-40 MB/s a core on them, which would bound every download and load the master's CPU
_PUT_WAIT_S = 0.5  # how often a waiting writer looks whether the client went away


class _ReaderGone(Exception):
    """The client stopped reading: the writer stops."""


class _Ready:
    """The checkpoint was found: its archive follows."""


class _Done:
    """The archive is complete."""


class _Pipe:
    """A write-only file for the tar writer whose bytes go, CHUNK_BYTES at a time, into a bounded queue."""

    def __init__(self) -> None:
        self.items: queue.Queue[object] = queue.Queue(maxsize=QUEUED_CHUNKS)
        self.reader_gone = threading.Event()
        self._pending = bytearray()

    def write(self, data: bytes) -> int:
        self._pending += data
        if len(self._pending) >= CHUNK_BYTES:
            self.send(bytes(self._pending))
            self._pending.clear()
        return len(data)

    def flush(self) -> None:
        """Nothing to do: chunks go when full, and the rest at `finish`."""

    def finish(self) -> None:
        if self._pending:
            self.send(bytes(self._pending))
            self._pending.clear()
        self.send(_Done())

    def send(self, item: object) -> None:
        while not self.reader_gone.is_set():
            try:
                self.items.put(item, timeout=_PUT_WAIT_S)
                return
            except queue.Full:
                continue
        raise _ReaderGone()


def _write(storage_config: Mapping[str, Any], uuid: str, pipe: _Pipe) -> None:
    """The writer thread: `_Ready` once the checkpoint's files are at hand, then the archive, then `_Done`; an
    error (its storage's secrets masked) in their place when something fails."""
    try:
        storage = make_storage(dict(storage_config))
        with tempfile.TemporaryDirectory(prefix="stalwart-download-") as scratch, \
                storage.restore_path(uuid, pathlib.Path(scratch)) as path:
            pipe.send(_Ready())
            # "w:gz" only writes to its file (and asks no name, mode or position of it): the pipe is enough
            with tarfile.open(fileobj=cast("IO[bytes]", pipe), mode="w:gz", compresslevel=COMPRESS_LEVEL) as tar:
                tar.add(path, arcname=".")
            pipe.finish()
    except _ReaderGone:
        return
    except Exception as err:  # handed to the reader: the answer's error, or a broken stream
        values = secrets.storage_secret_values(storage_config)
        shown = type(err)(secrets.masked(str(err), values)) if values and _rebuildable(err) else err
        try:
            pipe.send(shown)
        except _ReaderGone:
            return


def _rebuildable(err: Exception) -> bool:
    try:
        type(err)("")
    except Exception:  # an error type that needs more arguments: shown as it is
        return False
    return True


def open_stream(storage_config: Mapping[str, Any], uuid: str) -> Iterator[bytes]:
    """The checkpoint's .tgz as chunks. Raises (NotFoundError, a storage error) before the first chunk when its
    files cannot be read; a failure after that ends the stream early (the client sees a broken download).
    Blocks until the files are at hand: call it off the event loop."""
    pipe = _Pipe()
    threading.Thread(target=_write, args=(storage_config, uuid, pipe), name=f"download-{uuid}", daemon=True).start()
    first = pipe.items.get()
    if isinstance(first, BaseException):
        raise first
    return _Chunks(pipe)


class _Chunks:
    """The archive's chunks as they come. Closing it, or dropping it unread (a client gone before the answer
    began), stops the writer."""

    def __init__(self, pipe: _Pipe) -> None:
        self._pipe = pipe

    def __iter__(self) -> _Chunks:
        return self

    def __next__(self) -> bytes:
        if self._pipe.reader_gone.is_set():
            raise StopIteration
        item = self._pipe.items.get()
        if isinstance(item, bytes):
            return item
        self.close()
        if isinstance(item, BaseException):
            raise item
        raise StopIteration  # _Done

    def close(self) -> None:
        self._pipe.reader_gone.set()

    def __del__(self) -> None:
        self.close()
