"""Checkpoint downloads through the master are extracted as the archive arrives (issue 29), with the safe-extraction
checks of contexts: a real HTTP server in a thread sends the .tgz in two parts and holds the second back until the
first file's bytes are on disk; malicious archives (absolute path, '..', links, a device) are refused and leave
nothing behind. The SDK (`Checkpoint.download`) and the CLI (`fetch_checkpoint`) both go this way."""

from __future__ import annotations

import http.server
import io
import os
import pathlib
import tarfile
import threading
from collections.abc import Callable, Iterator

import pytest

from stalwart.api.errors import ContextError
from stalwart.api.models.checkpoints import Checkpoint as CheckpointModel
from stalwart.cli.checkpoint import fetch_checkpoint
from stalwart.client import Client
from stalwart.experimental.checkpoint import Checkpoint, CheckpointState

UUID = "0f0e0d0c-0b0a-4908-8706-050403020100"
MIB = 2**20


def _tgz(add: Callable[[tarfile.TarFile], None]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tar:
        add(tar)
    return buf.getvalue()


def _file(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


class _Archive(http.server.ThreadingHTTPServer):
    """Answers GET /api/v1/checkpoints/UUID/download with `body`: its first `split` bytes, then the rest once
    `gate` is set (at most 30 s later)."""

    body: bytes = b""
    split: int = 0
    gate: threading.Event


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Archive

    def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
        if self.path != f"/api/v1/checkpoints/{UUID}/download":
            self.send_error(404)
            return
        body = self.server.body
        self.send_response(200)
        self.send_header("content-type", "application/gzip")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[:self.server.split])
        self.wfile.flush()
        self.server.gate.wait(30)
        self.wfile.write(body[self.server.split:])

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's signature
        """Quiet."""


@pytest.fixture
def archive_server() -> Iterator[_Archive]:
    server = _Archive(("127.0.0.1", 0), _Handler)
    server.gate = threading.Event()
    server.gate.set()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.gate.set()
        server.shutdown()
        server.server_close()


def _client(server: _Archive) -> Client:
    return Client(f"http://127.0.0.1:{server.server_address[1]}")


def _partial_bytes(parent: pathlib.Path) -> int:
    """Bytes of big.bin written so far in a staging directory under `parent`."""
    return sum(p.stat().st_size for p in parent.glob(".*.partial-*/big.bin"))


def test_sdk_download_writes_the_first_file_before_the_archive_has_arrived(archive_server: _Archive,
                                                                          tmp_path: pathlib.Path) -> None:
    big, small = os.urandom(3 * MIB), b"{\"steps_completed\": 3}"  # random: the .tgz is as big as the file
    archive_server.body = _tgz(lambda tar: (_file(tar, "big.bin", big), _file(tar, "sub/metadata.json", small)))
    archive_server.split = 2 * MIB  # well over a chunk (1 MiB) of big.bin, well short of the whole archive
    archive_server.gate.clear()
    ckpt = Checkpoint(_client(archive_server), UUID)
    ckpt.state = CheckpointState.COMPLETED
    dest = tmp_path / "out" / UUID
    result: list[object] = []
    worker = threading.Thread(target=lambda: result.append(ckpt.download(dest)), daemon=True)
    worker.start()
    deadline = threading.Event()
    for _ in range(300):  # 30 s
        if _partial_bytes(dest.parent) >= MIB:
            break
        deadline.wait(0.1)
    written_early = _partial_bytes(dest.parent)
    archive_server.gate.set()
    worker.join(60)
    assert written_early >= MIB, "nothing was written before the whole archive had arrived"
    assert result == [str(dest)]
    assert (dest / "big.bin").read_bytes() == big and (dest / "sub" / "metadata.json").read_bytes() == small
    assert sorted(p.name for p in dest.parent.iterdir()) == [UUID]  # the staging directory is gone


def test_cli_download_into_an_existing_directory_keeps_its_other_files(archive_server: _Archive,
                                                                       tmp_path: pathlib.Path) -> None:
    archive_server.body = _tgz(lambda tar: _file(tar, "model/weights.bin", b"w" * (MIB + 7)))
    archive_server.split = len(archive_server.body)
    dest = tmp_path / "existing"
    dest.mkdir()
    (dest / "notes.txt").write_text("mine")
    model = CheckpointModel(uuid=UUID, state="COMPLETED", storage={"type": "s3", "bucket": "b"})
    fetch_checkpoint(_client(archive_server), model, dest, mode="master")
    assert (dest / "model" / "weights.bin").read_bytes() == b"w" * (MIB + 7)
    assert (dest / "notes.txt").read_text() == "mine"


def _link(tar: tarfile.TarFile, kind: bytes, name: str, target: str) -> None:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    tar.addfile(info)


def _device(tar: tarfile.TarFile) -> None:
    info = tarfile.TarInfo("dev/null")
    info.type, info.devmajor, info.devminor = tarfile.CHRTYPE, 1, 3
    tar.addfile(info)


MALICIOUS: dict[str, tuple[Callable[[tarfile.TarFile], None], str]] = {
    "absolute": (lambda tar: _file(tar, "/tmp/evil", b"x"), "absolute path"),
    "dotdot": (lambda tar: (_file(tar, "ok.txt", b"fine"), _file(tar, "a/../../evil", b"x")), "'..'"),
    "symlink": (lambda tar: _link(tar, tarfile.SYMTYPE, "link", "/etc/passwd"), "symbolic link"),
    "hardlink": (lambda tar: _link(tar, tarfile.LNKTYPE, "hard", "/etc/passwd"), "hard link"),
    "device": (_device, "device"),
}


@pytest.mark.parametrize("case", sorted(MALICIOUS))
def test_a_malicious_archive_is_refused_and_leaves_nothing(archive_server: _Archive, tmp_path: pathlib.Path,
                                                           case: str) -> None:
    add, why = MALICIOUS[case]
    archive_server.body = _tgz(add)
    archive_server.split = len(archive_server.body)
    ckpt = Checkpoint(_client(archive_server), UUID)
    ckpt.state = CheckpointState.COMPLETED
    parent = tmp_path / "downloads"
    with pytest.raises(ContextError, match=why) as err:
        ckpt.download(parent / UUID)
    assert f"checkpoint {UUID}" in str(err.value)
    assert list(parent.iterdir()) == []  # neither the destination nor a staging directory
    assert not (tmp_path / "evil").exists()


def test_a_truncated_archive_is_refused(archive_server: _Archive, tmp_path: pathlib.Path) -> None:
    archive_server.body = _tgz(lambda tar: _file(tar, "big.bin", os.urandom(MIB)))[:MIB // 2]
    archive_server.split = len(archive_server.body)
    ckpt = Checkpoint(_client(archive_server), UUID)
    ckpt.state = CheckpointState.COMPLETED
    with pytest.raises(ContextError, match="corrupt"):
        ckpt.download(tmp_path / "d" / UUID)
    assert list((tmp_path / "d").iterdir()) == []
