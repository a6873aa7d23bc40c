"""Wrong passwords against a real master process: the back-off per user name and per client address (429 with
Retry-After, audit entries), bounded memory under 100 concurrent bad logins, the right password working after the
back-off, other users unaffected, an unknown name costing what a known one does, and the web UI's form alike.

The master's config shortens the back-off (`security.login_backoff`) so the test waits seconds, not minutes.
Each test logs in from its own loopback address (127.0.0.N: Linux routes all of 127/8 to the master on
127.0.0.1), so the per-address counts of one test do not reach another's.
"""

from __future__ import annotations

import asyncio
import re
import statistics
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
from process_memory import PeakRss, rss

from helpers_auth import LOGIN, bearer
from stalwart.testing import LocalTestCluster
from unit.master.async_helpers import run_fresh

pytestmark = pytest.mark.integration

MIB = 1024 * 1024
CONFIG = """
security:
  login_backoff: {free_failures: 5, free_failures_per_address: 10, base_delay: 1, max_delay: 2, forget_after: 600}
"""
PASSWORDS = {"alice": "alice-pw-1", "bob": "bob-pw-2", "carol": "carol-pw-3", "dave": "dave-pw-4",
             "erin": "erin-pw-5", "frank": "frank-pw-6"}


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalTestCluster]:
    with LocalTestCluster(tmp_path_factory.mktemp("backoff") / "home", agents=0, master_config=CONFIG) as c, \
            httpx.Client(base_url=c.url, timeout=60, headers=bearer(c.admin_token or "")) as admin:
        for name, password in PASSWORDS.items():
            reply = admin.post("/api/v1/users", json={"username": name, "password": password})
            assert reply.status_code == 200, reply.text
        yield c


def client(master: LocalTestCluster, address: str) -> httpx.Client:
    """A client whose connections come from `address` (a loopback address)."""
    return httpx.Client(base_url=master.url, timeout=60, transport=httpx.HTTPTransport(local_address=address))


def login(http: httpx.Client, name: str, password: str) -> httpx.Response:
    return http.post(LOGIN, json={"username": name, "password": password})


def log_in_after_back_off(http: httpx.Client, name: str) -> tuple[httpx.Response, float]:
    """The right password, waiting out each 429's Retry-After: the answer and the seconds waited."""
    waited = 0.0
    for _ in range(10):
        reply = login(http, name, PASSWORDS[name])
        if reply.status_code != 429:
            return reply, waited
        wait = float(reply.headers["retry-after"])
        time.sleep(wait)
        waited += wait
    raise AssertionError(f"{name} was still in back-off after waiting {waited} s")


def assert_throttled(reply: httpx.Response, whose: str) -> None:
    assert reply.status_code == 429, reply.text
    assert int(reply.headers["retry-after"]) >= 1
    error = reply.json()["error"]
    assert error["kind"] == "too_many_requests"
    assert re.match(rf"too many failed logins {re.escape(whose)}: wait \d+ s", error["message"]), error["message"]


async def _burst(url: str, address: str, name: str, count: int) -> list[httpx.Response]:
    transport = httpx.AsyncHTTPTransport(local_address=address, limits=httpx.Limits(max_connections=count))
    async with httpx.AsyncClient(base_url=url, timeout=120, transport=transport) as http:
        return list(await asyncio.gather(*(
            http.post(LOGIN, json={"username": name, "password": f"guess-{i}"}) for i in range(count))))


def test_100_concurrent_bad_logins_answer_401_or_429_in_bounded_memory_and_the_right_password_works_after(
        master: LocalTestCluster) -> None:
    assert master.master is not None
    pid = master.master.pid
    before = rss(pid)
    with PeakRss(pid, every=0.005) as memory:
        replies = run_fresh(lambda: _burst(master.url, "127.0.0.2", "alice", 100))
    after = rss(pid)
    statuses = [r.status_code for r in replies]
    print(f"RSS before {before / MIB:.0f} MiB, peak {memory.peak / MIB:.0f} MiB, after {after / MIB:.0f} MiB; "
          f"401: {statuses.count(401)}, 429: {statuses.count(429)}")
    assert set(statuses) <= {401, 429}, statuses
    assert statuses.count(429) >= 50  # only the free failures (and one at a time past them) reach a check
    for reply in replies:
        if reply.status_code == 429:
            assert_throttled(reply, "for alice")
    assert memory.peak - before < 300 * MIB
    assert after - before < 300 * MIB
    with client(master, "127.0.0.2") as http:
        reply, waited = log_in_after_back_off(http, "alice")
    assert reply.status_code == 200, reply.text
    assert waited <= 2 + 1


def test_30_wrong_passwords_in_a_row_are_slowed_audited_and_other_users_log_in_as_fast_as_before(
        master: LocalTestCluster) -> None:
    with client(master, "127.0.0.4") as elsewhere:
        before = []
        for _ in range(3):
            start = time.monotonic()
            assert login(elsewhere, "bob", PASSWORDS["bob"]).status_code == 200
            before.append(time.monotonic() - start)
    baseline = statistics.median(before)
    statuses: list[int] = []
    throttled: list[httpx.Response] = []

    def guess() -> None:
        with client(master, "127.0.0.3") as http:
            for i in range(30):
                reply = login(http, "carol", f"wrong-{i}")
                statuses.append(reply.status_code)
                if reply.status_code == 429:
                    throttled.append(reply)

    guesser = threading.Thread(target=guess)
    guesser.start()
    bob_times = []
    with client(master, "127.0.0.4") as elsewhere:
        while guesser.is_alive() or not bob_times:
            start = time.monotonic()
            assert login(elsewhere, "bob", PASSWORDS["bob"]).status_code == 200
            bob_times.append(time.monotonic() - start)
    guesser.join()
    print(f"carol: {statuses}; bob's logins took {[round(t, 3) for t in bob_times]} s (before: {baseline:.3f} s)")
    assert statuses[:5] == [401] * 5  # the free failures
    assert statuses.count(429) >= 15  # then each next attempt waits (1, 2, 2 ... s)
    assert_throttled(throttled[0], "for carol")
    assert statistics.median(bob_times) < 2 * baseline + 0.5  # the same, give or take the machine's load
    with client(master, "127.0.0.3") as http:  # the same address as the guesses: still within its free failures
        assert login(http, "bob", PASSWORDS["bob"]).status_code == 200
        reply, _ = log_in_after_back_off(http, "carol")
    assert reply.status_code == 200, reply.text
    with httpx.Client(base_url=master.url, timeout=60, headers=bearer(master.admin_token or "")) as admin:
        outcomes = master.wait_for(lambda: {e["outcome"] for e in admin.get(
            "/api/v1/audit", params={"user": "carol", "limit": 100}).json()["entries"]} >= {"throttled", "refused",
                                                                                          "ok"} or None,
            timeout=10, what="carol's throttled, refused and ok logins in the audit log")
    assert outcomes


def test_an_address_guessing_at_many_names_is_slowed_and_another_address_is_not(master: LocalTestCluster) -> None:
    with client(master, "127.0.0.5") as guesser, client(master, "127.0.0.6") as elsewhere:
        for i in range(11):  # one failure for each of 11 names: free per name, over the address's 10
            assert login(guesser, f"ghost-{i}", "guess").status_code == 401
        assert_throttled(login(guesser, "dave", PASSWORDS["dave"]), "from 127.0.0.5")
        assert login(elsewhere, "dave", PASSWORDS["dave"]).status_code == 200
        reply, waited = log_in_after_back_off(guesser, "dave")
    assert reply.status_code == 200, reply.text
    assert waited <= 3  # (the wait may be over already: the login from elsewhere took its time)


def test_an_unknown_name_costs_what_a_known_one_costs(master: LocalTestCluster) -> None:
    """The fastest of 5 wrong logins each, interleaved (other load on the machine hits both alike). Without the
    dummy check an unknown name would be answered in a few ms against about 100 ms for a known one."""
    times: dict[str, list[float]] = {"known": [], "unknown": []}
    with client(master, "127.0.0.7") as http:
        for i in range(5):  # 10 failures from this address, its free allowance; 5 for erin, hers
            for kind, name in (("known", "erin"), ("unknown", f"nobody-{i}")):
                start = time.monotonic()
                assert login(http, name, "not-the-password").status_code == 401
                times[kind].append(time.monotonic() - start)
    known, unknown = min(times["known"]), min(times["unknown"])
    print(f"a wrong password: {known:.3f} s for a known name, {unknown:.3f} s for an unknown one")
    assert 0.3 < unknown / known < 3.0


def test_the_web_forms_logins_share_the_back_off(master: LocalTestCluster) -> None:
    def form(http: httpx.Client, password: str) -> httpx.Response:
        return http.post("/login", data={"username": "frank", "password": password, "next": "/"},
                         follow_redirects=False)

    with client(master, "127.0.0.8") as http:
        for i in range(3):
            assert login(http, "frank", f"api-guess-{i}").status_code == 401
        for i in range(3):
            assert form(http, f"form-guess-{i}").status_code == 401
        page = form(http, PASSWORDS["frank"])  # the sixth failure made the next attempt wait
        assert page.status_code == 429
        assert int(page.headers["retry-after"]) >= 1
        assert "too many failed logins for frank: wait" in page.text
        time.sleep(float(page.headers["retry-after"]))
        signed_in = form(http, PASSWORDS["frank"])
    assert signed_in.status_code == 303, signed_in.text
    assert "stalwart_session" in signed_in.cookies
