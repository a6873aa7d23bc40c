"""Limits on what the master takes in (request bodies, context archives) and disk the cluster leaves behind."""

from __future__ import annotations

import base64
import gzip
import json
import os
import re
import tarfile
import threading
import time

import httpx
import pytest
import yaml
from process_memory import rss

from helpers_auth import bearer
from integration.helpers import digits_config, wait_state
from stalwart.api.errors import InvalidRequest, MasterUnavailable
from stalwart.context import pack_context
from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

MIB = 1024 * 1024
ALLOCATION_DIR = re.compile(r"^[0-9a-f]{32}$")


def _empty_files_tgz(count: int) -> bytes:
    """A .tgz of `count` empty files named 000000, 000001, ... (headers written directly: fast)."""
    template = tarfile.TarInfo("0" * 6)
    template.mtime = 0
    block = bytearray(template.tobuf(format=tarfile.USTAR_FORMAT))
    assert len(block) == 512
    block[148:156] = b" " * 8
    base = sum(block) - sum(block[:6])
    out = bytearray()
    for i in range(count):
        name = b"%06d" % i
        block[:6] = name
        block[148:156] = b"%06o\0 " % (base + sum(name))
        out += block
    out += bytes(1024)
    return gzip.compress(bytes(out), compresslevel=1)


@pytest.fixture(scope="module")
def many_members_b64() -> str:
    return base64.b64encode(_empty_files_tgz(480_000)).decode()


def test_member_bombs_are_refused_by_the_member_limit_while_the_master_keeps_answering(cluster, many_members_b64):
    config = digits_config()
    replies: list[httpx.Response] = []
    done = threading.Event()

    def send() -> None:
        with httpx.Client(base_url=cluster.url, timeout=300, headers=bearer(cluster.admin_token)) as http:
            replies.append(http.post("/api/v1/experiments", json={"config": config, "context": many_members_b64}))

    senders = [threading.Thread(target=send) for _ in range(4)]
    latencies: list[float] = []
    started = time.monotonic()
    with httpx.Client(base_url=cluster.url, timeout=120) as poll:
        for s in senders:
            s.start()

        def all_done() -> None:
            for s in senders:
                s.join()
            done.set()

        threading.Thread(target=all_done, daemon=True).start()
        while not done.is_set():
            began = time.monotonic()
            assert poll.get("/api/v1/master").status_code == 200
            latencies.append(time.monotonic() - began)
            done.wait(0.1)
    checking = time.monotonic() - started
    assert len(replies) == 4
    for reply in replies:
        assert reply.status_code == 400, reply.text
        message = reply.json()["error"]["message"]
        assert "100,000 members" in message and "limits.max_context_members" in message, message
    assert cluster.client().get("/experiments")["total"] == 0
    # The master stays responsive while it checks the archives: no answer waits for the checks. The bound
    # is 1 s; on a machine so loaded that the checks take long (CI's workers share it with trials), an answer may
    # take longer than that, but never a third of the checks' time, as a check blocking the master would make it.
    slowest = max(latencies)
    assert slowest < max(1.0, checking / 3), (
        f"GET /api/v1/master took up to {slowest:.2f} s ({len(latencies)} polls in {checking:.1f} s of checks)")


def test_a_150_mib_body_is_refused_early_and_a_95_mib_context_is_taken(cluster, tmp_path):
    c = cluster
    pid = c.master.pid
    client = c.client(timeout=300)
    with pytest.raises(InvalidRequest):  # warm up the create path (imports, first allocations)
        client.post("/experiments", {"config": "searcher: {name: single}", "context": ""})
    before = rss(pid)

    body = json.dumps({"config": digits_config(), "context": "A" * (150 * MIB)}).encode()
    reply = httpx.post(c.url + "/api/v1/experiments", content=body, timeout=300,
                       headers={"content-type": "application/json", **bearer(c.admin_token)})
    assert reply.status_code == 413, reply.text[:500]
    error = reply.json()["error"]
    assert error["kind"] == "invalid_request"
    assert "130 MiB" in error["message"] and "limits.max_request_body" in error["message"], error
    # Through the client: the 413 arrives as a clear error, not as "cannot reach the master".
    try:
        client.post("/experiments", {"config": digits_config(), "context": "A" * (150 * MIB)})
    except MasterUnavailable as err:
        pytest.fail(f"the client read the 413 as an unreachable master: {err}")
    except InvalidRequest as err:
        assert "limits.max_request_body" in str(err)
    else:
        pytest.fail("a 150 MiB body was accepted")
    grown_mb = (rss(pid) - before) / 2**20
    assert grown_mb <= 20, f"the master's RSS grew by {grown_mb:.0f} MB while refusing 150 MiB bodies"
    assert c.client().get("/master")["cluster_id"]

    # The largest legal context (95 MiB of incompressible bytes) still fits under the default body limit.
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "train.py").write_text("print('hi')\n")
    room = 95 * MIB - len("print('hi')\n")
    for i, size in enumerate((room // 3, room // 3, room - 2 * (room // 3))):
        (ctx / f"blob{i}.bin").write_bytes(os.urandom(size))
    packed = pack_context(ctx)
    assert packed.size == 95 * MIB
    created = client.post("/experiments", {"config": digits_config(), "context": base64.b64encode(packed.data).decode(),
                                           "activate": False})
    assert created["experiment"]["state"] == "PAUSED"


def test_the_agent_removes_each_finished_allocations_work_directory(tmp_path):
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "data.txt").write_text("x" * 10_000)
    config = yaml.safe_dump({
        "name": "twenty",
        "entrypoint": "python3 -c pass",
        "hyperparameters": {"x": {"type": "int", "minval": 1, "maxval": 20, "count": 20}},
        "searcher": {"name": "grid", "metric": "loss", "max_length": 1, "max_concurrent_trials": 4},
        "max_restarts": 0,
    })
    with LocalTestCluster(tmp_path / "home", slots=4) as c:
        work = c.home / "agent-0"
        exp_id = c.client().post("/experiments", {
            "config": config, "context": base64.b64encode(pack_context(ctx).data).decode()})["experiment"]["id"]
        d = wait_state(c, exp_id, {"COMPLETED", "ERROR"}, timeout=300)
        assert d["experiment"]["state"] == "COMPLETED"
        assert len(d["trials"]) == 20 and all(t["state"] == "COMPLETED" for t in d["trials"])

        def left() -> list[str]:
            return sorted(p.name for p in work.iterdir() if ALLOCATION_DIR.match(p.name))

        c.wait_for(lambda: not left(), timeout=60, what="the agent to remove the finished allocations' directories")
        assert c.agents[0].poll() is None
