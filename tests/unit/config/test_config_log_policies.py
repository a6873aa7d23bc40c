"""Log policies in experiment and master configs (Determined 0.38.1, with 0.37's forms normalised), and the
master's `retention_policy`."""

from __future__ import annotations

import pytest

from stalwart.api.errors import ConfigError
from stalwart.config import load_experiment_config
from stalwart.config.master import RetentionConfig, parse_master_config

MINIMAL = {"entrypoint": "python3 train.py", "searcher": {"name": "single", "metric": "loss",
                                                          "max_length": {"batches": 1}},
           "checkpoint_storage": {"type": "shared_fs", "host_path": "/tmp"}}


def _policies(policies, master=None):
    cfg = load_experiment_config({**MINIMAL, "log_policies": policies},
                                 master_defaults={"log_policies": master} if master else None)
    return cfg.config["log_policies"]


def _problems(policies) -> list[str]:
    with pytest.raises(ConfigError) as err:
        load_experiment_config({**MINIMAL, "log_policies": policies})
    return err.value.details


def test_the_037_form_is_normalised_to_the_038_form():
    assert _policies([{"pattern": "bad gpu", "action": {"type": "exclude_node"}}])[-1] == {
        "name": None, "pattern": "bad gpu", "action": "exclude_node"}


def test_a_bad_regular_expression_is_refused_naming_the_policy():
    assert _problems([{"name": "Broken", "pattern": "oops(", "action": "cancel_retries"}]) == [
        "log_policies[0].pattern: log policy 'Broken': 'oops(' is not a valid regular expression (missing ): "
        "oops()"]


def test_a_policy_needs_a_name_or_a_pattern_and_an_action_and_names_are_unique():
    assert _problems([{"pattern": "x"}]) == [
        "log_policies[0]: a log policy needs a name, or (the 0.37 form) both a pattern and an action"]
    assert _problems([{"name": "A", "pattern": "x"}, {"name": "A", "pattern": "y"}]) == [
        "log_policies: two log policies are named 'A'; a name may be used once"]


def test_the_masters_policies_merge_under_the_experiments_by_name_and_over_the_built_in_ones():
    master = [{"name": "CUDA OOM", "pattern": "OOM", "action": "cancel_retries"},
              {"name": "Flaky", "pattern": "flaky", "action": "exclude_node"}]
    merged = _policies([{"name": "Flaky", "pattern": None}], master)
    by_name = {p["name"]: p for p in merged}
    assert by_name["CUDA OOM"]["action"] == "cancel_retries"  # the master's wins over the built-in label
    assert by_name["Flaky"]["pattern"] is None  # the experiment's disables the master's
    assert set(by_name) == {"CUDA OOM", "ECC Error", "Flaky"}


def test_master_config_log_policies_and_retention_policy():
    cfg = parse_master_config({"task_container_defaults": {"log_policies": [
        {"name": "Bad", "pattern": "bad", "action": {"type": "cancel_retries"}}]},
        "retention_policy": {"log_retention_days": 30, "schedule": "10m"}})
    assert cfg.task_container_defaults["log_policies"] == [
        {"name": "Bad", "pattern": "bad", "action": "cancel_retries"}]
    assert cfg.retention == RetentionConfig(log_retention_days=30, schedule_s=600.0)
    assert parse_master_config({}).retention == RetentionConfig(-1, 86400.0)
    with pytest.raises(ConfigError, match=r"retention_policy.schedule: expected a duration greater than zero"):
        parse_master_config({"retention_policy": {"schedule": "0 0 * * *"}})
    with pytest.raises(ConfigError, match=r"task_container_defaults.log_policies\[0\].pattern: log policy 'X'"):
        parse_master_config({"task_container_defaults": {"log_policies": [{"name": "X", "pattern": "["}]}})


def test_a_pools_log_policies_merge_over_the_clusters_by_name():
    cfg = parse_master_config({
        "task_container_defaults": {"log_policies": [{"name": "A", "pattern": "a"}, {"name": "B", "pattern": "b"}]},
        "resource_pools": [{"pool_name": "gpu", "task_container_defaults": {
            "log_policies": [{"name": "A", "pattern": "x", "action": "exclude_node"}]}}]})
    assert [(p["name"], p["pattern"]) for p in cfg.container_defaults_section("gpu")["log_policies"]] == [
        ("A", "x"), ("B", "b")]



def test_a_pattern_re2_cannot_compile_is_refused_naming_the_policy():
    """RE2 (Go's regexp, Determined's engine) has no lookahead: refused at validation, not at the first log line."""
    [problem] = _problems([{"name": "ahead", "pattern": "(?=oom)", "action": "cancel_retries"}])
    assert problem.startswith("log_policies[0].pattern: log policy 'ahead': '(?=oom)' is not a valid regular "
                              "expression (invalid perl operator")
