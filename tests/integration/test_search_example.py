"""examples/digits/search.yaml does what `stalwart preview-search` says it will (issue 26, acceptance 6)."""

from __future__ import annotations

import json

import pytest

from integration.helpers import DIGITS, metrics, wait_state
from stalwart.testing import LocalTestCluster

# A whole search: four trial processes one after another on one slot (about a minute on an idle machine).
pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

SEARCH = DIGITS / "search.yaml"
SMALLER = ("--config", "searcher.max_trials=4")


def _preview(c: LocalTestCluster, *overrides: str) -> dict:
    res = c.cli("preview-search", str(SEARCH), *overrides, "--json", check=True)
    return json.loads(res.stdout)


def _trained(c: LocalTestCluster, trial_id: int) -> int:
    """How far a trial trained as its searcher saw it: the steps of its last validation."""
    return max((m["steps_completed"] for m in metrics(c, trial_id, "validation")), default=0)


def test_a_real_run_of_the_search_example_agrees_with_its_preview(tmp_path):
    """Run examples/digits/search.yaml on one slot, as its comment says, and compare each trial's length with the
    preview's table.

    The run is shrunk to fit the suite: `--config searcher.max_trials=4` halves its trials and keeps its rung
    structure (one bracket, rungs at 50 and 200 batches, a validation every 50), on both the preview and the run.
    The preview draws its metric at random, so it cannot say which trials ASHA keeps, only how many train to
    each length: the test compares the run's lengths, trial by trial in sorted order, with the preview's rows.
    With the example's seed the real accuracies keep as many trials as the preview's draw does (the full
    example: 6 stop at 50, 2 train to 200). A trial's length is its last validation's steps (a stopped trial
    may train a few batches more before it sees the stop)."""
    with LocalTestCluster(tmp_path / "home", slots=1) as c:
        shown = _preview(c, *SMALLER)
        assert shown["warnings"] == [], shown["warnings"]  # every rung falls on a validation
        expected = sorted(length for n, length in shown["preview"]["rows"] for _ in range(n))
        assert expected == [50, 50, 200, 200], shown["text"]

        res = c.cli("e", "create", str(SEARCH), str(DIGITS), *SMALLER, "--json", check=True)
        exp_id = json.loads(res.stdout)["experiment"]["id"]
        d = wait_state(c, exp_id, {"COMPLETED", "ERROR", "CANCELED"}, timeout=540)
        assert d["experiment"]["state"] == "COMPLETED", d["experiment"].get("error_message")
        trials = sorted(d["trials"], key=lambda t: t["id"])
        assert {t["state"] for t in trials} == {"COMPLETED"}
        lengths = {t["id"]: _trained(c, t["id"]) for t in trials}
        assert sorted(lengths.values()) == expected, lengths
        assert all(t["steps_completed"] < lengths[t["id"]] + 50 for t in trials), trials

        # the unshrunk example previews as its comment says; validating every 100 batches, as it did, is warned
        assert _preview(c)["preview"]["rows"] == [[6, 50], [2, 200]]
        misaligned = c.cli("preview-search", str(SEARCH), "--config", "min_validation_period.batches=100",
                           check=True)
        assert ("warning: rung at 50 batches falls between validations (every 100 batches): trials will be judged "
                "at 100 batches instead; set min_validation_period to 50 batches") in misaligned.stderr, misaligned
        assert "Trials validate every 100 batches" in misaligned.stdout
