"""Matching log lines against compiled log policies (master/log_policies.py): a search anywhere in the line, as Go's
MatchString; a line printing a config's `"log_policies":` never matches; a null pattern is no policy."""

from __future__ import annotations

from stalwart.master.log_policies import compile_policies, matches

POLICIES = compile_policies([
    {"name": "CUDA OOM", "pattern": ".*CUDA out of memory.*", "action": None},
    {"name": "Bad GPU", "pattern": r"ECC error on GPU \d+", "action": "exclude_node"},
    {"name": "Disabled", "pattern": None, "action": "cancel_retries"},
    {"name": None, "pattern": "^FATAL", "action": "cancel_retries"},
])


def test_a_null_pattern_is_no_policy_and_the_others_keep_their_order():
    assert [p.name for p in POLICIES] == ["CUDA OOM", "Bad GPU", None]


def test_lines_match_by_search_and_the_config_printout_never_matches():
    assert [p.name for p in matches(POLICIES, "RuntimeError: CUDA out of memory. Tried 2 GiB")] == ["CUDA OOM"]
    assert [p.action for p in matches(POLICIES, "nvml: ECC error on GPU 3 (uncorrectable)")] == ["exclude_node"]
    assert [p.action for p in matches(POLICIES, "FATAL: no data")] == ["cancel_retries"]
    assert matches(POLICIES, "not FATAL at the start") == []
    assert matches(POLICIES, '{"log_policies": [{"pattern": "ECC error on GPU 1"}]}') == []
    assert matches(POLICIES, "") == []


def test_patterns_are_re2_so_a_backtracking_one_cannot_stall_the_log_intake():
    """`(a+)+$` backtracks exponentially in Python's re on a line of a's ending otherwise; RE2, Determined's engine
    (Go's regexp), answers in linear time. A lookahead, which RE2 lacks, is refused at config validation."""
    [policy] = compile_policies([{"name": "slow", "pattern": "(a+)+$", "action": "cancel_retries"}])
    assert matches([policy], "a" * 50_000 + "!") == []
    assert matches([policy], "aaaa") == [policy]
    assert compile_policies([{"name": "ahead", "pattern": "(?=x)", "action": "cancel_retries"}]) == ()
