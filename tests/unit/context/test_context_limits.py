"""Member-count and size limits on context archives: checked header by header, errors naming the setting."""

from __future__ import annotations

import gzip
import io
import tarfile

import pytest

from stalwart.api.errors import ContextError
from stalwart.context import ArchiveLimits, safe_extract, validate_archive

MIB = 1024 * 1024
MEMBERS = "limits.max_context_members in the master config"
SIZE = "limits.max_context_size in the master config"


def _tar(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _empty_files(count: int) -> dict[str, bytes]:
    return {f"f{i:03d}": b"" for i in range(count)}


def test_more_members_than_the_limit_are_refused_naming_the_setting():
    archive = gzip.compress(_tar(_empty_files(11)))
    assert len(validate_archive(archive, limits=ArchiveLimits(max_members=11))) == 11
    with pytest.raises(ContextError) as err:
        validate_archive(archive, limits=ArchiveLimits(max_members=10, members_setting=MEMBERS))
    assert str(err.value) == ("context archive has more than 10 members (files and directories); the limit is "
                              f"{MEMBERS}: raise it there if this context needs more")


def test_reading_stops_at_the_first_member_past_the_limit():
    # Garbage after the 11th member: an archive read to its end is "corrupt"; one read only up to the limit
    # never gets there.
    whole = _tar(_empty_files(11))
    archive = gzip.compress(whole[:11 * 512] + b"not a tar header" * 64)
    with pytest.raises(ContextError, match="corrupt"):
        validate_archive(archive, limits=ArchiveLimits(max_members=20))
    with pytest.raises(ContextError, match="more than 10 members"):
        validate_archive(archive, limits=ArchiveLimits(max_members=10))


def test_extraction_checks_the_member_limit_before_writing_anything(tmp_path):
    archive = gzip.compress(_tar(_empty_files(5)))
    with pytest.raises(ContextError, match="more than 4 members"):
        safe_extract(archive, tmp_path / "out", limits=ArchiveLimits(max_members=4))
    assert not (tmp_path / "out").exists()


def test_the_size_limit_names_its_setting_and_none_lifts_it(tmp_path):
    archive = gzip.compress(_tar({"a.bin": b"x" * 3000, "b.bin": b"y" * 3000}))
    with pytest.raises(ContextError) as err:
        validate_archive(archive, limits=ArchiveLimits(max_size=5000, size_setting=SIZE))
    assert "over the 4.9 KiB limit uncompressed (reached at member 'b.bin')" in str(err.value)
    assert SIZE in str(err.value)
    assert safe_extract(archive, tmp_path / "out", max_size=None) == ["a.bin", "b.bin"]
    assert (tmp_path / "out" / "b.bin").read_bytes() == b"y" * 3000


def test_no_member_limit_unless_one_is_given():
    archive = gzip.compress(_tar(_empty_files(300)))
    assert len(validate_archive(archive)) == 300
