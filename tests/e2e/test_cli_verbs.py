"""The CLI verbs of issue 18 on a real cluster: continue, fork, delete, set, label, archive, logs with filters,
downloads, config, describe --metrics, list filters, checkpoint delete, --csv; each with its bad-input errors."""

from __future__ import annotations

import csv
import io
import json
import pathlib
import subprocess
import sys
import tarfile
import time

import pytest
import yaml

from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

FAULTS = pathlib.Path(__file__).resolve().parents[1] / "integration" / "faults"
"""A tiny trial: a step every STEP_SECONDS, a checkpoint every CHECKPOINT_EVERY steps, a ledger line per step."""
MAIN = """print("hello from the trial", flush=True)
print("WARNING: a line at level warning", flush=True)
import runpy
runpy.run_path("train.py", run_name="__main__")
print("the trial is done", flush=True)
"""
"""The faults trial, with a few log lines around it (one of them a WARNING)."""


@pytest.fixture
def context(tmp_path) -> pathlib.Path:
    path = tmp_path / "context"
    path.mkdir()
    (path / "train.py").write_text((FAULTS / "train.py").read_text())
    (path / "main.py").write_text(MAIN)
    return path


def run(c: LocalTestCluster, *args: str, stdin: str | None = None, cwd: pathlib.Path | None = None,
        timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stalwart.cli.main", *args], env=c.env, capture_output=True,
                          text=True, timeout=timeout, input=stdin if stdin is not None else "", cwd=cwd)


def ok(c: LocalTestCluster, *args: str, **kw) -> str:
    res = run(c, *args, **kw)
    assert res.returncode == 0, f"stalwart {' '.join(args)} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}"
    return res.stdout


def fails(c: LocalTestCluster, code: int, *args: str, **kw) -> str:
    """Runs a command that must fail with exit `code`: one clear line on stderr, no traceback; returns stderr."""
    res = run(c, *args, **kw)
    assert res.returncode == code, f"stalwart {' '.join(args)}: exit {res.returncode}, not {code}:\n{res.stdout}\n" \
                                   f"{res.stderr}"
    assert "Traceback" not in res.stderr and res.stderr.strip(), res.stderr
    return res.stderr


def tiny_config(tmp_path: pathlib.Path, name: str, steps: int = 6, ledger: str = "ledger", **extra) -> pathlib.Path:
    cfg = {
        "name": name,
        "entrypoint": "python3 main.py",
        "searcher": {"name": "single", "metric": "score", "smaller_is_better": False, "max_length": steps},
        "environment": {"environment_variables": [f"LEDGER={tmp_path / ledger}", "STEP_SECONDS=0.02",
                                                  "CHECKPOINT_EVERY=3"]},
        "max_restarts": 0,
        "checkpoint_storage": {"save_trial_latest": 10},  # keep every checkpoint: the tests pick some
        **extra,
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def create(c: LocalTestCluster, config: pathlib.Path, *flags: str) -> int:
    out = json.loads(ok(c, "e", "create", str(config), str(config.parent / "context"), "--json", *flags))
    return out["experiment"]["id"]


def completed(c: LocalTestCluster, exp_id: int) -> dict:
    ok(c, "e", "wait", str(exp_id), "--polling-interval", "0.2")
    return json.loads(ok(c, "e", "describe", str(exp_id), "--json"))


def steps_in_ledger(tmp_path: pathlib.Path, ledger: str, trial_id: int) -> list[int]:
    lines = (tmp_path / ledger).read_text().splitlines()
    return [int(line.split()[2]) for line in lines if line.startswith(f"metric {trial_id} ")]


def checkpoint_dir(c: LocalTestCluster, uuid: str) -> pathlib.Path:
    storage = json.loads(ok(c, "c", "describe", uuid, "--json"))["storage"]
    base = pathlib.Path(storage["host_path"])
    return (base / storage["storage_path"] if storage.get("storage_path") else base) / uuid


@pytest.mark.usefixtures("context")
def test_continue_resumes_a_single_trial_experiment_and_refuses_a_search(tmp_path):
    with LocalTestCluster(tmp_path / "home") as c:
        exp_id = create(c, tiny_config(tmp_path, "short", steps=6))
        trial_id = completed(c, exp_id)["trials"][0]["id"]
        assert steps_in_ledger(tmp_path, "ledger", trial_id) == list(range(1, 7))

        out = ok(c, "e", "continue", str(exp_id), "--config", "searcher.max_length=12", "-f")
        assert f"Continued experiment {exp_id}" in out and f"Experiment {exp_id} ended COMPLETED" in out, out
        d = json.loads(ok(c, "e", "describe", str(exp_id), "--json"))
        assert [t["id"] for t in d["trials"]] == [trial_id]  # the same trial, trained on
        assert d["trials"][0]["steps_completed"] == 12
        assert steps_in_ledger(tmp_path, "ledger", trial_id) == list(range(1, 13))  # from step 7: none twice
        described = json.loads(ok(c, "t", "describe", str(trial_id), "--metrics", "--json"))
        assert [p["steps_completed"] for p in described["metrics"] if p["group"] == "training"] == list(range(1, 13))
        assert len(described["runs"]) == 2

        fails(c, 2, "e", "continue", str(exp_id), "--config", "searcher.max_length")  # no value
        fails(c, 3, "e", "continue", "999")
        paused_id = create(c, tiny_config(tmp_path, "paused", ledger="paused-ledger"), "--paused")
        assert f"experiment {paused_id} is PAUSED" in fails(c, 4, "e", "continue", str(paused_id))

        grid = tiny_config(tmp_path, "grid", steps=3, ledger="grid-ledger",
                           searcher={"name": "grid", "metric": "score", "smaller_is_better": False, "max_length": 3},
                           hyperparameters={"x": {"type": "categorical", "vals": [1, 2]}})
        grid_id = create(c, grid)
        assert len(completed(c, grid_id)["trials"]) == 2
        err = fails(c, 4, "e", "continue", str(grid_id), "--config", "searcher.max_length=6")
        assert "2 trials" in err and "single-trial" in err


@pytest.mark.timeout(600)  # a hang guard: 120-130 s alone, more on a loaded 2-core host
@pytest.mark.usefixtures("context")
def test_delete_set_label_archive_and_fork(tmp_path):
    with LocalTestCluster(tmp_path / "home") as c:
        exp_id = create(c, tiny_config(tmp_path, "first", steps=6, labels=["keep"]))
        d = completed(c, exp_id)
        trial_id = d["trials"][0]["id"]

        paused_id = create(c, tiny_config(tmp_path, "paused"), "--paused")
        _delete_is_refused_before_the_end(c, paused_id)
        _set_changes_what_it_names(c, exp_id, paused_id)
        _labels_add_and_remove(c, exp_id)
        _archive_hides_from_the_list(c, exp_id, paused_id)
        fork_id = _fork_takes_the_old_config_with_overrides(c, exp_id, tmp_path)
        _delete_asks_then_removes_the_files(c, exp_id, trial_id, fork_id)


def _delete_is_refused_before_the_end(c: LocalTestCluster, paused_id: int) -> None:
    # an experiment that is not over cannot be deleted: the master's message, exit 4 (wrong state)
    err = fails(c, 4, "e", "delete", str(paused_id), "--yes")
    assert f"experiment {paused_id} is PAUSED" in err
    fails(c, 3, "e", "delete", "999", "--yes")


def _set_changes_what_it_names(c: LocalTestCluster, exp_id: int, paused_id: int) -> None:
    # set name, description, notes; and the job keys still work through the same verb
    ok(c, "e", "set", "name", str(exp_id), "renamed")
    ok(c, "e", "set", "description", str(exp_id), "a short one")
    ok(c, "e", "set", "notes", str(exp_id), "notes: line one\nline two")
    assert "priority is now 10" in ok(c, "e", "set", "priority", str(paused_id), "10")  # a queued one
    fails(c, 2, "e", "set", "priority", str(exp_id), "high")
    fails(c, 2, "e", "set", "colour", str(exp_id), "blue")
    e = json.loads(ok(c, "e", "describe", str(exp_id), "--json"))["experiment"]
    assert (e["name"], e["description"], e["notes"]) == ("renamed", "a short one", "notes: line one\nline two")


def _labels_add_and_remove(c: LocalTestCluster, exp_id: int) -> None:
    # labels: add, add again (no duplicate), remove, remove one that is not there (exit 3, named)
    ok(c, "e", "label", "add", str(exp_id), "best")
    assert "already has" in ok(c, "e", "label", "add", str(exp_id), "best")
    assert json.loads(ok(c, "e", "describe", str(exp_id), "--json"))["experiment"]["labels"] == ["keep", "best"]
    ok(c, "e", "label", "remove", str(exp_id), "keep")
    err = fails(c, 3, "e", "label", "remove", str(exp_id), "keep")
    assert "has no label 'keep'" in err and "'best'" in err


def _archive_hides_from_the_list(c: LocalTestCluster, exp_id: int, paused_id: int) -> None:
    # archive hides it from the list, --all shows it; unarchive brings it back
    ok(c, "e", "archive", str(exp_id))
    listed = [x["id"] for x in json.loads(ok(c, "e", "list", "--json"))["experiments"]]
    assert exp_id not in listed and paused_id in listed
    everything = json.loads(ok(c, "e", "list", "--all", "--json"))["experiments"]
    assert {x["id"]: x["archived"] for x in everything}[exp_id] is True
    assert "Archived" in ok(c, "e", "list", "--all")
    ok(c, "e", "unarchive", str(exp_id))
    assert exp_id in [x["id"] for x in json.loads(ok(c, "e", "list", "--json"))["experiments"]]


def _fork_takes_the_old_config_with_overrides(c: LocalTestCluster, exp_id: int, tmp_path: pathlib.Path) -> int:
    # fork: the old config and code with overrides; an invalid override is a clear error, nothing created
    before = json.loads(ok(c, "e", "list", "--all", "--json"))["total"]
    err = fails(c, 2, "e", "fork", str(exp_id), "--config", "searcher.max_length")
    assert "searcher.max_length" in err and "KEY=VALUE" in err
    err = fails(c, 2, "e", "fork", str(exp_id), "--config", "searcher.max_length=-3")
    assert "max_length" in err
    assert json.loads(ok(c, "e", "list", "--all", "--json"))["total"] == before
    fails(c, 3, "e", "fork", "999")
    patch = tmp_path / "patch.yaml"
    patch.write_text("name: forked\nsearcher: {max_length: 3}\n")
    out = ok(c, "e", "fork", str(exp_id), str(patch), "--config", "labels=forked,again")
    assert f"from experiment {exp_id}" in out
    fork_id = int(out.split("Forked experiment ")[1].split()[0])
    forked = completed(c, fork_id)
    assert forked["experiment"]["name"] == "forked" and forked["experiment"]["labels"] == ["forked", "again"]
    assert forked["experiment"]["state"] == "COMPLETED" and forked["trials"][0]["steps_completed"] == 3
    assert forked["config"]["searcher"]["metric"] == "score"  # the rest comes from the old config
    return fork_id


def _delete_asks_then_removes_the_files(c: LocalTestCluster, exp_id: int, trial_id: int, fork_id: int) -> None:
    # delete: asks first (no means no), then removes the checkpoints' files and the experiment
    ckpts = json.loads(ok(c, "e", "list-checkpoints", str(exp_id), "--json"))["checkpoints"]
    dirs = [checkpoint_dir(c, ck["uuid"]) for ck in ckpts]
    assert dirs and all(p.is_dir() for p in dirs)
    assert "Kept experiment" in ok(c, "e", "delete", str(exp_id), stdin="n\n")
    assert all(p.is_dir() for p in dirs)
    assert f"Deleted experiment {exp_id}" in ok(c, "e", "delete", str(exp_id), stdin="y\n")
    assert not any(p.exists() for p in dirs)
    fails(c, 3, "e", "describe", str(exp_id))
    fails(c, 3, "t", "describe", str(trial_id))
    assert json.loads(ok(c, "e", "describe", str(fork_id), "--json"))["experiment"]["state"] == "COMPLETED"


@pytest.mark.timeout(600)  # a hang guard: 120-130 s alone, more on a loaded 2-core host
@pytest.mark.usefixtures("context")
def test_logs_downloads_config_describe_and_checkpoint_delete(tmp_path):
    with LocalTestCluster(tmp_path / "home") as c:
        grid = tiny_config(tmp_path, "grid", steps=6, labels=["sweep"],
                           searcher={"name": "grid", "metric": "score", "smaller_is_better": False, "max_length": 6},
                           hyperparameters={"x": {"type": "categorical", "vals": [1, 2]}})
        exp_id = create(c, grid)
        single_id = create(c, tiny_config(tmp_path, "single", steps=6, ledger="single-ledger"))
        trials = sorted(t["id"] for t in completed(c, exp_id)["trials"])
        completed(c, single_id)

        _experiment_logs(c, exp_id, trials)
        _trial_log_filters(c, trials[0])
        _config_and_model_def(c, exp_id, tmp_path)
        best_uuid = _downloads(c, exp_id, trials, tmp_path)
        _describe_metrics(c, exp_id, trials)
        _list_filters_and_csv(c, exp_id, single_id, best_uuid)
        _checkpoint_delete(c, single_id)


def _experiment_logs(c: LocalTestCluster, exp_id: int, trials: list[int]) -> None:
    # e logs: every trial's lines, each after its trial id
    lines = ok(c, "e", "logs", str(exp_id)).splitlines()
    for t in trials:
        assert any(line.startswith(f"[trial {t}] ") for line in lines), lines[:20]
    assert all(line.startswith(tuple(f"[trial {t}] " for t in trials)) for line in lines)
    assert ok(c, "e", "logs", str(exp_id), "--follow").splitlines() == lines  # ends: the experiment is over
    assert ok(c, "e", "logs", str(exp_id), "--grep", "hello").count("hello from the trial") == 2
    fails(c, 3, "e", "logs", "999")


def _trial_log_filters(c: LocalTestCluster, trial_id: int) -> None:
    # t logs filters, applied by the master
    everything = ok(c, "t", "logs", str(trial_id)).splitlines()
    assert len(everything) >= 3
    assert ok(c, "t", "logs", str(trial_id), "--head", "2").splitlines() == everything[:2]
    assert ok(c, "t", "logs", str(trial_id), "--tail", "2").splitlines() == everything[-2:]
    grepped = ok(c, "t", "logs", str(trial_id), "--grep", "hello from").splitlines()
    assert len(grepped) == 1 and grepped[0].endswith("hello from the trial")
    assert ok(c, "t", "logs", str(trial_id), "--since", str(time.time() + 3600)).strip() == ""
    assert ok(c, "t", "logs", str(trial_id), "--since", "1d").splitlines() == everything
    assert ok(c, "t", "logs", str(trial_id), "--level", "critical").strip() == ""
    warned = ok(c, "t", "logs", str(trial_id), "--level", "warning").splitlines()
    assert warned and all("WARNING" in line for line in warned) and len(warned) < len(everything)
    fails(c, 2, "t", "logs", str(trial_id), "--since", "yesterday-ish")
    fails(c, 2, "t", "logs", str(trial_id), "--head", "1", "--tail", "1")
    fails(c, 2, "t", "logs", str(trial_id), "--level", "LOUD")
    fails(c, 3, "t", "logs", "999")


def _config_and_model_def(c: LocalTestCluster, exp_id: int, tmp_path: pathlib.Path) -> None:
    # e config: the stored config as YAML
    stored = yaml.safe_load(ok(c, "e", "config", str(exp_id)))
    assert stored["name"] == "grid" and stored["searcher"]["name"] == "grid"
    fails(c, 3, "e", "config", "999")

    # e download-model-def: the context as experiment_ID_model_def.tgz
    ok(c, "e", "download-model-def", str(exp_id), "--output-dir", str(tmp_path / "code"))
    with tarfile.open(tmp_path / "code" / f"experiment_{exp_id}_model_def.tgz") as tgz:
        assert any(name.endswith("train.py") for name in tgz.getnames())


def _downloads(c: LocalTestCluster, exp_id: int, trials: list[int], tmp_path: pathlib.Path) -> str:
    """e download and t download; returns the uuid of the experiment's best checkpoint."""
    # e download --top-n: the best checkpoints by the searcher metric (score, larger is better: trial 2's)
    out = ok(c, "e", "download", str(exp_id), "--top-n", "2", "-o", str(tmp_path / "best"), "-q")
    paths = [pathlib.Path(p) for p in out.split()]
    assert len(paths) == 2 and all((p / "state.json").is_file() for p in paths)
    best = json.loads(ok(c, "c", "describe", paths[0].name, "--json"))
    assert best["trial_id"] == trials[1] and best["steps_completed"] == 6
    fails(c, 3, "e", "download", "999")

    # t download: the latest checkpoint, --best, or --uuid
    out = ok(c, "t", "download", str(trials[0]), "-o", str(tmp_path / "latest"))
    assert json.loads((tmp_path / "latest" / "state.json").read_text()) == {"steps": 6}, out
    all_ckpts = json.loads(ok(c, "e", "lc", str(exp_id), "--json"))["checkpoints"]
    early = next(ck["uuid"] for ck in all_ckpts if ck["trial_id"] == trials[0] and ck["steps_completed"] == 3)
    ok(c, "t", "download", str(trials[0]), "--uuid", early, "-o", str(tmp_path / "by-uuid"))
    assert json.loads((tmp_path / "by-uuid" / "state.json").read_text()) == {"steps": 3}
    ok(c, "t", "download", str(trials[0]), "--best", "-o", str(tmp_path / "trial-best"))
    assert json.loads((tmp_path / "trial-best" / "state.json").read_text()) == {"steps": 6}
    fails(c, 2, "t", "download", str(trials[0]), "--uuid", paths[0].name)  # trial 2's checkpoint
    return paths[0].name


def _describe_metrics(c: LocalTestCluster, exp_id: int, trials: list[int]) -> None:
    # describe --metrics, as a table, CSV and JSON
    assert "training.loss" in ok(c, "e", "describe", str(exp_id), "--metrics")
    sections = ok(c, "e", "describe", str(exp_id), "--metrics", "--csv").strip().split("\n\n")
    assert len(sections) == 3
    head = next(csv.DictReader(io.StringIO(sections[0])))
    assert head["ID"] == str(exp_id) and head["State"] == "COMPLETED"
    metric_rows = list(csv.DictReader(io.StringIO(sections[2])))
    assert {r["Trial"] for r in metric_rows} == {str(t) for t in trials}
    assert [r["Steps"] for r in metric_rows if r["Trial"] == str(trials[0])] == [str(s) for s in range(1, 7)]
    assert float(metric_rows[0]["training.loss"]) == 1.0
    assert {r["Checkpoint"] for r in metric_rows if r["Steps"] in ("3", "6")} - {""}
    described = json.loads(ok(c, "t", "describe", str(trials[0]), "--metrics", "--json"))
    assert described["trial"]["id"] == trials[0]
    assert {p["group"] for p in described["metrics"]} == {"training", "validation"}
    trial_csv = ok(c, "t", "describe", str(trials[0]), "--metrics", "--csv").strip().split("\n\n")
    assert len(trial_csv) == 3 and "validation.score" in trial_csv[2]
    fails(c, 2, "e", "describe", str(exp_id), "--json", "--csv")


def _list_filters_and_csv(c: LocalTestCluster, exp_id: int, single_id: int, best_uuid: str) -> None:
    # e list: filters and sorting, as JSON and CSV
    def ids(*flags: str) -> list[int]:
        return [e["id"] for e in json.loads(ok(c, "e", "list", "--json", *flags))["experiments"]]

    assert ids() == [single_id, exp_id]
    assert ids("--order-by", "asc") == [exp_id, single_id]
    assert ids("--label", "sweep") == [exp_id]
    assert ids("--name", "sing") == [single_id]
    assert ids("--state", "COMPLETED", "--state", "ACTIVE") == [single_id, exp_id]
    assert ids("--state", "ERROR") == []
    assert ids("--user", "nobody-at-all") == []
    assert ids("--sort-by", "name", "--order-by", "asc") == [exp_id, single_id]
    rows = list(csv.DictReader(io.StringIO(ok(c, "e", "list", "--csv"))))
    assert [r["ID"] for r in rows] == [str(single_id), str(exp_id)] and rows[0]["State"] == "COMPLETED"
    fails(c, 2, "e", "list", "--state", "SLEEPING")
    for verb in (("e", "lt", str(exp_id)), ("e", "lc", str(exp_id)), ("agent", "list"), ("slot", "list"),
                 ("job", "list"), ("cmd", "list"), ("c", "describe", best_uuid)):
        assert next(csv.reader(io.StringIO(ok(c, *verb, "--csv")))), verb


def _checkpoint_delete(c: LocalTestCluster, single_id: int) -> None:
    # checkpoint delete: the files go, the record stays, marked DELETED; an unknown uuid deletes nothing
    ckpts = json.loads(ok(c, "e", "list-checkpoints", str(single_id), "--json"))["checkpoints"]
    first, second = ckpts[0]["uuid"], ckpts[1]["uuid"]
    dirs = [checkpoint_dir(c, u) for u in (first, second)]
    assert all(p.is_dir() for p in dirs)
    err = fails(c, 3, "c", "delete", first, "00000000-0000-4000-8000-000000000000", "--yes")
    assert "00000000-0000-4000-8000-000000000000" in err and all(p.is_dir() for p in dirs)
    assert "Deleted nothing" in ok(c, "c", "delete", first, stdin="n\n")
    ok(c, "checkpoint", "delete", f"{first},{second}", "--yes")
    assert not any(p.exists() for p in dirs)
    assert json.loads(ok(c, "c", "describe", first, "--json"))["state"] == "DELETED"
