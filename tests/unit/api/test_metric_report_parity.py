"""The metrics hot path validates bodies itself (metric_reports.parse_reports); it accepts exactly what the
documented request model (api.models.trials.ReportMetrics) accepts."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from pydantic import ValidationError

from stalwart.api.errors import InvalidRequest
from stalwart.api.models.trials import MAX_DEPTH, MAX_NAME, MAX_VALUES, ReportMetrics
from stalwart.master.experiments.metric_reports import parse_reports


def _validator_accepts(body: dict[str, Any]) -> bool:
    try:
        parse_reports(1, body)
    except InvalidRequest:
        return False
    return True


def _model_accepts(body: dict[str, Any]) -> bool:
    try:
        ReportMetrics.model_validate(body)
    except ValidationError:
        return False
    return True


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def _report(**fields: Any) -> dict[str, Any]:
    report: dict[str, Any] = {"group": "training", "steps_completed": 1, "metrics": {"loss": 0.5}}
    report.update(fields)
    return report


CASES = [
    {"reports": []},
    {"reports": [_report()]},
    {},
    {"reports": None},
    {"reports": {"a": 1}},
    {"reports": [1]},
    {"reports": [_report(group="")]},
    {"reports": [_report(group="g" * 64)]},
    {"reports": [_report(group="g" * 65)]},
    {"reports": [_report(group=5)]},
    {"reports": [_report(steps_completed=2**63 - 1)]},
    {"reports": [_report(steps_completed=2**63)]},
    {"reports": [_report(steps_completed=-1)]},
    {"reports": [_report(steps_completed=True)]},
    {"reports": [_report(steps_completed=3.0)]},
    {"reports": [_report(steps_completed="3")]},
    {"reports": [_report(steps_completed=None)]},
    {"reports": [{"group": "g", "metrics": {}}]},
    {"reports": [_report(trial_run_id=None)]},
    {"reports": [_report(trial_run_id=2**31 - 1)]},
    {"reports": [_report(trial_run_id=2**31)]},
    {"reports": [_report(trial_run_id=False)]},
    {"reports": [_report(report_time=None)]},
    {"reports": [_report(report_time=1.7e9)]},
    {"reports": [_report(report_time=0)]},
    {"reports": [_report(report_time=-1.0)]},
    {"reports": [_report(report_time=math.inf)]},
    {"reports": [_report(report_time=math.nan)]},
    {"reports": [_report(report_time="1.7e9")]},
    {"reports": [_report(report_time=True)]},
    {"reports": [_report(report_time=10**400)]},
    {"reports": [_report(metrics=None)]},
    {"reports": [_report(metrics=[1])]},
    {"reports": [_report(metrics={})]},
    {"reports": [_report(metrics={"x" * MAX_NAME: 1})]},
    {"reports": [_report(metrics={"x" * (MAX_NAME + 1): 1})]},
    {"reports": [_report(metrics={"a": math.nan, "b": -math.inf, "c": "NaN", "d": None, "e": True, "f": "text"})]},
    {"reports": [_report(metrics={"a": _nested(MAX_DEPTH)})]},
    {"reports": [_report(metrics={"a": _nested(MAX_DEPTH + 1)})]},
    {"reports": [_report(metrics={"a": {"k" * MAX_NAME: 1}})]},
    {"reports": [_report(metrics={"a": {"k" * (MAX_NAME + 1): 1}})]},
    {"reports": [_report(metrics={"a": list(range(MAX_VALUES - 1))})]},
    {"reports": [_report(metrics={"a": list(range(MAX_VALUES))})]},
    {"reports": [_report(metrics={f"m{i}": 1 for i in range(10_001)})]},
    {"reports": [_report(extra_field="ignored")], "other": 1},
]


@pytest.mark.parametrize("body", CASES, ids=[json.dumps(c)[:60] for c in CASES])
def test_the_fast_validator_and_the_model_accept_the_same_bodies(body: dict[str, Any]) -> None:
    assert _validator_accepts(body) == _model_accepts(body)


_JSON_LEAF = st.one_of(st.none(), st.booleans(), st.integers(-(2**64), 2**64), st.floats(), st.text(max_size=5))
_ANY_JSON = st.recursive(_JSON_LEAF, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                              st.dictionaries(st.text(max_size=3), inner, max_size=3)),
                         max_leaves=12)
_REPORT = st.fixed_dictionaries({}, optional={
    "group": st.one_of(st.text(max_size=70), _JSON_LEAF),
    "steps_completed": st.one_of(st.integers(-2, 2**64), _JSON_LEAF),
    "trial_run_id": st.one_of(st.integers(-2, 2**32), _JSON_LEAF),
    "report_time": st.one_of(st.floats(), st.integers(-2, 2**70), _JSON_LEAF),
    "metrics": st.one_of(st.dictionaries(st.text(max_size=3), _ANY_JSON, max_size=4), _JSON_LEAF),
})


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.fixed_dictionaries({"reports": st.lists(_REPORT, max_size=3)}),
                 st.dictionaries(st.sampled_from(["reports", "x"]), _ANY_JSON, max_size=2)))
def test_random_bodies_get_the_same_answer_from_both(body: dict[str, Any]) -> None:
    assert _validator_accepts(body) == _model_accepts(body), body
