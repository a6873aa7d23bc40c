"""Bodies are not read before the caller is known (issue 25, hole 9 and acceptance 4).

Against a real master process whose body limit is 1 GiB (so the caller check, not the size limit, is what
answers), eight clients at once stream 120 MiB each, from a generator, to a user route (`POST
/api/v1/experiments`, no session) and to an agents' route (`POST /api/v1/agents`, no cluster token). Each gets
401, and the master's resident memory (VmRSS) never grows by 50 MiB while they send: it answers from the
headers and discards the upload as it arrives. A client may see its connection closed after the 401 while it is
still sending; what counts is the status it reads.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from process_memory import PeakRss, rss

from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

MIB = 1024 * 1024
UPLOAD = 120 * MIB
CLIENTS = 8
GROWTH_LIMIT = 50 * MIB
ROUTES = ("/api/v1/experiments", "/api/v1/agents")


def body(size: int) -> Iterator[bytes]:
    """`size` bytes of JSON-looking text, 1 MiB at a time (one buffer, so the client holds 1 MiB)."""
    chunk = b" " * MIB
    for _ in range(size // MIB):
        yield chunk


def post(url: str, path: str, size: int) -> int:
    """POST `size` streamed bytes with no credentials; the status read (a connection closed after the answer
    still gives it)."""
    with httpx.Client(base_url=url, timeout=300) as client:
        reply = client.post(path, content=body(size), headers={"content-type": "application/json"})
        assert reply.status_code != 401 or reply.json()["error"]["kind"] == "unauthenticated", reply.text
        return reply.status_code


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalTestCluster]:
    config = "limits:\n  max_request_body: 1GiB\n"
    with LocalTestCluster(tmp_path_factory.mktemp("bodies") / "home", agents=0, master_config=config) as c:
        yield c


def test_eight_unauthenticated_uploads_get_401_without_the_master_holding_them(cluster: LocalTestCluster) -> None:
    assert cluster.master is not None
    for path in ROUTES:  # warm up: the code paths of a refusal are loaded before the baseline is taken
        assert post(cluster.url, path, MIB) == 401
    time.sleep(0.5)
    before = rss(cluster.master.pid)
    started = time.monotonic()
    with PeakRss(cluster.master.pid) as peak, ThreadPoolExecutor(CLIENTS) as pool:
        statuses = list(pool.map(lambda i: post(cluster.url, ROUTES[i % 2], UPLOAD), range(CLIENTS)))
    took = time.monotonic() - started
    assert statuses == [401] * CLIENTS
    grown = peak.peak - before
    assert grown < GROWTH_LIMIT, (f"the master grew by {grown / MIB:.1f} MiB (from {before / MIB:.0f} MiB) while "
                                  f"refusing {CLIENTS} x {UPLOAD // MIB} MiB in {took:.1f} s")
    # it still answers, and a caller it knows still gets through
    with cluster.client() as client:
        assert client.master_info() is not None
