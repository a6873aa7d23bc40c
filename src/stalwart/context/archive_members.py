"""The checks every member of a context-style .tgz passes, and the writing of one member, shared by the two ways
of extracting one: `unpack` (a whole archive in memory, validated before anything is written) and `stream_unpack`
(an archive read once as it arrives, e.g. a checkpoint download).

A member has a relative path with no '..', no absolute path and no NUL (`normalize`); it is a regular file or a
directory, never a link, device or FIFO (`check_type`); it appears once and never inside a file (`Planner`); the
archive's files stay within `ArchiveLimits`; the decompressed stream is capped (`CappedStream`); and what a member
is written to resolves inside the destination (`inside`, `check_destination`, `write_file` with O_NOFOLLOW).
"""

from __future__ import annotations

import gzip
import io
import os
import shutil
import tarfile
import zlib
from dataclasses import dataclass

from stalwart.api.errors import ContextError
from stalwart.context.pack import MAX_CONTEXT_BYTES, MIB, file_mode, format_size

CHUNK = MIB
# A legitimate tar ends with two zero blocks padded to a 10 KiB record; allow far more than that.
MAX_TAIL = MIB
CORRUPT = (tarfile.TarError, EOFError, OSError, zlib.error, ValueError)

@dataclass(frozen=True)
class ArchiveLimits:
    """How much an archive may hold. None: no limit. A `*_setting` names where that limit is configured, so
    that the error tells how to raise it (e.g. "limits.max_context_members in the master config")."""

    max_size: int | None = MAX_CONTEXT_BYTES  # total bytes of its regular files, uncompressed
    max_members: int | None = None  # entries (files and directories); counted as each header is read
    size_setting: str = ""
    members_setting: str = ""


@dataclass(frozen=True)
class Member:
    info: tarfile.TarInfo
    rel: str  # normalized relative posix path
    is_dir: bool

    @property
    def listed(self) -> str:
        return self.rel + "/" if self.is_dir else self.rel


def _raise_hint(setting: str) -> str:
    return f"; the limit is {setting}: raise it there if this context needs more" if setting else ""



class CappedStream:
    """A seekable view of the decompressed tar that refuses to go past `cap` bytes (None: no cap)."""

    def __init__(self, raw: gzip.GzipFile, cap: int | None) -> None:
        self.raw = raw
        self.cap = cap

    def read(self, n: int | None = -1) -> bytes:
        pos = self.raw.tell()
        if n is None or n < 0:
            data = self.raw.read(-1 if self.cap is None else self.cap - pos + 1)
            self._check(pos + len(data))
            return data
        self._check(pos + n)  # refuse before buffering: a header may claim any size
        return self.raw.read(n)

    def seek(self, pos: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_CUR:
            pos += self.raw.tell()
        elif whence != io.SEEK_SET:
            raise io.UnsupportedOperation("only absolute and relative seeks")
        self._check(pos)
        return self.raw.seek(pos)

    def tell(self) -> int:
        return self.raw.tell()

    def write(self, data: bytes) -> int:
        raise io.UnsupportedOperation("the context archive is read, never written")

    def close(self) -> None:
        """Nothing to release: `raw` belongs to the caller, which closes it."""

    def _check(self, pos: int) -> None:
        if self.cap is not None and pos > self.cap:
            raise ContextError(
                "context archive is too large uncompressed "
                f"(over {format_size(self.cap)} of tar data)"
            )


def stream_cap(max_size: int | None) -> int | None:
    # Content is limited to max_size; headers get the same again plus a fixed allowance (100,000 members of
    # a legitimate context take about 50-80 MiB of headers and padding).
    return None if max_size is None else 2 * max_size + 64 * MIB


class Planner:
    """Checks each member header in turn and keeps the ones to extract."""

    def __init__(self, limits: ArchiveLimits) -> None:
        self.limits = limits
        self.total = 0
        self.count = 0
        self.members: list[Member] = []
        self.kinds: dict[str, bool] = {}  # path -> is_dir, for members and their implied parents

    def add(self, info: tarfile.TarInfo) -> Member | None:
        self.count += 1
        most = self.limits.max_members
        if most is not None and self.count > most:
            raise ContextError(f"context archive has more than {most:,} members (files and directories)"
                               f"{_raise_hint(self.limits.members_setting)}")
        rel = _normalize(info.name)
        _check_type(info)
        if not rel:
            if not info.isdir():
                raise _bad(info, "is a file without a name")
            return None  # "./" itself
        if info.isreg():
            self._count(info)
        self._record(info, rel)
        member = Member(info=info, rel=rel, is_dir=info.isdir())
        self.members.append(member)
        return member

    def _count(self, info: tarfile.TarInfo) -> None:
        self.total += info.size
        most = self.limits.max_size
        if most is not None and self.total > most:
            raise ContextError(
                f"context archive is over the {format_size(most)} limit uncompressed "
                f"(reached at member {info.name!r}){_raise_hint(self.limits.size_setting)}"
            )

    def _record(self, info: tarfile.TarInfo, rel: str) -> None:
        parts = rel.split("/")
        for i in range(1, len(parts)):
            parent = "/".join(parts[:i])
            if self.kinds.setdefault(parent, True) is False:
                raise _bad(info, f"is inside {parent!r}, which the archive holds as a file")
        seen = self.kinds.get(rel)
        if seen is not None and not (seen and info.isdir()):
            raise _bad(info, "appears more than once (not as a directory each time)")
        self.kinds[rel] = info.isdir()


def _normalize(name: str) -> str:
    """The member's relative path without '.' parts; ContextError for anything that could escape."""
    if "\x00" in name:
        raise ContextError(f"context archive member {name!r} has a NUL byte in its name")
    if name.startswith("/"):
        raise ContextError(f"context archive member {name!r} has an absolute path")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ContextError(f"context archive member {name!r} has a '..' path component")
    return "/".join(parts)


def _check_type(info: tarfile.TarInfo) -> None:
    if info.issym():
        raise _bad(info, f"is a symbolic link (to {info.linkname!r}); links are not allowed")
    if info.islnk():
        raise _bad(info, f"is a hard link (to {info.linkname!r}); links are not allowed")
    if info.ischr() or info.isblk() or info.isfifo():
        raise _bad(info, "is a device or FIFO; only regular files and directories are allowed")
    if not (info.isreg() or info.isdir()):
        raise _bad(info, "has an unsupported type; only regular files and directories are allowed")


def _bad(info: tarfile.TarInfo, why: str) -> ContextError:
    return ContextError(f"context archive member {info.name!r} {why}")


def inside(dest_real: str, rel: str) -> str:
    """The lexical target path, after proving that its resolved path stays inside dest."""
    target = os.path.join(dest_real, *rel.split("/"))
    resolved = os.path.realpath(target)
    if resolved != dest_real and not resolved.startswith(dest_real.rstrip(os.sep) + os.sep):
        raise ContextError(f"context archive member {rel!r} would be written outside {dest_real}")
    return target


def check_destination(dest_real: str, member: Member) -> None:
    """What is already in dest must not redirect or block this member."""
    target = inside(dest_real, member.rel)
    if os.path.islink(target):
        raise ContextError(f"cannot extract {member.rel!r}: a symbolic link is already there")
    if os.path.lexists(target) and os.path.isdir(target) != member.is_dir:
        raise ContextError(f"cannot extract {member.rel!r}: something else is already there")
    parent = os.path.dirname(target)
    while parent != dest_real and not os.path.lexists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise ContextError(f"cannot extract {member.rel!r}: {parent} is not a directory")



def write_file(tar: tarfile.TarFile, member: Member, target: str) -> None:
    os.makedirs(os.path.dirname(target), exist_ok=True)
    source = tar.extractfile(member.info)
    if source is None:  # _check_type lets through only regular files and directories
        raise ContextError(f"cannot extract {member.rel}: it is not a regular file")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    with os.fdopen(os.open(target, flags, 0o600), "wb") as out:
        shutil.copyfileobj(source, out, CHUNK)
    os.chmod(target, file_mode(member.info.mode))
    os.utime(target, (member.info.mtime, member.info.mtime))
