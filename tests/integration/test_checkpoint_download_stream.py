"""`checkpoint download` and the UI's download link stream the checkpoint's .tgz through the master (issue 29):
a ~300 MB checkpoint comes back with identical bytes while the master's resident memory (VmRSS) grows far less
than the archive (the master used to build the whole archive in memory).

A real master over HTTP; the test is the agent (container_world.OrderTaker) and reports the checkpoint through the
API as a trial would, after writing its files into the experiment's shared_fs storage."""

from __future__ import annotations

import hashlib
import os
import pathlib
import tarfile
import uuid
from collections.abc import Iterator

import httpx
import pytest
import yaml
from container_world import BASE_CONFIG, OrderTaker, context_of, create, first_trial
from process_memory import PeakRss, rss

from helpers_auth import bearer
from stalwart.client import Client
from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

MB = 2**20
FILE_SIZES = {"model/weights.bin": 200 * MB, "optimizer.bin": 100 * MB, "metadata.json": 0}
MAX_GROWTH = 80 * MB  # the archive is ~300 MB: building it in memory grew the master by more than that


class World:
    def __init__(self, cluster: LocalTestCluster, home: pathlib.Path) -> None:
        self.cluster = cluster
        self.storage = home / "storage"
        self.storage.mkdir()
        self.agent = OrderTaker(cluster, "box", pool="default", slot_type="cpu")
        config = BASE_CONFIG.format(name="big-checkpoint") + yaml.safe_dump(
            {"checkpoint_storage": {"type": "shared_fs", "host_path": str(self.storage)}})
        exp_id = create(cluster, config, context_of(home))
        order = self.agent.order(trial_id=first_trial(cluster, exp_id))
        self.uuid = str(uuid.uuid4())
        self.digests = _write_checkpoint(self.storage / self.uuid)
        self.no_files = str(uuid.uuid4())  # reported, but its files are not in storage
        with Client(cluster.url, allocation_token=order.env["STALWART_ALLOCATION_TOKEN"]) as trial:
            trial.register_checkpoint(order.trial_id, self.uuid, metadata={"steps_completed": 1},
                                      resources=dict(FILE_SIZES))
            trial.register_checkpoint(order.trial_id, self.no_files, metadata={"steps_completed": 2})


def _write_checkpoint(root: pathlib.Path) -> dict[str, str]:
    """Random (incompressible) files of FILE_SIZES under `root`; their sha256 by relative path."""
    digests = {}
    for rel, size in FILE_SIZES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256()
        with path.open("wb") as f:
            for _ in range(size // (4 * MB)):
                block = os.urandom(4 * MB)
                digest.update(block)
                f.write(block)
        digests[rel] = digest.hexdigest()
    return digests


def _digests(root: pathlib.Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    home = tmp_path_factory.mktemp("download-stream")
    with LocalTestCluster(home, agents=0) as cluster:
        w = World(cluster, home)
        yield w
        w.agent.close()


def test_the_master_streams_the_archive_without_holding_it(world: World, tmp_path: pathlib.Path) -> None:
    assert world.cluster.master is not None
    pid = world.cluster.master.pid
    before = rss(pid)
    archive = tmp_path / "checkpoint.tgz"
    with PeakRss(pid) as memory, httpx.Client(base_url=world.cluster.url, timeout=300,
                                              headers=bearer(world.cluster.admin_token or "")) as http, \
            http.stream("GET", f"/api/v1/checkpoints/{world.uuid}/download") as reply, archive.open("wb") as out:
        assert reply.status_code == 200, reply.read()[:300]
        assert reply.headers["content-type"] == "application/gzip"
        assert world.uuid in reply.headers["content-disposition"]  # the UI's link saves it under that name
        for chunk in reply.iter_bytes():
            out.write(chunk)
    size = archive.stat().st_size
    assert size > 290 * MB, size
    grown = memory.peak - before
    assert grown < MAX_GROWTH, f"the master grew by {grown / MB:.0f} MB streaming a {size / MB:.0f} MB archive"
    dest = tmp_path / "extracted"
    with tarfile.open(archive, "r:gz") as tar:
        tar.extractall(dest, filter="data")
    assert _digests(dest) == world.digests


def test_checkpoint_download_gets_identical_bytes(world: World, tmp_path: pathlib.Path) -> None:
    dest = tmp_path / "through-the-master"
    done = world.cluster.cli("checkpoint", "download", world.uuid, "-o", str(dest), "--mode", "master", check=True)
    assert f"Downloaded checkpoint {world.uuid}" in done.stdout
    assert _digests(dest) == world.digests


def test_an_unknown_checkpoint_or_one_without_files_is_a_clear_404(world: World) -> None:
    unknown = str(uuid.uuid4())
    failed = world.cluster.cli("checkpoint", "download", unknown, "--mode", "master")
    assert failed.returncode != 0 and unknown in failed.stdout + failed.stderr
    with httpx.Client(base_url=world.cluster.url, headers=bearer(world.cluster.admin_token or "")) as http:
        reply = http.get(f"/api/v1/checkpoints/{world.no_files}/download")
    assert reply.status_code == 404 and f"checkpoint {world.no_files} is not in storage" in reply.text
