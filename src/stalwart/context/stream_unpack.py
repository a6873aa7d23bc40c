"""Extract a .tgz as it arrives (a download), with the checks of `unpack.safe_extract`, never holding it whole.

`safe_extract` validates a whole archive in memory before writing; a download (a checkpoint of many GiB) cannot be
held so. Here the archive is read once, in order (tarfile's stream mode over a gzip stream), each member header
checked as `unpack` checks it (no absolute path, no '..', no link, device or FIFO, nothing twice, the size limit)
before its data is written, in chunks, into a staging directory beside the destination. Only an archive read to its
end without a fault is moved into the destination (whose own entries must not redirect or block a member); any
fault removes the staging directory, so nothing of a refused or broken archive is left.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import shutil
import tarfile
import tempfile
from collections.abc import Iterator
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


def extract_stream(source: io.RawIOBase | IO[bytes], dest_dir: str | os.PathLike[str], *, max_size: int | None,
                   what: str = "archive") -> list[str]:
    """Read the gzipped tar `source` (any object with `read(n)`) to its end into `dest_dir` (created if missing);
    the member paths (directories end with '/'). `what` names the archive in errors ("checkpoint archive")."""
    dest = Path(os.path.abspath(dest_dir))
    if dest.exists() and not dest.is_dir():
        raise ContextError(f"cannot extract the {what} into {dest}: it is not a directory")
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.partial-", dir=dest.parent))
    try:
        with _renamed(what):
            members = _extract_all(source, staging, max_size)
            _move_into(staging, dest, members)
        return [m.listed for m in members]
    finally:
        shutil.rmtree(staging, ignore_errors=True)


@contextlib.contextmanager
def _renamed(what: str) -> Iterator[None]:
    """unpack's errors speak of a 'context archive': here they name what is being extracted."""
    try:
        yield
    except ContextError as err:
        raise ContextError(str(err).replace("context archive", what)) from None
    except CORRUPT as err:
        raise ContextError(f"{what} is corrupt: {err}") from None


def _extract_all(source: io.RawIOBase | IO[bytes], staging: Path, max_size: int | None) -> list[Member]:
    planner = Planner(ArchiveLimits(max_size))
    root = os.path.realpath(staging)
    with gzip.GzipFile(fileobj=source, mode="rb") as raw:
        stream = CappedStream(raw, stream_cap(max_size))
        with tarfile.open(fileobj=stream, mode="r|") as tar:
            for info in tar:
                member = planner.add(info)  # every check, before any of its data is written
                if member is None:
                    continue
                target = inside(root, member.rel)
                if member.is_dir:
                    os.makedirs(target, exist_ok=True)
                    os.chmod(target, 0o755)
                else:
                    write_file(tar, member, target)
        _check_rest(stream)
    return planner.members


def _check_rest(stream: CappedStream) -> None:
    """What follows the tar's end marker must be zero padding, and not much of it."""
    seen = 0
    while chunk := stream.read(CHUNK):
        seen += len(chunk)
        if chunk.strip(b"\0"):
            raise ContextError("context archive is corrupt: unreadable data after the last member")
        if seen > MAX_TAIL:
            raise ContextError("context archive is corrupt: too much padding after the last member")


def _move_into(staging: Path, dest: Path, members: list[Member]) -> None:
    """The extracted tree into `dest`: renamed whole when `dest` is new, else member by member after checking that
    nothing already in `dest` redirects or blocks one."""
    if not dest.exists():
        os.rename(staging, dest)
        return
    dest_real = os.path.realpath(dest)
    for member in members:
        check_destination(dest_real, member)
    for member in members:
        target = inside(dest_real, member.rel)
        if member.is_dir:
            os.makedirs(target, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            os.replace(os.path.join(staging, *member.rel.split("/")), target)
