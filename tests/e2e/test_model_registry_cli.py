"""Acceptance 6 of issue 29, through the CLI and the SDK: the best checkpoint of a finished search registered as
version 1 of a model (`stalwart model register-version`), listed and described, downloaded through the SDK
(`client.get_model(name).get_version(1).checkpoint.download(path)`: the same bytes as in storage), and kept by a GC
policy that deletes every other checkpoint of the search.

A real master and agent run a grid of two tiny Core API trials; each reports a validation loss from a fixed table
and saves a checkpoint at steps 1 and 2, so the search's best is known in advance: x=0 at step 2.
"""

from __future__ import annotations

import json
import pathlib
import time

import pytest
import yaml

from cli_runs import fails, ok
from integration.helpers import one_file_context_b64
from stalwart.experimental import Model, client as sdk
from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

LOSS = {0: (0.50, 0.20), 1: (0.40, 0.30)}  # x: the validation loss at steps 1 and 2; the best is x=0 at step 2
TRIAL = f"""import json
from determined import core

LOSS = {LOSS!r}

with core.init() as ctx:
    x = ctx.info.trial.hparams["x"]
    for op in ctx.searcher.operations():
        for step, loss in enumerate(LOSS[x], 1):
            ctx.train.report_validation_metrics(step, {{"loss": loss}})
            with ctx.checkpoint.store_path({{"steps_completed": step}}) as (path, uuid):
                (path / "state.json").write_text(json.dumps({{"x": x, "step": step}}))
                (path / "weights.bin").write_bytes(bytes(range(256)) * (x + step))
            op.report_progress(step)
        op.report_completed(LOSS[x][1])
"""


def context_b64() -> str:
    return one_file_context_b64("registry_trial.py", TRIAL)


def finished_search(cluster: LocalTestCluster, storage: pathlib.Path) -> int:
    """The two-trial grid, run to completion; its id."""
    config = {"name": "registry-search", "entrypoint": "python3 registry_trial.py", "max_restarts": 0,
              "searcher": {"name": "grid", "metric": "loss", "smaller_is_better": True, "max_length": 2},
              "hyperparameters": {"x": {"type": "categorical", "vals": sorted(LOSS)}},
              "checkpoint_storage": {"type": "shared_fs", "host_path": str(storage), "save_trial_latest": 10}}
    with cluster.client() as client:
        created = client.create_experiment(yaml.safe_dump(config), context_b64()).experiment
        assert created is not None
        deadline = time.monotonic() + 120
        while not (detail := client.get_experiment(created.id)).experiment.state.terminal:
            assert time.monotonic() < deadline, "the search did not end"
            time.sleep(0.2)
        assert detail.experiment.state.value == "COMPLETED", cluster.log("master.log")[-3000:]
        return created.id


def files_of(root: pathlib.Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def registered_through_the_cli(env: dict[str, str], best: str, exp_id: int) -> None:
    """Create the model, register `best` as version 1, list, describe, update; bad input gets a clear error."""
    ok(env, "model", "create", "digits", "--description", "the best digits model", "--label", "cnn",
       "--metadata", "framework=torch", "--workspace", "Uncategorized")
    registered = ok(env, "model", "register-version", "digits", best, "--name", "best", "--comment", "x=0")
    assert f"Registered checkpoint {best} as version 1 of model digits" in registered
    listed = json.loads(ok(env, "model", "list", "--json"))["models"]
    assert [(m["name"], m["num_versions"], m["labels"], m["workspace"]) for m in listed] == \
        [("digits", 1, ["cnn"], "Uncategorized")]
    described = json.loads(ok(env, "m", "describe", "digits", "--json"))
    assert described["model"]["metadata"] == {"framework": "torch"}
    (version,) = described["model_versions"]
    assert (version["version"], version["name"], version["checkpoint"]["uuid"], version["experiment_id"]) == \
        (1, "best", best, exp_id)
    table = ok(env, "model", "list-versions", "digits")
    assert best in table and "best" in table
    ok(env, "model", "update", "digits", "--notes", "trained on MNIST", "--metadata", "epochs=2")
    fails(env, 2, "model", "update", "digits", "--remove-metadata", "nope")
    fails(env, 3, "model", "describe", "no-such-model")


def moved_archived_and_deleted(env: dict[str, str]) -> None:
    """Move it to another workspace; archive hides it from the list; delete asks first (no answer: nothing
    deleted), then --yes."""
    ok(env, "workspace", "create", "team-a")
    assert "to workspace team-a" in ok(env, "model", "move", "digits", "team-a")
    assert [m["name"] for m in json.loads(ok(env, "model", "list", "-w", "team-a", "--json"))["models"]] == ["digits"]
    fails(env, 3, "model", "list", "-w", "no-such-workspace")
    ok(env, "model", "archive", "digits")
    assert json.loads(ok(env, "model", "list", "--json"))["models"] == []
    assert [m["name"] for m in json.loads(ok(env, "model", "list", "--archived", "--json"))["models"]] == ["digits"]
    ok(env, "model", "unarchive", "digits")
    fails(env, 130, "model", "delete", "digits")
    assert sdk.get_model("digits").num_versions == 1
    ok(env, "model", "delete", "digits", "--yes")
    assert json.loads(ok(env, "model", "list", "--archived", "--json"))["models"] == []


def edited_through_the_sdk(model: Model) -> None:
    """The SDK's edits of a model and of its version reach the master (fresh lookups see them)."""
    model.set_labels(["cnn", "mnist"])
    model.add_metadata({"epochs": 3, "lr": 0.1})
    model.remove_metadata(["framework"])
    model.set_description("digits, edited")
    version = model.get_version(1)
    version.set_notes("best of the search")
    version.set_comment("v1")
    version.set_labels(["best"])
    version.add_metadata({"accuracy": 0.9})
    again = sdk.get_model("digits")
    assert (again.labels, again.metadata, again.description) == (["cnn", "mnist"], {"epochs": 3, "lr": 0.1},
                                                                 "digits, edited")
    seen = again.get_version(1)
    assert (seen.notes, seen.comment, seen.labels, seen.metadata["accuracy"]) == ("best of the search", "v1",
                                                                                  ["best"], 0.9)


@pytest.mark.timeout(240)
def test_register_the_best_checkpoint_download_it_through_the_sdk_and_gc_keeps_it(tmp_path, monkeypatch) -> None:
    storage = tmp_path / "checkpoints"
    with LocalTestCluster(tmp_path / "cluster", slots=2) as cluster:
        env = cluster.env
        exp_id = finished_search(cluster, storage)
        monkeypatch.setenv("STALWART_HOME", str(cluster.home))
        sdk.login(master=cluster.url, user="admin", password="")
        best = sdk.get_experiment(exp_id).top_checkpoint()
        assert json.loads((storage / best.uuid / "state.json").read_text()) == {"x": 0, "step": 2}
        registered_through_the_cli(env, best.uuid, exp_id)

        # the SDK: the same model, its latest version is 1, its checkpoint's files byte for byte
        model = sdk.get_model("digits")
        assert (model.notes, model.metadata) == ("trained on MNIST", {"framework": "torch", "epochs": 2})
        assert model.get_version().model_version == 1
        got = pathlib.Path(model.get_version(1).checkpoint.download(tmp_path / "downloaded"))
        expected = files_of(storage / best.uuid)
        assert {k: v for k, v in files_of(got).items() if k in expected} == expected
        edited_through_the_sdk(model)

        # GC keeping nothing of the search but what a model version uses
        applied = ok(env, "e", "set", "gc-policy", str(exp_id), "--save-experiment-best", "0", "--save-trial-best",
                     "0", "--save-trial-latest", "0", "--yes")
        with cluster.client() as client:
            states = {c.uuid: c.state for c in client.experiment_checkpoints(exp_id).checkpoints}
        assert states.pop(best.uuid) == "COMPLETED", applied
        assert set(states.values()) == {"DELETED"} and len(states) == 3, applied
        assert (storage / best.uuid / "state.json").is_file()
        assert not any((storage / u).exists() for u in states)
        assert sdk.get_model("digits").get_version(1).checkpoint.download(tmp_path / "again")
        moved_archived_and_deleted(env)
