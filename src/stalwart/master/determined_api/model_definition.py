"""A context as Determined's client sends it (a list of `v1File`: path, tar type, base64 content) made into the .tgz
Stalwart's own create takes (det-wire.md §2.1). Only the packing is here: the archive's members, size and
entrypoint are checked by the master's create, as for a context `stalwart e create` packed."""

from __future__ import annotations

import base64
import binascii
import gzip
import io
import posixpath
import tarfile

from stalwart.api.errors import InvalidRequest
from stalwart.api.models.determined.experiments import DIRECTORY, REGULAR_FILE, V1File
from stalwart.context.pack import MAX_CONTEXT_BYTES, file_mode, format_size

LARGEST_SHOWN = 5


def _member_path(index: int, entry: V1File) -> str:
    """The entry's path, relative and normalized; 400 naming it when it leaves the context."""
    path = posixpath.normpath(entry.path)
    if entry.path.startswith("/") or path == ".." or path.startswith("../") or "\x00" in path or path == ".":
        raise InvalidRequest(f"modelDefinition[{index}]: path {entry.path!r} must be relative and inside the "
                             "context directory")
    return path


def _content(index: int, entry: V1File) -> bytes:
    try:
        return base64.b64decode(entry.content, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidRequest(f"modelDefinition[{index}] ({entry.path}): content is not base64") from None


def _mtime(index: int, entry: V1File) -> int:
    try:
        return max(0, int(entry.mtime))
    except ValueError:
        raise InvalidRequest(f"modelDefinition[{index}] ({entry.path}): mtime {entry.mtime!r} is not a number of "
                             "seconds") from None


def _check_size(files: list[tuple[str, bytes]]) -> None:
    """The context's files within the same 95 MiB as `stalwart e create`'s, naming the largest when over."""
    total = sum(len(data) for _, data in files)
    if total <= MAX_CONTEXT_BYTES:
        return
    largest = sorted(files, key=lambda f: (-len(f[1]), f[0]))[:LARGEST_SHOWN]
    listing = ", ".join(f"{path} ({format_size(len(data))})" for path, data in largest)
    raise InvalidRequest(f"modelDefinition: the context is {format_size(total)}, over the "
                         f"{format_size(MAX_CONTEXT_BYTES)} limit; add files the trial does not need to "
                         f".detignore. Its largest files: {listing}")


def context_archive(entries: list[V1File]) -> bytes:
    """The .tgz of Determined's context entries: directories and regular files only, modes as the master stores
    them (0o755 for executables, 0o644 otherwise), owned by root. 400 naming a bad entry."""
    files: list[tuple[str, bytes]] = []
    members: list[tuple[tarfile.TarInfo, bytes | None]] = []  # (header, content: None for a directory)
    for index, entry in enumerate(entries):
        if entry.type not in (REGULAR_FILE, DIRECTORY):
            raise InvalidRequest(f"modelDefinition[{index}] ({entry.path}): type {entry.type} is neither a file "
                                 f"({REGULAR_FILE}) nor a directory ({DIRECTORY})")
        info = tarfile.TarInfo(_member_path(index, entry))
        info.mtime, info.uid, info.gid, info.uname, info.gname = _mtime(index, entry), 0, 0, "", ""
        if entry.type == DIRECTORY:
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            members.append((info, None))
            continue
        content = _content(index, entry)
        info.size, info.mode = len(content), file_mode(entry.mode)
        files.append((info.name, content))
        members.append((info, content))
    _check_size(files)
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()
