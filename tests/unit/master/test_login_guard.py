"""The back-off of failed logins (per user name and per client address) and the bound on password checks at once.

The back-off runs on an injected clock, so nothing here sleeps; the password checks run real threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading

import pytest

from stalwart.api.errors import ConfigError, TooManyRequests
from stalwart.config.master import LoginBackoffConfig, parse_master_config
from stalwart.master.identity.login_guard import Backoff, LoginGuard, PasswordChecks, delay_after
from stalwart.master.identity.passwords import DUMMY_HASH, verify
from unit.master.async_helpers import run_fresh

RULES = LoginBackoffConfig(free_failures=5, free_failures_per_address=20, base_delay=1.0, max_delay=30.0,
                           forget_after=60.0, max_tracked=100)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def fail(backoff: Backoff, username: str, address: str | None = "10.0.0.1") -> None:
    backoff.failed(backoff.admit(username, address))


def retry_after(backoff: Backoff, username: str, address: str | None = "10.0.0.1") -> int:
    with pytest.raises(TooManyRequests) as refused:
        backoff.admit(username, address)
    return refused.value.retry_after_s


def test_the_wait_doubles_after_the_free_failures_up_to_the_cap() -> None:
    waits = [delay_after(n, 5, RULES) for n in range(1, 14)]
    assert waits == [0, 0, 0, 0, 0, 1, 2, 4, 8, 16, 30, 30, 30]
    assert delay_after(10_000, 5, RULES) == 30  # no overflow however many


def test_five_failures_are_free_then_each_next_attempt_waits_and_the_right_password_works_after_it() -> None:
    clock = Clock()
    backoff = Backoff(RULES, clock)
    for _ in range(5):
        fail(backoff, "alice")
    fail(backoff, "alice")  # the sixth: the next attempt waits 1 s
    assert retry_after(backoff, "alice") == 1
    clock.now += 1.0
    fail(backoff, "alice")  # the seventh: 2 s
    clock.now += 1.5
    with pytest.raises(TooManyRequests, match=r"too many failed logins for alice: wait 1 s"):
        backoff.admit("alice", "10.0.0.1")
    clock.now += 0.5
    backoff.succeeded(backoff.admit("alice", "10.0.0.1"))  # the right password, after the back-off
    for _ in range(5):  # the name's count started again from zero
        fail(backoff, "alice")
    backoff.admit("alice", "10.0.0.1")


def test_there_is_never_a_lock_out_however_many_failures() -> None:
    clock = Clock()
    backoff = Backoff(RULES, clock)
    for _ in range(200):
        try:
            fail(backoff, "alice")
        except TooManyRequests as refused:
            assert refused.retry_after_s <= 30
            clock.now += refused.retry_after_s
    assert retry_after(backoff, "alice") == 30
    clock.now += 30
    backoff.succeeded(backoff.admit("alice", "10.0.0.1"))


def test_refused_attempts_are_not_counted() -> None:
    clock = Clock()
    backoff = Backoff(RULES, clock)
    for _ in range(6):
        fail(backoff, "alice")
    for _ in range(50):  # hammering during the back-off does not lengthen it
        retry_after(backoff, "alice")
    clock.now += 1.0
    backoff.admit("alice", "10.0.0.1")


def test_failures_are_forgotten_one_per_forget_after_seconds() -> None:
    clock = Clock()
    backoff = Backoff(RULES, clock)
    for _ in range(5):
        fail(backoff, "alice")
    clock.now += 120  # two failures forgotten: three left, so two more are free
    fail(backoff, "alice")
    fail(backoff, "alice")
    backoff.admit("alice", "10.0.0.1")  # count 5: still free
    assert len(backoff.names) == 1
    clock.now += 3600  # everything forgotten
    fail(backoff, "alice")
    assert backoff.names.get("alice", clock.now).failures == 1


def test_an_address_guessing_at_many_names_is_slowed_and_other_addresses_are_not() -> None:
    clock = Clock()
    backoff = Backoff(RULES, clock)
    for i in range(21):  # one failure each for 21 names: free per name, the 21st over the address's 20
        fail(backoff, f"user{i}", "10.0.0.9")
    with pytest.raises(TooManyRequests, match=r"too many failed logins from 10\.0\.0\.9: wait 1 s"):
        backoff.admit("bob", "10.0.0.9")
    backoff.succeeded(backoff.admit("bob", "10.0.0.7"))  # bob from elsewhere: unaffected
    clock.now += 1.0
    backoff.succeeded(backoff.admit("bob", "10.0.0.9"))
    assert backoff.addresses.get("10.0.0.9", clock.now).failures == 21  # a success does not reset the address


def test_another_users_login_is_unaffected_by_one_users_back_off() -> None:
    backoff = Backoff(RULES, Clock())
    for _ in range(12):
        with contextlib.suppress(TooManyRequests):
            fail(backoff, "alice", "10.0.0.1")
    backoff.succeeded(backoff.admit("bob", "10.0.0.1"))  # same address: 6 of its 20 free failures used
    backoff.succeeded(backoff.admit("bob", "10.0.0.2"))


def test_past_the_free_failures_only_one_attempt_per_name_is_checked_at_a_time() -> None:
    clock = Clock()
    backoff = Backoff(RULES, clock)
    admitted = [backoff.admit("alice", None) for _ in range(5)]  # a burst: five at once are free
    assert retry_after(backoff, "alice", None) == 1
    for attempt in admitted:
        backoff.failed(attempt)
    second = backoff.admit("alice", None)  # count 5: one more check, alone
    assert retry_after(backoff, "alice", None) == 1
    backoff.abandoned(second)  # its caller left: not counted
    assert backoff.names.get("alice", clock.now).failures == 5


def test_the_tracked_names_are_bounded() -> None:
    backoff = Backoff(RULES, Clock())
    for i in range(1000):
        fail(backoff, f"user{i}", f"10.1.{i // 250}.{i % 250}")
    assert len(backoff.names) <= RULES.max_tracked
    assert len(backoff.addresses) <= RULES.max_tracked
    backoff.succeeded(backoff.admit("carol", None))
    assert "carol" not in backoff.names  # nothing kept of a login without failures


def test_at_most_the_concurrent_checks_run_at_once_and_a_full_queue_is_refused() -> None:
    checks = PasswordChecks(concurrent=2, queued=3)
    release = threading.Event()
    lock = threading.Lock()
    running = [0, 0]  # now, most

    def check() -> bool:
        with lock:
            running[0] += 1
            running[1] = max(running[1], running[0])
        release.wait(10)
        with lock:
            running[0] -= 1
        return True

    async def scenario() -> tuple[list[object], int]:
        tasks = [asyncio.create_task(checks.run(check)) for _ in range(5)]
        await asyncio.sleep(0)  # each task submits its check
        while checks.pending < 5:
            await asyncio.sleep(0.001)
        with pytest.raises(TooManyRequests, match="at most 2 at once"):
            await checks.run(check)
        unbounded = asyncio.create_task(checks.run(check, bounded=False))  # a signed-in user's: waits its turn
        release.set()
        return list(await asyncio.gather(*tasks, unbounded)), checks.pending

    results, pending = run_fresh(scenario)
    assert results == [True] * 6
    assert running[1] == 2
    assert pending == 0


def test_a_check_that_raises_is_not_counted_and_a_wrong_one_is() -> None:
    clock = Clock()
    guard = LoginGuard(RULES, clock)

    def broken() -> bool:
        raise RuntimeError("the check failed")

    async def scenario() -> None:
        with pytest.raises(RuntimeError):
            await guard.check("alice", "10.0.0.1", broken)
        assert not await guard.check("alice", "10.0.0.1", lambda: verify(DUMMY_HASH, "a guess"))

    run_fresh(scenario)
    assert guard.backoff.names.get("alice", clock.now).failures == 1


def test_the_config_keys_and_their_checks() -> None:
    cfg = parse_master_config({"security": {"login_backoff": {"free_failures": 3, "base_delay": 0.2,
                                                              "max_delay": 0.5}}})
    assert cfg.security.login_backoff == LoginBackoffConfig(free_failures=3, base_delay=0.2, max_delay=0.5)
    assert parse_master_config({}).security.login_backoff == LoginBackoffConfig()
    with pytest.raises(ConfigError, match=r"security\.login_backoff\.max_delay: must be at least base_delay"):
        parse_master_config({"security": {"login_backoff": {"base_delay": 5, "max_delay": 1}}})
    with pytest.raises(ConfigError, match=r"security\.login_backoff\.concurrent_checks"):
        parse_master_config({"security": {"login_backoff": {"concurrent_checks": 0}}})
    with pytest.raises(ConfigError, match=r"security\.login_backoff\.lockout"):
        parse_master_config({"security": {"login_backoff": {"lockout": True}}})
