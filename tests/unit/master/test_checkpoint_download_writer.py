"""master/experiments/checkpoint_download.py: a checkpoint's .tgz comes as a stream of bounded chunks with the same
bytes as its files, a missing checkpoint fails before the first chunk, and a reader that goes away stops the
writer (issue 29). Real files on a shared_fs storage."""

from __future__ import annotations

import io
import os
import pathlib
import tarfile
import threading
import time

import pytest

from stalwart.api.errors import NotFoundError
from stalwart.master.experiments import checkpoint_download as cd


def _checkpoint(root: pathlib.Path, uuid: str, size: int) -> dict[str, bytes]:
    files = {"model/weights.bin": os.urandom(size), "metadata.json": b'{"steps_completed": 3}', "empty.txt": b""}
    for rel, data in files.items():
        (root / uuid / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / uuid / rel).write_bytes(data)
    return files


def _writers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("download-")]


def test_the_archive_streams_in_bounded_chunks_with_the_same_bytes(tmp_path: pathlib.Path) -> None:
    files = _checkpoint(tmp_path, "ck-1", 5 * cd.CHUNK_BYTES + 123)
    chunks = list(cd.open_stream({"type": "shared_fs", "host_path": str(tmp_path)}, "ck-1"))
    assert len(chunks) >= 5 and max(len(c) for c in chunks) < 2 * cd.CHUNK_BYTES
    with tarfile.open(fileobj=io.BytesIO(b"".join(chunks)), mode="r:gz") as tar:
        got = {m.name.removeprefix("./"): _read(tar, m) for m in tar.getmembers() if m.isfile()}
    assert got == files


def _read(tar: tarfile.TarFile, member: tarfile.TarInfo) -> bytes:
    f = tar.extractfile(member)
    assert f is not None
    return f.read()


def test_a_missing_checkpoint_fails_before_the_first_chunk(tmp_path: pathlib.Path) -> None:
    with pytest.raises(NotFoundError, match="ck-gone"):
        cd.open_stream({"type": "shared_fs", "host_path": str(tmp_path)}, "ck-gone")


def test_a_reader_that_goes_away_stops_the_writer(tmp_path: pathlib.Path) -> None:
    _checkpoint(tmp_path, "ck-2", 40 * cd.CHUNK_BYTES)
    stream = cd.open_stream({"type": "shared_fs", "host_path": str(tmp_path)}, "ck-2")
    assert next(iter(stream))
    assert _writers(), "the writer runs while the reader reads"
    del stream  # the answer dropped half-way: the client went away
    _wait_until_no_writer()
    unread = cd.open_stream({"type": "shared_fs", "host_path": str(tmp_path)}, "ck-2")
    assert _writers()
    del unread  # dropped before the first chunk was read: a client gone before the answer began
    _wait_until_no_writer()


def _wait_until_no_writer() -> None:
    deadline = time.monotonic() + 10
    while _writers() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _writers(), "the writer still runs with nobody reading"
