"""Tests for validating and safely extracting context archives, hostile ones included."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
from pathlib import Path

import pytest

from stalwart.api.errors import ContextError
from stalwart.context import MAX_CONTEXT_BYTES, safe_extract, validate_archive

MIB = 1024 * 1024


def file_member(name: str, data: bytes = b"data", mode: int = 0o644) -> tuple:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = mode
    return info, data


def dir_member(name: str, mode: int = 0o755) -> tuple:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    info.mode = mode
    return info, None


def link_member(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tuple:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info, None


def special_member(name: str, kind: bytes) -> tuple:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.devmajor, info.devminor = 1, 3
    return info, None


def make_tar(*members: tuple, fmt: int = tarfile.PAX_FORMAT) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def make_tgz(*members: tuple, fmt: int = tarfile.PAX_FORMAT) -> bytes:
    return gzip.compress(make_tar(*members, fmt=fmt))


@pytest.fixture
def dest(tmp_path: Path) -> Path:
    d = tmp_path / "dest"
    d.mkdir()
    return d


def assert_rejected(archive: bytes, dest: Path, pattern: str) -> None:
    with pytest.raises(ContextError, match=pattern):
        validate_archive(archive)
    with pytest.raises(ContextError, match=pattern):
        safe_extract(archive, dest)
    assert list(dest.iterdir()) == []


# ---- happy paths -------------------------------------------------------------------------------


def test_extracts_files_and_dirs(dest):
    archive = make_tgz(
        dir_member("pkg"),
        file_member("pkg/a.py", b"A = 1\n"),
        file_member("deep/er/b.txt", b"b"),  # parents need not be members
        file_member("empty.txt", b""),
    )
    names = ["pkg/", "pkg/a.py", "deep/er/b.txt", "empty.txt"]
    assert validate_archive(archive) == names
    assert list(dest.iterdir()) == []
    assert safe_extract(archive, dest) == names
    assert (dest / "pkg" / "a.py").read_text() == "A = 1\n"
    assert (dest / "deep" / "er" / "b.txt").read_text() == "b"
    assert (dest / "empty.txt").read_bytes() == b""


def test_creates_a_missing_dest_dir(tmp_path):
    target = tmp_path / "new" / "workdir"
    safe_extract(make_tgz(file_member("a.py")), target)
    assert (target / "a.py").read_bytes() == b"data"


def test_dot_slash_names_as_written_by_tar_cli(dest):
    archive = make_tgz(dir_member("./"), dir_member("./src"), file_member("./src/a.py"))
    assert safe_extract(archive, dest) == ["src/", "src/a.py"]
    assert (dest / "src" / "a.py").is_file()


@pytest.mark.parametrize("fmt", [tarfile.USTAR_FORMAT, tarfile.GNU_FORMAT, tarfile.PAX_FORMAT])
def test_tar_formats(dest, fmt):
    long_name = "d/" + "x" * 150 + ".py"
    formats_with_long_names = fmt != tarfile.USTAR_FORMAT
    name = long_name if formats_with_long_names else "d/short.py"
    safe_extract(make_tgz(file_member(name, b"ok"), fmt=fmt), dest)
    assert (dest / name).read_bytes() == b"ok"


def test_modes_are_normalized(dest):
    archive = make_tgz(
        dir_member("locked", mode=0o700),
        file_member("locked/suid", mode=0o4777),
        file_member("private", mode=0o600),
        file_member("user-exec", mode=0o100),
        file_member("group-exec-only", mode=0o654),
    )
    safe_extract(archive, dest)

    def mode(rel: str) -> int:
        return (dest / rel).stat().st_mode & 0o7777

    assert mode("locked") == 0o755
    assert mode("locked/suid") == 0o755
    assert mode("private") == 0o644
    assert mode("user-exec") == 0o755
    assert mode("group-exec-only") == 0o644


def test_existing_files_in_dest_are_overwritten(dest):
    (dest / "a.py").write_text("old")
    (dest / "keep.txt").write_text("keep")
    safe_extract(make_tgz(file_member("a.py", b"new")), dest)
    assert (dest / "a.py").read_text() == "new"
    assert (dest / "keep.txt").read_text() == "keep"


# ---- hostile paths and member types ------------------------------------------------------------


@pytest.mark.parametrize(
    "name, pattern",
    [
        ("/etc/evil", "absolute path"),
        ("/", "absolute path"),
        ("../x", r"'\.\.' path component"),
        ("a/../../x", r"'\.\.' path component"),
        ("a/b/../../../x", r"'\.\.' path component"),
        ("ok/..", r"'\.\.' path component"),
    ],
)
def test_escaping_paths_are_rejected(dest, name, pattern):
    archive = make_tgz(file_member("fine.py"), file_member(name))
    assert_rejected(archive, dest, f"member '{name}' has an? {pattern}")


def test_symlink_member_is_rejected(dest):
    archive = make_tgz(file_member("a.py"), link_member("passwd", "/etc/passwd"))
    assert_rejected(archive, dest, r"'passwd' is a symbolic link \(to '/etc/passwd'\)")


def test_harmless_looking_symlink_is_rejected_too(dest):
    archive = make_tgz(file_member("a.py"), link_member("b.py", "a.py"))
    assert_rejected(archive, dest, "'b.py' is a symbolic link")


def test_symlink_then_write_through_it_is_rejected(dest, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    archive = make_tgz(link_member("sub", str(outside)), file_member("sub/owned.txt"))
    assert_rejected(archive, dest, "'sub' is a symbolic link")
    assert list(outside.iterdir()) == []


def test_hard_link_member_is_rejected(dest):
    archive = make_tgz(file_member("a.py"), link_member("shadow", "/etc/shadow", tarfile.LNKTYPE))
    assert_rejected(archive, dest, r"'shadow' is a hard link \(to '/etc/shadow'\)")


@pytest.mark.parametrize("kind", [tarfile.CHRTYPE, tarfile.BLKTYPE, tarfile.FIFOTYPE])
def test_device_and_fifo_members_are_rejected(dest, kind):
    archive = make_tgz(file_member("a.py"), special_member("dev/null", kind))
    assert_rejected(archive, dest, "'dev/null' is a device or FIFO")


def test_unknown_member_type_is_rejected(dest):
    archive = make_tgz(special_member("volume", b"V"))
    assert_rejected(archive, dest, "unsupported type")


def test_a_bad_member_at_the_end_leaves_dest_untouched(dest):
    good = [file_member(f"f{i}.py", b"x" * 1000) for i in range(20)]
    archive = make_tgz(*good, dir_member("sub"), file_member("sub/../../escape"))
    assert_rejected(archive, dest, "escape")


def test_file_and_directory_with_the_same_path(dest):
    archive = make_tgz(file_member("a"), file_member("a/b"))
    assert_rejected(archive, dest, "'a/b' is inside 'a', which the archive holds as a file")
    archive = make_tgz(file_member("x/y"), file_member("x"))
    assert_rejected(archive, dest, "'x' appears more than once")


def test_dest_symlink_leading_outside_is_refused(tmp_path, dest):
    outside = tmp_path / "outside"
    outside.mkdir()
    (dest / "sub").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ContextError, match="would be written outside"):
        safe_extract(make_tgz(file_member("sub/owned.txt")), dest)
    assert list(outside.iterdir()) == []


def test_dest_that_is_a_file(tmp_path):
    target = tmp_path / "file"
    target.write_text("")
    with pytest.raises(ContextError, match="not a directory"):
        safe_extract(make_tgz(file_member("a.py")), target)


# ---- corrupt archives --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "archive",
    [
        b"",
        b"this is not an archive at all",
        b"\x1f\x8b\x08\x00garbage-after-gzip-magic",
        bytes(range(256)) * 10,
    ],
    ids=["empty", "text", "bad-gzip", "noise"],
)
def test_corrupt_bytes(dest, archive):
    assert_rejected(archive, dest, "context archive is corrupt: ")


def test_plain_tar_without_gzip_is_corrupt(dest):
    assert_rejected(make_tar(file_member("a.py")), dest, "context archive is corrupt")


def test_truncated_archive(dest):
    archive = make_tgz(file_member("a.bin", os.urandom(100_000)))
    assert_rejected(archive[: len(archive) // 2], dest, "context archive is corrupt")


def test_truncated_tar_inside_a_valid_gzip(dest):
    tar = make_tar(file_member("a.py", b"x" * 5000), file_member("b.py", b"y" * 5000))
    assert_rejected(gzip.compress(tar[:3000]), dest, "context archive is corrupt")


def test_bad_crc_is_detected(dest):
    archive = bytearray(make_tgz(file_member("a.py", b"hello")))
    archive[-8] ^= 0xFF  # the gzip trailer's CRC32
    assert_rejected(bytes(archive), dest, "context archive is corrupt")


def test_garbage_header_in_the_middle(dest):
    first = make_tar(file_member("a.py", b"a"))[:1024]  # header + one data block
    garbage = b"\x7f" * 512
    rest = make_tar(file_member("b.py", b"b"))
    assert_rejected(gzip.compress(first + garbage + rest), dest, "context archive is corrupt")


# ---- size limits ---------------------------------------------------------------------------------


def test_headers_over_the_limit_are_refused_before_reading_data(dest):
    info = tarfile.TarInfo("bomb.bin")
    info.size = MAX_CONTEXT_BYTES + 1
    # Only the header and a few data bytes exist: the refusal must come from the header alone.
    archive = gzip.compress(info.tobuf(tarfile.PAX_FORMAT) + b"\0" * 4096)
    assert_rejected(archive, dest, r"over the 95 MiB limit uncompressed .*'bomb.bin'")


def test_total_of_several_members_counts(dest):
    members = [file_member(f"f{i}", b"z" * 400) for i in range(3)]
    archive = make_tgz(*members)
    assert validate_archive(archive, max_size=1200) == ["f0", "f1", "f2"]
    with pytest.raises(ContextError, match="reached at member 'f2'"):
        validate_archive(archive, max_size=1199)
    with pytest.raises(ContextError, match=r"over the 1.2 KiB limit"):
        safe_extract(archive, dest, max_size=1199)
    assert list(dest.iterdir()) == []


def test_real_compression_bomb_is_refused(dest):
    # 120 MiB of zeros compress to about 120 KiB.
    info = tarfile.TarInfo("zeros.bin")
    info.size = 120 * MIB
    bomb = gzip.compress(info.tobuf(tarfile.PAX_FORMAT) + bytes(120 * MIB), compresslevel=1)
    assert len(bomb) < 2 * MIB
    assert_rejected(bomb, dest, "over the 95 MiB limit uncompressed")


def test_huge_pax_header_is_refused(dest):
    info = tarfile.TarInfo("././@PaxHeader")
    info.type = tarfile.XHDTYPE
    info.size = 1024 * MIB  # tarfile would try to read this much into memory
    archive = gzip.compress(info.tobuf(tarfile.USTAR_FORMAT) + b"\0" * 4096)
    assert_rejected(archive, dest, "context archive is too large uncompressed")


def test_too_much_padding_is_refused(dest):
    tar = make_tar(file_member("a.py")) + bytes(4 * MIB)
    assert_rejected(gzip.compress(tar), dest, "too much padding")
