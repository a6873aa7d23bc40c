"""Wrong passwords: the back-off per user name and per client address, and the bound on password checks at once.

The back-off (docs/users.md, "Wrong passwords: the back-off"; the numbers are `security.login_backoff`):
- each user name and each client address has a count of failed logins: a failure adds one, and every
  `forget_after` seconds (60) without a failure takes one off;
- while a count is at most its free allowance (`free_failures`, 5, for a name; `free_failures_per_address`, 50,
  for an address) attempts go straight to the password check;
- the failure that brings a count to free + k (k >= 1) makes the next attempt for that name (from that address)
  wait min(`max_delay`, `base_delay` * 2^(k-1)) seconds from that failure: 1, 2, 4, 8, 16, 30, 30, ... s;
- an attempt that comes earlier is answered 429 with Retry-After (not held: holding would keep a connection and
  a task per guess) and is neither checked nor counted, so whoever waits out the back-off always gets a check:
  the right password always works in the end, there is no lock-out;
- beyond the free allowance one attempt per name (per address) is checked at a time, so a burst of concurrent
  guesses cannot all slip in before the first of their failures is counted;
- a successful login clears its name's count, not its address's (one good account must not reset the count of
  guesses from an address at other accounts).
The state is in the master's memory (one process, ARCHITECTURE.md): at most `max_tracked` names and as many
addresses, the least recently used forgotten first.

Password checks (`PasswordChecks`): an argon2id check holds 64 MiB while it runs, so they run in a thread pool of
`concurrent_checks` (4) threads, and a check whose caller hung up still holds its thread until it ends: memory
stays bounded whatever the clients do. Up to `queued_checks` (32) more wait their turn; a login beyond that is
answered 429 at once.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from starlette.requests import Request

from stalwart.api.errors import TooManyRequests
from stalwart.config.master import LoginBackoffConfig
from stalwart.master.service import Master

T = TypeVar("T")
Clock = Callable[[], float]
log = logging.getLogger("stalwart.master.login")


def client_address(request: Request) -> str | None:
    """The address a request came from (uvicorn takes X-Forwarded-For only from a proxy on 127.0.0.1)."""
    return request.client.host if request.client else None


def delay_after(failures: int, free: int, rules: LoginBackoffConfig) -> float:
    """Seconds the next attempt waits after the failure that brought a count to `failures`."""
    over = failures - free
    if over <= 0:
        return 0.0
    return float(min(rules.max_delay, rules.base_delay * 2.0 ** min(over - 1, 64)))


@dataclass
class Count:
    """Failed logins of one user name or one address."""

    failures: int = 0
    last_failure: float = 0.0  # when the count last grew (or, decayed, when it last shrank)
    not_before: float = 0.0  # no attempt is checked before then
    in_flight: int = 0  # attempts being checked now

    @property
    def idle(self) -> bool:
        return self.failures == 0 and self.in_flight == 0


class Counts:
    """The counts of one kind of key (user names, or addresses), least recently used forgotten first."""

    def __init__(self, free: int, rules: LoginBackoffConfig) -> None:
        self.free = free
        self.rules = rules
        self._counts: OrderedDict[str, Count] = OrderedDict()

    def __len__(self) -> int:
        return len(self._counts)

    def __contains__(self, key: str) -> bool:
        return key in self._counts

    def get(self, key: str, now: float) -> Count:
        """The count of `key` as of `now` (failures forgotten over time taken off); a new one if none."""
        count = self._counts.get(key)
        if count is None:
            count = self._counts[key] = Count()
            while len(self._counts) > self.rules.max_tracked:
                self._counts.popitem(last=False)
        else:
            self._counts.move_to_end(key)
        self._forget(count, now)
        return count

    def _forget(self, count: Count, now: float) -> None:
        if count.failures == 0:
            return
        periods = int((now - count.last_failure) // self.rules.forget_after)
        if periods > 0:
            count.failures = max(0, count.failures - periods)
            count.last_failure += periods * self.rules.forget_after

    def wait(self, count: Count, now: float) -> float:
        """Seconds until an attempt on this count may be checked (0: now)."""
        if now < count.not_before:
            return count.not_before - now
        if count.in_flight and count.failures + count.in_flight >= self.free:
            return 1.0  # past the free allowance one check at a time; the one running ends well within a second
        return 0.0

    def fail(self, count: Count, now: float) -> float:
        """Count a failure; the seconds the next attempt must wait."""
        self._forget(count, now)
        count.failures += 1
        count.last_failure = now
        delay = delay_after(count.failures, self.free, self.rules)
        count.not_before = now + delay
        return delay

    def release(self, key: str, count: Count) -> None:
        """An attempt on `key` is over: forget the count if nothing is left in it."""
        count.in_flight = max(0, count.in_flight - 1)
        if count.idle and self._counts.get(key) is count:
            del self._counts[key]


@dataclass(frozen=True)
class Attempt:
    """A login attempt admitted to its password check: the counts it holds a place in."""

    username: str
    address: str | None
    name_count: Count
    address_count: Count | None


class Backoff:
    """The back-off of failed logins per user name and per client address (the module docstring's rules)."""

    def __init__(self, rules: LoginBackoffConfig, clock: Clock = time.monotonic) -> None:
        self.rules = rules
        self.clock = clock
        self.names = Counts(rules.free_failures, rules)
        self.addresses = Counts(rules.free_failures_per_address, rules)

    def admit(self, username: str, address: str | None) -> Attempt:
        """Let an attempt on to its password check, or refuse it (429) while its name or address is in back-off."""
        now = self.clock()
        name_count = self.names.get(username, now)
        address_count = self.addresses.get(address, now) if address else None
        self._refuse_early(f"for {username}", self.names.wait(name_count, now))
        if address_count is not None:
            self._refuse_early(f"from {address}", self.addresses.wait(address_count, now))
        for count in (name_count, address_count):
            if count is not None:
                count.in_flight += 1
        return Attempt(username, address, name_count, address_count)

    def _refuse_early(self, whose: str, wait: float) -> None:
        if wait <= 0:
            return
        seconds = max(1, math.ceil(wait))
        raise TooManyRequests(
            f"too many failed logins {whose}: wait {seconds} s, then try again (each further failure doubles the "
            f"wait, up to {self.rules.max_delay:g} s; the account is never locked)", retry_after_s=seconds)

    def failed(self, attempt: Attempt) -> None:
        """The attempt's password was wrong (or its name unknown): count it on its name and its address."""
        now = self.clock()
        delay = self.names.fail(attempt.name_count, now)
        if attempt.address_count is not None:
            delay = max(delay, self.addresses.fail(attempt.address_count, now))
        self._release(attempt)
        if delay > 0:
            log.warning("failed login for %s from %s (%d failures of the name, %s of the address): the next attempt "
                        "waits %.1f s", attempt.username, attempt.address or "inside the master",
                        attempt.name_count.failures,
                        attempt.address_count.failures if attempt.address_count else "-", delay)

    def succeeded(self, attempt: Attempt) -> None:
        """The right password: the name's count starts again from zero (the address's stays)."""
        attempt.name_count.failures = 0
        attempt.name_count.not_before = 0.0
        self._release(attempt)

    def abandoned(self, attempt: Attempt) -> None:
        """The attempt ended without an answer (its check was refused or its caller left): nothing is counted."""
        self._release(attempt)

    def _release(self, attempt: Attempt) -> None:
        self.names.release(attempt.username, attempt.name_count)
        if attempt.address is not None and attempt.address_count is not None:
            self.addresses.release(attempt.address, attempt.address_count)


class PasswordChecks:
    """Runs argon2id checks (and hashes) at most `concurrent` at once; at most `queued` more may wait."""

    def __init__(self, concurrent: int, queued: int) -> None:
        self._pool = ThreadPoolExecutor(max_workers=concurrent, thread_name_prefix="password-check")
        self.concurrent = concurrent
        self.limit = concurrent + queued
        self._pending = 0  # submitted and not yet finished (running or waiting)
        self._lock = threading.Lock()  # the pool's threads finish checks; the event loop submits them

    @property
    def pending(self) -> int:
        return self._pending

    async def run(self, fn: Callable[..., T], *args: object, bounded: bool = True) -> T:
        """`fn(*args)` in the pool. `bounded`: refused (429) when the pool and its queue are full (logins); a
        signed-in user's password change is never refused, it waits its turn."""
        with self._lock:
            if bounded and self._pending >= self.limit:
                raise TooManyRequests(f"the master is checking {self._pending} passwords already (at most "
                                      f"{self.concurrent} at once): try again in a second", retry_after_s=1)
            self._pending += 1
        future = self._pool.submit(fn, *args)
        future.add_done_callback(self._finished)
        return await asyncio.wrap_future(future)

    def _finished(self, _future: Future[Any]) -> None:  # any check's future: only its end counts
        with self._lock:
            self._pending -= 1


class LoginGuard:
    """The back-off and the password checks of one master."""

    def __init__(self, rules: LoginBackoffConfig, clock: Clock = time.monotonic) -> None:
        self.backoff = Backoff(rules, clock)
        self.checks = PasswordChecks(rules.concurrent_checks, rules.queued_checks)

    async def check(self, username: str, address: str | None, matches: Callable[[], bool]) -> bool:
        """Does the password match (`matches`: one argon2id check, run in the pool)? Refused (429) while the name
        or the address is in back-off or the checks are full; a wrong password counts towards the back-off."""
        attempt = self.backoff.admit(username, address)
        try:
            ok = await self.checks.run(matches)
        except BaseException:
            self.backoff.abandoned(attempt)
            raise
        if ok:
            self.backoff.succeeded(attempt)
        else:
            self.backoff.failed(attempt)
        return ok


_GUARDS: weakref.WeakKeyDictionary[Master, LoginGuard] = weakref.WeakKeyDictionary()


def guard_of(m: Master) -> LoginGuard:
    """The login guard of master `m` (made on first use from its config's `security.login_backoff`)."""
    guard = _GUARDS.get(m)
    if guard is None:
        guard = _GUARDS[m] = LoginGuard(m.settings.cluster.security.login_backoff)
    return guard
