"""Validate and extract a context .tgz so that nothing it holds can land outside the destination."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from stalwart.api.errors import ContextError
from stalwart.context.archive_members import (
    CHUNK,
    CORRUPT,
    MAX_TAIL,
    ArchiveLimits,
    CappedStream,
    Member,
    Planner,
    check_destination,
    inside,
    stream_cap,
    write_file,
)
from stalwart.context.pack import MAX_CONTEXT_BYTES

_UNREADABLE = (tarfile.TarError, EOFError, gzip.BadGzipFile, zlib.error)


def validate_archive(archive: bytes, *, max_size: int | None = MAX_CONTEXT_BYTES,
                     limits: ArchiveLimits | None = None) -> list[str]:
    """Run every check `safe_extract` makes, writing nothing; returns the member paths.

    Paths are relative and normalized; directories end in '/'. `limits`, when given, replaces `max_size`.
    """
    return [m.listed for m in _scan(archive, limits or ArchiveLimits(max_size))]


def safe_extract(
    archive: bytes, dest_dir: str | os.PathLike[str], *, max_size: int | None = MAX_CONTEXT_BYTES,
    limits: ArchiveLimits | None = None,
) -> list[str]:
    """Extract into `dest_dir` (created if missing) after validating the whole archive first."""
    limits = limits or ArchiveLimits(max_size)
    dest = Path(os.path.abspath(dest_dir))
    if dest.exists() and not dest.is_dir():
        raise ContextError(f"cannot extract the context into {dest}: it is not a directory")
    plan = _scan(archive, limits)
    if dest.exists():
        dest_real = os.path.realpath(dest)
        for member in plan:
            check_destination(dest_real, member)
    dest.mkdir(parents=True, exist_ok=True)
    _extract(archive, plan, dest, limits.max_size)
    return [m.listed for m in plan]


# ---- reading -------------------------------------------------------------------------------


@contextmanager
def _open(archive: bytes, max_size: int | None) -> Iterator[tuple[CappedStream, tarfile.TarFile]]:
    with gzip.GzipFile(fileobj=io.BytesIO(archive), mode="rb") as raw:
        stream = CappedStream(raw, stream_cap(max_size))
        with tarfile.open(fileobj=stream, mode="r:") as tar:
            yield stream, tar


def _scan(archive: bytes, limits: ArchiveLimits) -> list[Member]:
    """Read the archive once: each header is checked before its data; all data is read.

    Stops at the first header past `limits.max_members`, without reading further.
    """
    try:
        with _open(archive, limits.max_size) as (stream, tar):
            planner = Planner(limits)
            while (info := tar.next()) is not None:
                member = planner.add(info)
                if member is not None and not member.is_dir and info.size:
                    _drain(tar.extractfile(info))
            _check_tail(stream, tar.offset)
            return planner.members
    except ContextError:
        raise
    except CORRUPT as err:
        raise ContextError(f"context archive is corrupt: {err}") from err


def _drain(fileobj: IO[bytes] | None) -> None:
    if fileobj is None:  # not reached: _check_type lets through only regular files and directories
        return
    while fileobj.read(CHUNK):
        pass


def _check_tail(stream: CappedStream, end: int) -> None:
    """Only zero padding may follow the last member (a bad header makes tarfile stop early)."""
    stream.seek(end)
    seen = 0
    while chunk := stream.read(CHUNK):
        seen += len(chunk)
        if chunk.strip(b"\0"):
            raise ContextError("context archive is corrupt: unreadable data after the last member")
        if seen > MAX_TAIL:
            raise ContextError("context archive is corrupt: too much padding after the last member")


# ---- writing -------------------------------------------------------------------------------


def _extract(archive: bytes, plan: list[Member], dest: Path, max_size: int | None) -> None:
    dest_real = os.path.realpath(dest)
    try:
        with _open(archive, max_size) as (_stream, tar):
            for member in plan:
                target = inside(dest_real, member.rel)
                if member.is_dir:
                    os.makedirs(target, exist_ok=True)
                    os.chmod(target, 0o755)
                else:
                    write_file(tar, member, target)
    except _UNREADABLE as err:  # validated already, so only a change under our feet gets here
        raise ContextError(f"cannot extract the context archive: {err}") from err


