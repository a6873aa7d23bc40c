"""Issue 16, "the first hour": the CLI as a new user meets it, on a real local cluster (master + one 2-slot agent)."""

from __future__ import annotations

import json
import pathlib

import pytest

from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

REPO = pathlib.Path(__file__).resolve().parents[2]
DIGITS = REPO / "examples" / "digits"


@pytest.fixture(scope="module")
def cluster2(tmp_path_factory):
    """A master and one agent with 2 slots (the distributed example needs both), shared by this module's tests."""
    with LocalTestCluster(tmp_path_factory.mktemp("first-hour") / "home", slots=2) as c:
        yield c


def test_cmd_run_exits_with_the_commands_code_and_finished_commands_stay_listed(cluster2):
    c = cluster2
    res = c.cli("cmd", "run", "sh", "-c", "echo about to fail; exit 3")
    assert res.returncode == 3, res.stdout + res.stderr
    assert "about to fail" in res.stdout and "ERROR (exit code 3)" in res.stdout
    failed = res.stdout.split("Launched command ")[1].split()[0]
    res = c.cli("cmd", "run", "sh", "-c", "no-such-program-here")
    assert res.returncode == 127, res.stdout + res.stderr
    missing = res.stdout.split("Launched command ")[1].split()[0]
    res = c.cli("cmd", "run", "true")
    assert res.returncode == 0, res.stdout + res.stderr

    listing = c.cli("cmd", "list", check=True).stdout
    rows = {line.split("│")[1].strip(): line for line in listing.splitlines() if line.count("│") > 5}
    assert "ERROR" in rows[failed] and "│ 3 " in rows[failed], listing
    assert "ERROR" in rows[missing] and "│ 127 " in rows[missing], listing
    assert "Exit code" in listing
    assert c.cli("cmd", "list", "--active", check=True).stdout.count("ERROR") == 0


def test_a_trial_bigger_than_any_agent_is_accepted_with_a_warning(cluster2):
    c = cluster2
    res = c.cli("e", "create", str(DIGITS / "const.yaml"), str(DIGITS), "--config", "resources.slots_per_trial=64",
                "--config", "name=too-big")
    assert res.returncode == 0, res.stdout + res.stderr
    expected = ("resources.slots_per_trial: 64 slots asked, but the largest agent in pool 'default' has 2 "
                "(the pool has 2 in all); the trials will wait until agents that fit join")
    assert expected in " ".join((res.stdout + res.stderr).split()), res.stdout + res.stderr
    exp_id = res.stdout.split("Created experiment ")[1].split()[0]
    described = c.cli("e", "describe", exp_id, check=True).stdout
    assert "Warning" in described and "64 slots asked" in described and "largest agent in pool 'default' has 2" in \
        " ".join(described.replace("│", " ").split())
    assert c.client().get(f"/experiments/{exp_id}")["experiment"]["warnings"] == [expected]
    c.cli("e", "kill", exp_id, check=True)
    c.wait_for(lambda: c.client().get(f"/experiments/{exp_id}")["experiment"]["state"] == "CANCELED",
               what="the experiment to end")
    assert "64 slots asked" not in c.cli("e", "describe", exp_id, check=True).stdout  # over: nothing to wait for

    fits = c.cli("e", "create", str(DIGITS / "const.yaml"), str(DIGITS), "--paused", check=True)
    assert "slots asked" not in fits.stdout + fits.stderr


def test_the_search_example_runs_to_completed(cluster2):
    """examples/digits/search.yaml, the README's next step after the first experiment: 8 trials, ASHA stops most."""
    c = cluster2
    preview = c.cli("preview-search", str(DIGITS / "search.yaml"), check=True).stdout
    assert "create a total of 8 trial(s)" in preview, preview
    res = c.cli("e", "create", str(DIGITS / "search.yaml"), str(DIGITS), "--json", check=True)
    exp_id = json.loads(res.stdout)["experiment"]["id"]
    res = c.cli("e", "wait", str(exp_id), "--polling-interval", "0.5", timeout=600)
    assert res.returncode == 0 and "COMPLETED" in res.stdout, res.stdout + res.stderr
    d = c.client().get(f"/experiments/{exp_id}")
    assert len(d["trials"]) == 8 and {t["state"] for t in d["trials"]} == {"COMPLETED"}
    lengths = sorted(t["steps_completed"] for t in d["trials"])
    assert lengths[-1] == 200 and lengths[0] < 200  # ASHA stopped the weak ones early
    assert d["experiment"]["best_validation"]["value"] > 0.8


def test_readme_says_where_the_stalwart_command_is_and_its_examples_exist():
    text = (REPO / "README.md").read_text()
    using = text.split("## Using it", 1)[1].split("\n## ", 1)[0]
    assert "source .venv/bin/activate" in using and ".venv/bin/stalwart" in using
    assert "examples/digits/search.yaml" in using
    for word in using.split():
        path = word.strip("`.,:;()")
        if path.startswith("examples/"):
            assert (REPO / path).exists(), path


def test_determined_style_trials_log_their_progress(cluster2):
    """A Trainer script, a legacy Trial class and a 2-worker distributed trial each log what the harness does:
    batches trained, validations, checkpoints (they logged 0-2 lines: the trial page said "No log lines yet")."""
    c = cluster2
    examples = REPO / "examples"
    runs = {"trainer script": examples / "determined" / "trainer_script",
            "legacy trial": examples / "determined" / "legacy_trial",
            "distributed": examples / "distributed"}
    configs = {"trainer script": "const.yaml", "legacy trial": "const.yaml", "distributed": "distributed.yaml"}
    exp_ids = {name: json.loads(c.cli("e", "create", str(ctx / configs[name]), str(ctx), "--json",
                                      check=True).stdout)["experiment"]["id"] for name, ctx in runs.items()}
    for name, exp_id in exp_ids.items():
        res = c.cli("e", "wait", str(exp_id), "--polling-interval", "0.5", timeout=600)
        assert res.returncode == 0, f"{name}: {res.stdout}{res.stderr}"
        trial_id = c.client().get(f"/experiments/{exp_id}")["trials"][0]["id"]
        logs = c.cli("trial", "logs", str(trial_id), check=True).stdout
        lines = [line for line in logs.splitlines() if "stalwart.pytorch:" in line]
        assert all("INFO: [" in line for line in lines), logs  # Determined's LOG_FORMAT: level, [pid], logger
        assert any("training for " in line and "starting at batch 0" in line for line in lines), f"{name}:\n{logs}"
        assert sum("trained " in line and "batches/s" in line and "loss=" in line for line in lines) >= 3, \
            f"{name}:\n{logs}"
        assert any("validation after batch" in line and "validation_loss=" in line for line in lines), \
            f"{name}:\n{logs}"
        assert any("checkpoint " in line and " saved after batch" in line for line in lines), f"{name}:\n{logs}"
        assert any("training complete after batch" in line for line in lines), f"{name}:\n{logs}"
        if name == "distributed":
            assert all("[rank=0]" in line for line in lines if "trained " in line), logs  # the chief speaks
