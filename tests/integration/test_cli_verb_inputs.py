"""The issue-18 verbs on a real master: what they change there, what they refuse before asking it, what they say.

One module-scoped LocalTestCluster (two slots) holds a few tiny experiments of tests/integration/faults/train.py;
the verbs run in-process through click's CliRunner on the `stalwart` group itself (`-m` names the master), so every
request goes to the real master and every check reads the master's state back.
"""

from __future__ import annotations

import json
import pathlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from stalwart.api.errors import ConfigError, InvalidRequest, InvalidStateError, NotFoundError, StalwartError
from stalwart.api.models.experiments import ExperimentDetail
from stalwart.cli.main import cli
from stalwart.client import Client
from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

FAULTS = pathlib.Path(__file__).resolve().parent / "faults"
MAIN = """print("hello from the trial", flush=True)
import runpy
runpy.run_path("train.py", run_name="__main__")
print("the trial is done", flush=True)
"""
"""The faults trial with a line before and after it: each trial logs "hello from the trial" exactly once."""

UNKNOWN_ID = 999_999
"""An experiment id the master has never given out."""


@dataclass
class Master:
    """The module's cluster, a client to read its state back, and a directory for configs and the trial's code."""

    cluster: LocalTestCluster
    client: Client
    work: pathlib.Path

    def stalwart(self, *args: str, stdin: str = "") -> Result:
        """`stalwart -m URL ARGS...`, in-process, as the admin the cluster logged in (its home's auth file)."""
        return CliRunner().invoke(cli, ["-m", self.cluster.url, *args], input=stdin,
                                  env={"STALWART_HOME": str(self.cluster.home)})

    def ok(self, *args: str, stdin: str = "") -> str:
        result = self.stalwart(*args, stdin=stdin)
        assert result.exit_code == 0, f"stalwart {' '.join(args)}: exit {result.exit_code}\n{result.output}" \
                                      f"\n{result.exception!r}"
        return result.output

    def create(self, name: str, *, steps: int = 2, paused: bool = False, step_seconds: float = 0.02,
               **extra: Any) -> int:
        config: dict[str, Any] = {
            "name": name,
            "entrypoint": "python3 main.py",
            "searcher": {"name": "single", "metric": "score", "smaller_is_better": False, "max_length": steps},
            "environment": {"environment_variables": [f"LEDGER={self.work / (name + '.ledger')}",
                                                      f"STEP_SECONDS={step_seconds}", "CHECKPOINT_EVERY=1"]},
            "max_restarts": 0,
            "checkpoint_storage": {"save_trial_latest": 10},  # keep every checkpoint: the tests pick some
            **extra,
        }
        path = self.work / f"{name}.yaml"
        path.write_text(yaml.safe_dump(config))
        flags = ["--paused"] if paused else []
        created = json.loads(self.ok("e", "create", str(path), str(self.work / "context"), "--json", *flags))
        exp_id: int = created["experiment"]["id"]
        return exp_id

    def ended(self, exp_id: int, timeout: float = 120) -> ExperimentDetail:
        deadline = time.monotonic() + timeout
        while True:
            detail = self.client.get_experiment(exp_id)
            if detail.experiment.state.terminal:
                return detail
            assert time.monotonic() < deadline, f"experiment {exp_id} still {detail.experiment.state.value}"
            time.sleep(0.2)


@dataclass(frozen=True)
class Experiments:
    """The module's experiments: `plain` (labels a, b), `bare` (no labels), `doomed` (to delete), `search` (a grid
    of two trials), all COMPLETED; `running`, ACTIVE for the whole module."""

    plain: int
    bare: int
    doomed: int
    search: int
    running: int


def grid(**searcher: Any) -> dict[str, Any]:
    return {"searcher": {"name": "grid", "metric": "score", "smaller_is_better": False, "max_length": 2, **searcher},
            "hyperparameters": {"x": {"type": "categorical", "vals": [1, 2]}}}


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Master]:
    work = tmp_path_factory.mktemp("cli-verbs")
    context = work / "context"
    context.mkdir()
    (context / "train.py").write_text((FAULTS / "train.py").read_text())
    (context / "main.py").write_text(MAIN)
    with LocalTestCluster(work / "home", slots=2) as cluster, cluster.client() as client:
        m = Master(cluster, client, work)
        yield m
        for exp in client.list_experiments(include_archived=True).experiments:
            if not exp.state.terminal:
                client.experiment_action(exp.id, "kill")
        for exp in client.list_experiments(include_archived=True).experiments:
            m.ended(exp.id, timeout=30)


@pytest.fixture(scope="module")
def exps(master: Master) -> Experiments:
    made = Experiments(plain=master.create("plain", labels=["a", "b"]), bare=master.create("bare"),
                       doomed=master.create("doomed"), search=master.create("search", **grid()),
                       running=master.create("running", steps=1000, step_seconds=5.0))
    for exp_id in (made.plain, made.bare, made.doomed, made.search):
        assert master.ended(exp_id).experiment.state.value == "COMPLETED", master.cluster.log("master.log")[-3000:]
    return made


def max_length(config: dict[str, Any]) -> int:
    """The searcher's max_length, as given (a number) or as the master stores it ({"batches": N})."""
    length = config["searcher"]["max_length"]
    return int(length["batches"] if isinstance(length, dict) else length)


def without(config: dict[str, Any], *keys: str) -> dict[str, Any]:
    """The config less `keys` and less the searcher's max_length."""
    rest = {k: v for k, v in config.items() if k not in keys}
    return {**rest, "searcher": {k: v for k, v in config["searcher"].items() if k != "max_length"}}


def error_of(result: Result) -> StalwartError:
    """The StalwartError the verb raised (the `stalwart` entry point prints it on one line, exit `err.exit_code`)."""
    assert isinstance(result.exception, StalwartError), f"{result.output}\n{result.exception!r}"
    return result.exception


def test_set_changes_only_the_key_named(master: Master, exps: Experiments) -> None:
    before = master.client.get_experiment(exps.plain).experiment
    out = master.ok("e", "set", "notes", str(exps.plain), "line one\nline two")
    assert "notes is now 'line one\\nline two'" in out
    after = master.client.get_experiment(exps.plain).experiment
    assert after.notes == "line one\nline two"
    assert after.model_dump(exclude={"notes"}) == before.model_dump(exclude={"notes"})


def test_set_refuses_an_unknown_key_before_asking_the_master(master: Master, exps: Experiments) -> None:
    before = master.client.get_experiment(exps.plain)
    result = master.stalwart("e", "set", "colour", str(exps.plain), "blue")
    assert result.exit_code == 2 and "colour" in result.output
    assert master.client.get_experiment(exps.plain) == before


def test_label_add_appends_once_and_remove_names_a_missing_label(master: Master, exps: Experiments) -> None:
    exp = str(exps.plain)

    def labels() -> list[str]:
        return master.client.get_experiment(exps.plain).experiment.labels

    master.ok("e", "label", "add", exp, "c")
    assert labels() == ["a", "b", "c"]
    assert "already has label 'c'" in master.ok("e", "label", "add", exp, "c")
    assert labels() == ["a", "b", "c"]
    master.ok("e", "label", "rm", exp, "a")
    assert labels() == ["b", "c"]
    err = error_of(master.stalwart("e", "label", "remove", exp, "zzz"))
    assert isinstance(err, NotFoundError) and err.exit_code == 3
    assert err.message == f"experiment {exp} has no label 'zzz' (its labels are 'b', 'c')"
    assert labels() == ["b", "c"]


def test_removing_a_label_from_an_unlabelled_experiment_says_so(master: Master, exps: Experiments) -> None:
    err = error_of(master.stalwart("e", "label", "remove", str(exps.bare), "x"))
    assert isinstance(err, NotFoundError) and "it has no labels" in err.message


def test_delete_asks_and_a_no_keeps_the_experiment(master: Master, exps: Experiments) -> None:
    assert f"Kept experiment {exps.doomed}" in master.ok("e", "delete", str(exps.doomed), stdin="n\n")
    assert master.client.get_experiment(exps.doomed).experiment.state.value == "COMPLETED"
    assert f"Deleted experiment {exps.doomed}" in master.ok("e", "delete", str(exps.doomed), stdin="y\n")
    with pytest.raises(NotFoundError):
        master.client.get_experiment(exps.doomed)


def test_delete_of_an_unknown_or_active_experiment_is_refused_with_its_exit_code(master: Master,
                                                                                  exps: Experiments) -> None:
    err = error_of(master.stalwart("e", "delete", str(UNKNOWN_ID), "--yes"))
    assert isinstance(err, NotFoundError) and err.exit_code == 3
    err = error_of(master.stalwart("e", "delete", str(exps.running), "--yes"))
    assert isinstance(err, InvalidStateError) and err.exit_code == 4 and "is ACTIVE" in err.message
    assert master.client.get_experiment(exps.running).experiment.state.value == "ACTIVE"


def test_continue_sends_the_overrides_as_a_partial_config(master: Master, exps: Experiments) -> None:
    before = master.client.get_experiment(exps.bare).config
    extra = master.work / "more.yaml"
    extra.write_text("max_restarts: 3\n")
    out = master.ok("e", "continue", str(exps.bare), "--config-file", str(extra), "--config", "searcher.max_length=4")
    assert f"Continued experiment {exps.bare}; it is now ACTIVE." in out
    detail = master.ended(exps.bare)
    assert detail.experiment.state.value == "COMPLETED"
    assert detail.config["max_restarts"] == 3 and max_length(detail.config) == 4
    assert without(detail.config, "max_restarts") == without(before, "max_restarts")  # the rest is as it was
    assert [t.steps_completed for t in detail.trials] == [4]


def test_continue_refuses_an_invalid_override_before_asking_the_master(master: Master, exps: Experiments) -> None:
    before = master.client.get_experiment(exps.plain)
    err = error_of(master.stalwart("e", "continue", str(exps.plain), "--config", "searcher.max_length"))
    assert isinstance(err, ConfigError) and err.exit_code == 2 and "KEY=VALUE" in err.full_message()
    after = master.client.get_experiment(exps.plain)
    assert (after.experiment.state, after.config, after.trials) == (before.experiment.state, before.config,
                                                                    before.trials)


def test_fork_merges_the_file_and_overrides_over_the_old_config_and_reuses_the_code(master: Master,
                                                                                     exps: Experiments) -> None:
    patch = master.work / "patch.yaml"
    patch.write_text("name: forked\nsearcher: {max_length: 3}\n")
    out = master.ok("e", "fork", str(exps.plain), str(patch), "--config", "labels=x,y", "--paused")
    fork_id = int(out.split("Forked experiment ")[1].split()[0])
    assert f"Forked experiment {fork_id} (forked) from experiment {exps.plain}, state PAUSED" in out
    old, new = master.client.get_experiment(exps.plain), master.client.get_experiment(fork_id)
    assert new.experiment.state.value == "PAUSED" and new.experiment.labels == ["x", "y"]
    assert new.config["name"] == "forked" and new.config["labels"] == ["x", "y"]
    assert max_length(new.config) == 3
    assert without(new.config, "name", "labels") == without(old.config, "name", "labels")  # the rest: the old one's
    assert master.client.experiment_model_def(fork_id) == master.client.experiment_model_def(exps.plain)


@pytest.mark.parametrize(("args", "error"), [
    (["--config", "nokey"], ConfigError),
    (["--config", "searcher.max_length.x=1"], ConfigError),  # max_length is a number, not a mapping
    (["/no/such/file.yaml"], InvalidRequest),
    (["--follow", "--paused"], InvalidRequest),
])
def test_fork_refuses_bad_input_and_creates_nothing(master: Master, exps: Experiments, args: list[str],
                                                    error: type[StalwartError]) -> None:
    before = master.client.list_experiments(include_archived=True).total
    assert isinstance(error_of(master.stalwart("e", "fork", str(exps.plain), *args)), error)
    assert master.client.list_experiments(include_archived=True).total == before


def test_fork_of_an_unknown_experiment_is_not_found_and_creates_nothing(master: Master, exps: Experiments) -> None:
    before = master.client.list_experiments(include_archived=True).total
    err = error_of(master.stalwart("e", "fork", str(UNKNOWN_ID)))
    assert isinstance(err, NotFoundError) and err.exit_code == 3
    assert master.client.list_experiments(include_archived=True).total == before


def test_checkpoint_delete_asks_unless_yes_and_counts_each_uuid_once(master: Master, exps: Experiments) -> None:
    first, second = (c.uuid for c in master.client.experiment_checkpoints(exps.plain).checkpoints[:2])

    def states() -> list[str]:
        return [master.client.get_checkpoint(u).checkpoint.state for u in (first, second)]

    out = master.ok("c", "delete", f"{first},{second}", first, stdin="n\n")
    assert "Delete the files of 2 checkpoint(s)" in out and "Deleted nothing" in out
    assert states() == ["COMPLETED", "COMPLETED"]
    out = master.ok("c", "delete", f"{first},{second}", f" {second} ", f"{first},,", "--yes")
    assert out.splitlines() == [f"Deleted checkpoint {first}", f"Deleted checkpoint {second}"]
    assert states() == ["DELETED", "DELETED"]
    assert isinstance(error_of(master.stalwart("c", "delete", ",", "--yes")), InvalidRequest)


def test_experiment_logs_follow_every_trial_the_search_creates_until_it_ends(master: Master,
                                                                              exps: Experiments) -> None:
    exp_id = master.create("growing", **grid(max_concurrent_trials=1))
    assert len(master.client.get_experiment(exp_id).trials) <= 1  # the second trial comes once the first ends
    out = master.ok("e", "logs", str(exp_id), "-f", "--grep", "hello")
    detail = master.client.get_experiment(exp_id)
    assert detail.experiment.state.value == "COMPLETED" and len(detail.trials) == 2
    trial_ids = sorted(t.id for t in detail.trials)
    assert [line.split("] ", 1)[0] + "]" for line in out.splitlines()] == [f"[trial {t}]" for t in trial_ids]
    assert all(line.endswith("hello from the trial") for line in out.splitlines())


def test_experiment_logs_without_follow_read_each_trial_once(master: Master, exps: Experiments) -> None:
    trial_ids = sorted(t.id for t in master.client.get_experiment(exps.search).trials)
    assert len(trial_ids) == 2
    lines = master.ok("e", "logs", str(exps.search), "--tail", "2").splitlines()
    expected = [f"[trial {t}] {line}" for t in trial_ids for line in master.ok("t", "logs", str(t)).splitlines()[-2:]]
    assert lines == expected
    err = error_of(master.stalwart("e", "logs", str(exps.search), "-f", "--head", "3"))
    assert isinstance(err, InvalidRequest) and err.exit_code == 2
