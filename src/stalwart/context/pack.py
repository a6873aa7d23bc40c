"""Walk a context directory (plus includes) and pack it into a gzip'd tar for upload."""

from __future__ import annotations

import gzip
import io
import os
import stat
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from stalwart.api.errors import ContextError
from stalwart.context.ignore import IGNORE_FILE, is_ignored, load_ignore_spec

KIB = 1024
MIB = 1024 * 1024
MAX_CONTEXT_BYTES = 95 * MIB
_LARGEST_SHOWN = 5


@dataclass(frozen=True)
class ContextFile:
    """One entry of a context: where it goes in the archive and where its bytes come from."""

    path: str  # posix path inside the archive, relative, no trailing slash
    source: Path  # absolute path read when packing (a symlink's resolved target)
    size: int  # bytes; 0 for directories
    mode: int  # permission bits of the source (stat.S_IMODE)
    is_dir: bool
    mtime: int = 0


@dataclass
class PackResult:
    data: bytes  # the .tgz
    files: int  # regular files stored
    size: int  # total uncompressed bytes of those files
    warnings: list[str] = field(default_factory=list)


def file_mode(mode: int) -> int:
    """The mode a file is stored and extracted with: 0o755 if user-executable, else 0o644."""
    return 0o755 if mode & stat.S_IXUSR else 0o644


def format_size(n: int) -> str:
    if n >= MIB:
        return f"{n // MIB} MiB" if n % MIB == 0 else f"{n / MIB:.1f} MiB"
    if n >= KIB:
        return f"{n / KIB:.1f} KiB"
    return f"{n} B"


def collect_files(
    context_dir: str | os.PathLike[str],
    includes: Iterable[str | os.PathLike[str]] = (),
    warnings: list[str] | None = None,
) -> list[ContextFile]:
    """Every directory and file that would be sent, in archive order.

    Skipped symlinks and special files are described in `warnings` when a list is given.
    """
    notes = warnings if warnings is not None else []
    root = _require_dir(context_dir)
    found = _Walker(root, "", notes).run()
    taken = {f.path.split("/", 1)[0] for f in found}
    for include in includes:
        name, entries = _collect_include(include, notes)
        if name in taken:
            raise ContextError(
                f"duplicate root name {name!r}: include {os.fspath(include)!r} collides with "
                f"another entry named {name!r} at the top of the context"
            )
        taken.add(name)
        found.extend(entries)
    return sorted(found, key=lambda f: f.path.split("/"))


def check_context_size(files: Iterable[ContextFile], limit: int = MAX_CONTEXT_BYTES) -> int:
    """The total size of the regular files; ContextError naming the largest (in its details, once) when over
    `limit`."""
    regular = [f for f in files if not f.is_dir]
    total = sum(f.size for f in regular)
    if total <= limit:
        return total
    largest = sorted(regular, key=lambda f: (-f.size, f.path))[:_LARGEST_SHOWN]
    listing = [f"{f.path} ({format_size(f.size)})" for f in largest]
    raise ContextError(
        f"context directory is {total / MIB:.1f} MiB, over the {format_size(limit)} limit; add files the trial "
        f"does not need to {IGNORE_FILE}. Its largest files:",
        details=listing,
    )


def pack_context(
    context_dir: str | os.PathLike[str],
    includes: Iterable[str | os.PathLike[str]] = (),
    *,
    limit: int = MAX_CONTEXT_BYTES,
) -> PackResult:
    """Collect, check the size limit (before reading any content), then build the .tgz."""
    warnings: list[str] = []
    files = collect_files(context_dir, includes, warnings)
    total = check_context_size(files, limit)
    data = _write_tgz(files)
    count = sum(1 for f in files if not f.is_dir)
    return PackResult(data=data, files=count, size=total, warnings=warnings)


def _require_dir(context_dir: str | os.PathLike[str]) -> Path:
    root = Path(os.path.abspath(context_dir))
    if not root.exists():
        raise ContextError(f"context directory {os.fspath(context_dir)!r} does not exist")
    if not root.is_dir():
        raise ContextError(f"context directory {os.fspath(context_dir)!r} is not a directory")
    return root


def _collect_include(include: str | os.PathLike[str], notes: list[str]) -> tuple[str, list[ContextFile]]:
    path = Path(os.path.abspath(include))
    name = path.name
    if not name or not path.exists():
        raise ContextError(f"include {os.fspath(include)!r} does not exist")
    if path.is_dir():
        head = _entry(name, path, path.stat(), is_dir=True)
        return name, [head, *_Walker(path, name + "/", notes).run()]
    if path.is_file():
        source = Path(os.path.realpath(path))
        return name, [_entry(name, source, source.stat(), is_dir=False)]
    raise ContextError(f"include {os.fspath(include)!r} is neither a file nor a directory")


def _entry(path: str, source: Path, st: os.stat_result, *, is_dir: bool) -> ContextFile:
    return ContextFile(
        path=path,
        source=source,
        size=0 if is_dir else st.st_size,
        mode=stat.S_IMODE(st.st_mode),
        is_dir=is_dir,
        mtime=int(st.st_mtime),
    )


class _Walker:
    """Walks one root (the context or one include) applying that root's ignore rules."""

    def __init__(self, root: Path, prefix: str, notes: list[str]) -> None:
        self.root = root
        self.real_root = os.path.realpath(root)
        self.prefix = prefix
        self.notes = notes
        self.spec = load_ignore_spec(root)
        self.found: list[ContextFile] = []

    def run(self) -> list[ContextFile]:
        self._walk(self.root, "")
        return self.found

    def _walk(self, directory: Path, rel_dir: str) -> None:
        for entry in _list_dir(directory):
            if not rel_dir and entry.name == IGNORE_FILE:
                continue
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            self._visit(Path(entry.path), rel)

    def _visit(self, path: Path, rel: str) -> None:
        st = _lstat(path)
        if stat.S_ISLNK(st.st_mode):
            self._visit_link(path, rel)
        elif stat.S_ISDIR(st.st_mode):
            if not is_ignored(self.spec, rel, True):
                self._add(rel, path, st, is_dir=True)
                self._walk(path, rel)
        elif not is_ignored(self.spec, rel, False):
            if stat.S_ISREG(st.st_mode):
                self._add(rel, path, st, is_dir=False)
            else:
                self._warn(rel, "is not a regular file or directory (socket, FIFO or device)")

    def _visit_link(self, path: Path, rel: str) -> None:
        target = os.path.realpath(path)
        is_dir = os.path.isdir(target)
        if is_ignored(self.spec, rel, is_dir):
            return
        if not os.path.exists(target):
            self._warn(rel, "is a broken symbolic link")
        elif not self._inside(target):
            self._warn(rel, "is a symbolic link to outside the context directory")
        elif is_dir:
            self._warn(rel, "is a symbolic link to a directory")
        elif os.path.isfile(target):
            self._add(rel, Path(target), os.stat(target), is_dir=False)
        else:
            self._warn(rel, "is a symbolic link to something that is not a regular file")

    def _inside(self, target: str) -> bool:
        return target == self.real_root or target.startswith(self.real_root.rstrip(os.sep) + os.sep)

    def _add(self, rel: str, source: Path, st: os.stat_result, *, is_dir: bool) -> None:
        self.found.append(_entry(self.prefix + rel, source, st, is_dir=is_dir))

    def _warn(self, rel: str, why: str) -> None:
        self.notes.append(f"skipped {self.prefix + rel}: it {why}")


def _list_dir(directory: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError as err:
        raise ContextError(f"cannot read directory {directory}: {err.strerror or err}") from err


def _lstat(path: Path) -> os.stat_result:
    try:
        return os.lstat(path)
    except OSError as err:
        raise ContextError(f"cannot read {path}: {err.strerror or err}") from err


def _write_tgz(files: list[ContextFile]) -> bytes:
    buf = io.BytesIO()
    with (
        gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for f in files:
            _add_member(tar, f)
    return buf.getvalue()


def _add_member(tar: tarfile.TarFile, f: ContextFile) -> None:
    info = tarfile.TarInfo(f.path)
    info.mtime = f.mtime
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    if f.is_dir:
        info.type = tarfile.DIRTYPE
        info.mode = 0o755
        tar.addfile(info)
        return
    info.size = f.size
    info.mode = file_mode(f.mode)
    try:
        with open(f.source, "rb") as fh:
            tar.addfile(info, fh)
    except OSError as err:
        raise ContextError(
            f"cannot read {f.source}: {err.strerror or err} (did it change while packing?)"
        ) from err
