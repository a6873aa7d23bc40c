"""Tests for collecting and packing a context directory."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
from pathlib import Path

import pytest

from stalwart.api.errors import ContextError
from stalwart.context import (
    MAX_CONTEXT_BYTES,
    ContextFile,
    check_context_size,
    collect_files,
    pack as pack_module,
    pack_context,
    safe_extract,
)

MIB = 1024 * 1024


def write(path: Path, text: str = "x", mode: int | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mode is not None:
        path.chmod(mode)
    return path


def sparse(path: Path, size: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.truncate(size)
    return path


def paths(context: Path, includes=()) -> list[str]:
    return [f.path for f in collect_files(context, includes)]


def members(data: bytes) -> list[tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return tar.getmembers()


# ---- walking and ignoring ----------------------------------------------------------------------


def test_walks_recursively_with_parents_before_children(tmp_path):
    write(tmp_path / "b.py")
    write(tmp_path / "a" / "z.py")
    write(tmp_path / "a" / "deep" / "y.txt")
    write(tmp_path / "a-b.txt")
    assert paths(tmp_path) == ["a", "a/deep", "a/deep/y.txt", "a/z.py", "a-b.txt", "b.py"]


def test_context_file_fields(tmp_path):
    write(tmp_path / "run.sh", "echo hi\n", mode=0o755)
    (tmp_path / "d").mkdir()
    d, f = collect_files(tmp_path)
    assert d == ContextFile("d", tmp_path / "d", 0, d.mode, True, d.mtime)
    assert (f.path, f.source, f.size, f.is_dir) == ("run.sh", tmp_path / "run.sh", 8, False)
    assert f.mode == 0o755
    assert f.source.is_absolute()


def test_detignore_patterns(tmp_path):
    write(
        tmp_path / ".detignore",
        "# checkpoints are big\n"
        "data/\n"
        "*.ckpt\n"
        "!keep.ckpt\n"
        "models/old/weights.bin\n"
        "/top.log\n",
    )
    write(tmp_path / "train.py")
    write(tmp_path / "data" / "set.csv")
    write(tmp_path / "src" / "data" / "nested.csv")  # `data/` matches at any depth
    write(tmp_path / "data.py")  # `data/` only matches directories
    write(tmp_path / "m.ckpt")
    write(tmp_path / "sub" / "n.ckpt")
    write(tmp_path / "keep.ckpt")
    write(tmp_path / "sub" / "keep.ckpt")
    write(tmp_path / "models" / "old" / "weights.bin")
    write(tmp_path / "models" / "new" / "weights.bin")
    write(tmp_path / "top.log")
    write(tmp_path / "sub" / "top.log")  # anchored pattern: only the root one goes
    assert paths(tmp_path) == [
        "data.py",
        "keep.ckpt",
        "models",
        "models/new",
        "models/new/weights.bin",
        "models/old",
        "src",
        "sub",
        "sub/keep.ckpt",
        "sub/top.log",
        "train.py",
    ]


def test_files_inside_an_ignored_directory_cannot_be_reincluded(tmp_path):
    write(tmp_path / ".detignore", "logs/\n!logs/keep.txt\n")
    write(tmp_path / "logs" / "keep.txt")
    assert paths(tmp_path) == []


def test_builtin_ignores_always_apply(tmp_path):
    write(tmp_path / ".detignore", "!*.pyc\n")  # cannot bring back built-in ignores
    write(tmp_path / "model.py")
    write(tmp_path / "__pycache__" / "model.cpython-311.pyc")
    write(tmp_path / "pkg" / "__pycache__" / "x.pyc")
    write(tmp_path / "pkg" / "stale.pyc")
    write(tmp_path / "pkg" / "opt.pyo")
    write(tmp_path / "pkg" / "jy$py.class")
    write(tmp_path / "terraform" / "main.tf")
    write(tmp_path / "deploy" / "terraform_data")
    assert paths(tmp_path) == ["deploy", "model.py", "pkg"]


def test_detignore_itself_is_never_sent(tmp_path):
    write(tmp_path / ".detignore", "*.bin\n")
    write(tmp_path / "a.py")
    assert paths(tmp_path) == ["a.py"]
    result = pack_context(tmp_path)
    assert [m.name for m in members(result.data)] == ["a.py"]


def test_empty_context_packs_and_extracts(tmp_path):
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    result = pack_context(ctx)
    assert (result.files, result.size, result.warnings) == (0, 0, [])
    assert members(result.data) == []
    dest = tmp_path / "dest"
    assert safe_extract(result.data, dest) == []
    assert list(dest.iterdir()) == []


def test_missing_context_dir(tmp_path):
    with pytest.raises(ContextError, match="does not exist"):
        pack_context(tmp_path / "nope")


def test_context_dir_that_is_a_file(tmp_path):
    f = write(tmp_path / "file.py")
    with pytest.raises(ContextError, match="is not a directory"):
        collect_files(f)


# ---- includes ----------------------------------------------------------------------------------


def test_include_goes_under_its_basename_with_its_own_detignore(tmp_path):
    ctx = tmp_path / "ctx"
    write(ctx / "train.py")
    lib = tmp_path / "elsewhere" / "mylib"
    write(lib / ".detignore", "*.tmp\n")
    write(lib / "util.py")
    write(lib / "junk.tmp")
    write(lib / "__pycache__" / "util.pyc")
    write(ctx / "junk.tmp")  # the include's .detignore does not apply to the context
    assert paths(ctx, [lib]) == ["junk.tmp", "mylib", "mylib/util.py", "train.py"]


def test_include_of_a_single_file(tmp_path):
    ctx = tmp_path / "ctx"
    write(ctx / "train.py")
    extra = write(tmp_path / "conf.yaml", "a: 1\n")
    assert paths(ctx, [extra]) == ["conf.yaml", "train.py"]


def test_include_colliding_with_a_top_level_entry(tmp_path):
    ctx = tmp_path / "ctx"
    write(ctx / "shared" / "a.py")
    write(tmp_path / "shared" / "b.py")
    with pytest.raises(ContextError, match="duplicate root name 'shared'"):
        collect_files(ctx, [tmp_path / "shared"])


def test_two_includes_with_the_same_basename(tmp_path):
    ctx = tmp_path / "ctx"
    write(ctx / "train.py")
    write(tmp_path / "one" / "lib" / "a.py")
    write(tmp_path / "two" / "lib" / "b.py")
    with pytest.raises(ContextError, match="duplicate root name 'lib'"):
        collect_files(ctx, [tmp_path / "one" / "lib", tmp_path / "two" / "lib"])


def test_ignored_top_level_entry_does_not_collide(tmp_path):
    ctx = tmp_path / "ctx"
    write(ctx / ".detignore", "lib/\n")
    write(ctx / "lib" / "old.py")
    write(tmp_path / "lib" / "new.py")
    assert paths(ctx, [tmp_path / "lib"]) == ["lib", "lib/new.py"]


def test_missing_include(tmp_path):
    with pytest.raises(ContextError, match="include .* does not exist"):
        collect_files(tmp_path, [tmp_path / "missing"])


# ---- size limit --------------------------------------------------------------------------------


def test_over_the_limit_names_the_largest_files(tmp_path, monkeypatch):
    sparse(tmp_path / "big" / "weights.bin", 60 * MIB)
    sparse(tmp_path / "data.npy", 40 * MIB)
    for i, size in enumerate([5, 4, 3, 2, 1]):
        sparse(tmp_path / f"f{i}.dat", size * MIB)
    write(tmp_path / "train.py")
    monkeypatch.setattr(pack_module, "_write_tgz", _must_not_be_called)

    with pytest.raises(ContextError) as info:
        pack_context(tmp_path)

    message = info.value.full_message()  # as the CLI prints it: the message, then each detail on its own line
    assert "context directory is 115.0 MiB, over the 95 MiB limit" in message
    assert "  - big/weights.bin (60 MiB)\n  - data.npy (40 MiB)\n  - f0.dat (5 MiB)\n  - f1.dat (4 MiB)" in message
    assert "f2.dat (3 MiB)" in message and "f3.dat" not in message and "train.py" not in message
    assert ".detignore" in message
    for listed in info.value.details:
        assert message.count(listed) == 1  # each largest file named once
    assert info.value.details == [
        "big/weights.bin (60 MiB)",
        "data.npy (40 MiB)",
        "f0.dat (5 MiB)",
        "f1.dat (4 MiB)",
        "f2.dat (3 MiB)",
    ]


def _must_not_be_called(files):
    raise AssertionError("contents were read although the context is over the limit")


def test_ignored_big_files_do_not_count(tmp_path):
    sparse(tmp_path / "huge.ckpt", 200 * MIB)
    write(tmp_path / ".detignore", "*.ckpt\n")
    write(tmp_path / "train.py", "print(1)\n")
    result = pack_context(tmp_path)
    assert (result.files, result.size) == (1, 9)


def test_limit_is_inclusive(tmp_path):
    files = [ContextFile("a", tmp_path / "a", MAX_CONTEXT_BYTES, 0o644, False)]
    assert check_context_size(files) == MAX_CONTEXT_BYTES
    files.append(ContextFile("b", tmp_path / "b", 1, 0o644, False))
    with pytest.raises(ContextError, match="over the 95 MiB limit"):
        check_context_size(files)


def test_custom_limit(tmp_path):
    write(tmp_path / "a.txt", "x" * 2000)
    with pytest.raises(ContextError, match=r"over the 1000 B limit") as info:
        pack_context(tmp_path, limit=1000)
    assert info.value.details == ["a.txt (2.0 KiB)"]


# ---- symlinks and special files ----------------------------------------------------------------


def test_symlink_to_a_file_inside_is_stored_as_a_regular_file(tmp_path):
    ctx = tmp_path / "ctx"
    write(ctx / "real" / "model.py", "MODEL = 1\n")
    (ctx / "alias.py").symlink_to("real/model.py")
    result = pack_context(ctx)
    assert result.warnings == []
    infos = {m.name: m for m in members(result.data)}
    assert infos["alias.py"].isreg() and infos["alias.py"].size == 10
    dest = tmp_path / "dest"
    safe_extract(result.data, dest)
    assert not (dest / "alias.py").is_symlink()
    assert (dest / "alias.py").read_text() == "MODEL = 1\n"


def test_symlinks_outside_broken_or_to_directories_are_skipped_with_warnings(tmp_path):
    ctx = tmp_path / "ctx"
    write(ctx / "train.py")
    write(ctx / "pkg" / "m.py")
    write(tmp_path / "secret.txt", "secret")
    (ctx / "outside.txt").symlink_to(tmp_path / "secret.txt")
    (ctx / "up.txt").symlink_to("../secret.txt")
    (ctx / "broken.py").symlink_to("does-not-exist.py")
    (ctx / "pkg-link").symlink_to("pkg", target_is_directory=True)
    result = pack_context(ctx)
    assert [m.name for m in members(result.data)] == ["pkg", "pkg/m.py", "train.py"]
    assert result.warnings == [
        "skipped broken.py: it is a broken symbolic link",
        "skipped outside.txt: it is a symbolic link to outside the context directory",
        "skipped pkg-link: it is a symbolic link to a directory",
        "skipped up.txt: it is a symbolic link to outside the context directory",
    ]
    assert not any(m.issym() or m.islnk() for m in members(result.data))


def test_ignored_symlinks_are_skipped_silently(tmp_path):
    write(tmp_path / ".detignore", "*.lnk\n")
    (tmp_path / "x.lnk").symlink_to("/etc/passwd")
    assert pack_context(tmp_path).warnings == []


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_is_skipped(tmp_path):
    write(tmp_path / "a.py")
    os.mkfifo(tmp_path / "pipe")
    result = pack_context(tmp_path)
    assert [m.name for m in members(result.data)] == ["a.py"]
    assert result.warnings == [
        "skipped pipe: it is not a regular file or directory (socket, FIFO or device)"
    ]


# ---- the archive ---------------------------------------------------------------------------------


def test_archive_is_deterministic_and_owned_by_root(tmp_path):
    write(tmp_path / "b.py", "b")
    write(tmp_path / "a" / "c.py", "c")
    first = pack_context(tmp_path).data
    assert pack_context(tmp_path).data == first
    assert gzip.decompress(first)  # a plain gzip stream
    infos = members(first)
    assert [m.name for m in infos] == ["a", "a/c.py", "b.py"]
    assert all((m.uid, m.gid, m.uname, m.gname) == (0, 0, "", "") for m in infos)


def test_round_trip_preserves_content_and_exec_bit(tmp_path):
    ctx = tmp_path / "ctx"
    write(ctx / "run.sh", "#!/bin/sh\necho hi\n", mode=0o700)
    write(ctx / "train.py", "print('train')\n", mode=0o600)
    write(ctx / "pkg" / "__init__.py", "")
    write(ctx / "pkg" / "données.txt", "unicode name\n")
    (ctx / "empty-dir").mkdir()
    (ctx / "bin.dat").write_bytes(bytes(range(256)) * 100)
    result = pack_context(ctx)
    assert (result.files, result.size) == (5, 18 + 15 + 0 + 13 + 25600)

    dest = tmp_path / "dest"
    names = safe_extract(result.data, dest)
    assert names == [
        "bin.dat",
        "empty-dir/",
        "pkg/",
        "pkg/__init__.py",
        "pkg/données.txt",
        "run.sh",
        "train.py",
    ]
    for rel in ("run.sh", "train.py", "pkg/__init__.py", "pkg/données.txt", "bin.dat"):
        assert (dest / rel).read_bytes() == (ctx / rel).read_bytes()
    assert (dest / "run.sh").stat().st_mode & 0o777 == 0o755
    assert (dest / "train.py").stat().st_mode & 0o777 == 0o644
    assert (dest / "empty-dir").is_dir()
