"""Log policies at work (Determined 0.38's `log_policies`, docs/logs.md): each line a trial run writes is matched
against its experiment's policies (their patterns compiled once per experiment and kept on the master); the first
line of a run matching a policy is recorded with the agent it ran on, and the trial shows the policy's name. What a
match means is read when the run ends (`experiments/trials.py`: `cancel_retries`, no restart) and when the trial
is placed again (`scheduling/placing.py`: `exclude_node`, not on that agent)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from stalwart.config.log_patterns import Pattern, PatternError, compile_pattern
from stalwart.master.log_rows import COLUMNS, Row, log_rows
from stalwart.master.queries import log_policies as policy_rows, logs as log_store
from stalwart.master.queries.rows import Conn
from stalwart.master.service import Master, now

CONFIG_LINE = re.compile(r'"log_policies"\s*:')
"""A line printing an experiment config holds the patterns themselves: it never counts as a match (as in
Determined)."""
MAX_STORED_LINE = 4096
CACHE_LIMIT = 20_000
"""Entries each of the master's two caches (trials' experiments, experiments' compiled policies) holds at most."""


@dataclass(frozen=True)
class CompiledPolicy:
    name: str | None
    pattern: str
    action: str | None  # cancel_retries, exclude_node, or None: a label only
    regex: Pattern


def compile_policies(policies: Sequence[Any]) -> tuple[CompiledPolicy, ...]:
    """The policies that have a pattern, compiled with RE2 (a pattern null disables a default; the config check refused
    patterns that do not compile, so one that fails here, from an older master, is left out)."""
    out = []
    for p in policies:
        if not isinstance(p, dict) or not isinstance(p.get("pattern"), str):
            continue
        try:
            regex = compile_pattern(p["pattern"])
        except PatternError:
            continue
        out.append(CompiledPolicy(p.get("name"), p["pattern"], p.get("action"), regex))
    return tuple(out)


def matches(policies: Sequence[CompiledPolicy], line: str) -> list[CompiledPolicy]:
    """The policies `line` matches (a search anywhere in the line, as Go's MatchString), in config order."""
    if not line or CONFIG_LINE.search(line):
        return []
    return [p for p in policies if p.regex.search(line)]


def _policies_of_trials(m: Master, conn: Conn, trial_ids: set[int]) -> dict[int, tuple[CompiledPolicy, ...]]:
    for cache in (m.trial_experiments, m.log_policy_cache):
        if len(cache) > CACHE_LIMIT:  # bounded: a long-lived master forgets, and reads again what it still needs
            cache.clear()
    missing = [tid for tid in trial_ids if tid not in m.trial_experiments]
    m.trial_experiments.update(policy_rows.experiments_of(conn, missing))
    out = {}
    for tid in trial_ids:
        exp_id = m.trial_experiments.get(tid)
        if exp_id is None:
            continue
        compiled = m.log_policy_cache.get(exp_id)
        if compiled is None:
            compiled = m.log_policy_cache[exp_id] = compile_policies(policy_rows.policies_of(conn, exp_id))
        out[tid] = compiled
    return out


def watch(m: Master, conn: Conn, rows: Sequence[Row]) -> int:
    """Match the trial lines of `rows` (task_logs rows, as stored) against their experiments' policies, in the
    caller's transaction; record each run's first line per policy. How many new matches."""
    trial_ids = {r[0] for r in rows if r[0] is not None and r[1] is not None}
    if not trial_ids:
        return 0
    by_trial = _policies_of_trials(m, conn, trial_ids)
    if not any(by_trial.values()):
        return 0
    agents: dict[str, str | None] = {}
    new = 0
    for trial_id, allocation_id, agent_id, _rank, _ts, _level, _std, _source, text in rows:
        policies = by_trial.get(trial_id) if trial_id is not None else None
        if not policies or trial_id is None or allocation_id is None:
            continue
        for policy in matches(policies, text):
            if agent_id is None and allocation_id not in agents:
                agents.update(policy_rows.agents_of(conn, [allocation_id]))
            new += _record(conn, trial_id, allocation_id, agent_id or agents.get(allocation_id), policy, text)
    return new


def _record(conn: Conn, trial_id: int, allocation_id: str, agent_id: str | None, policy: CompiledPolicy,
            text: str) -> int:
    stored = policy_rows.record(conn, {
        "trial_id": trial_id, "allocation_id": allocation_id, "agent_id": agent_id, "policy_name": policy.name,
        "pattern": policy.pattern, "action": policy.action, "log": text[:MAX_STORED_LINE], "matched_at": now()})
    if stored and policy.name:
        policy_rows.set_matched(conn, trial_id, policy.name)
    if stored and policy.action == "exclude_node" and agent_id:
        which = f"log policy {policy.name!r}" if policy.name else "a log policy"
        note = (f"a line matched {which} (pattern {policy.pattern!r}, action exclude_node): the trial's later runs "
                f"are not placed on agent {agent_id}")
        log_store.insert(conn, COLUMNS, log_rows([{"trial_id": trial_id, "allocation_id": allocation_id,
                                                   "log": note, "level": "WARNING", "source": "master"}], now()))
    return int(stored)


def cancel_retries_reason(conn: Conn, trial_id: int) -> str | None:
    """Why a failed run of the trial must not be restarted (its logs matched a `cancel_retries` policy), or None."""
    found = policy_rows.cancel_retries(conn, trial_id)
    if not found:
        return None
    first = found[0]
    which = f"log policy {first['policy_name']!r}" if first["policy_name"] else "a log policy"
    return (f"its log matched {which} (pattern {first['pattern']!r}, action cancel_retries: "
            f"{first['log'].strip()[:300]!r}), so it is not restarted")
