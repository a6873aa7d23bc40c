"""End to end on real processes, through the typed client: continue a finished experiment to a longer length,
filter its trial's logs, edit it, find it with list filters, delete its checkpoints and then the experiment itself,
checking checkpoint storage on disk."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

from integration.helpers import create, digits_config, metrics, wait_state
from stalwart.api.errors import InvalidStateError, NotFoundError
from stalwart.storage import make_storage

pytestmark = pytest.mark.integration

ENDED = {"COMPLETED", "ERROR", "CANCELED"}


def _files(storage: dict[str, Any] | None, uuid: str) -> dict[str, int]:
    assert storage is not None
    return make_storage(storage).list(uuid)


def _on_disk(storage: dict[str, Any] | None, uuid: str) -> pathlib.Path:
    assert storage is not None and storage["type"] == "shared_fs" and not storage.get("storage_path")
    return pathlib.Path(storage["host_path"]) / uuid


def test_continue_edit_filter_and_delete_a_real_experiment(cluster):
    c = cluster
    client = c.client()
    exp_id = create(c, digits_config(searcher__max_length={"batches": 200}))
    done = wait_state(c, exp_id, ENDED)
    assert done["experiment"]["state"] == "COMPLETED", c.log("agent-0.log")[-3000:]
    trial_id = done["trials"][0]["id"]
    assert [m["steps_completed"] for m in metrics(c, trial_id, "validation")] == [100, 200]

    # a running experiment can be neither deleted nor continued
    again = client.continue_experiment(exp_id, {"searcher": {"max_length": {"batches": 400}}})
    assert again.experiment.state.value == "ACTIVE"
    with pytest.raises(InvalidStateError):
        client.delete_experiment(exp_id)
    with pytest.raises(InvalidStateError):
        client.continue_experiment(exp_id, {})
    done = wait_state(c, exp_id, ENDED)
    assert done["experiment"]["state"] == "COMPLETED", c.log("agent-0.log")[-3000:]
    assert [t["id"] for t in done["trials"]] == [trial_id]  # the same trial, trained further
    assert [m["steps_completed"] for m in metrics(c, trial_id, "validation")] == [100, 200, 300, 400]
    training = [m["steps_completed"] for m in metrics(c, trial_id, "training")]
    assert training == sorted(set(training)) and training[-1] == 400  # no step trained twice
    assert len(client.get_trial(trial_id).runs) == 2

    # trial log filters, applied by the master
    finals = [e.log for e in client.stream_trial_logs(trial_id, grep="final validation_accuracy")]
    assert len(finals) == 2 and all("final validation_accuracy" in line for line in finals)
    assert len(list(client.stream_trial_logs(trial_id, tail=3))) == 3
    assert all(e.level == "INFO" for e in client.stream_trial_logs(trial_id, levels=["INFO"]))

    # edit, then find it with the list filters
    client.patch_experiment(exp_id, notes="continued to 400", labels=["digits", "continued"])
    other = create(c, digits_config(name="other"))
    found = client.list_experiments(labels=["continued"], name="DIGITS", states=["COMPLETED"])
    assert [e.id for e in found.experiments] == [exp_id] and found.experiments[0].notes == "continued to 400"

    # delete one checkpoint, then the whole experiment: files leave storage first
    ckpts = [ck for ck in client.experiment_checkpoints(exp_id).checkpoints if ck.state == "COMPLETED"]
    assert ckpts and all(_files(ck.storage, ck.uuid) for ck in ckpts)
    first, rest = ckpts[0], ckpts[1:]
    client.delete_checkpoints([first.uuid])
    assert not _on_disk(first.storage, first.uuid).exists()
    assert client.get_checkpoint(first.uuid).checkpoint.state == "DELETED"
    assert all(_on_disk(ck.storage, ck.uuid).exists() for ck in rest)
    client.delete_experiment(exp_id)
    assert not any(_on_disk(ck.storage, ck.uuid).exists() for ck in ckpts)
    with pytest.raises(NotFoundError):
        client.get_experiment(exp_id)
    with pytest.raises(NotFoundError):
        client.get_trial(trial_id)
    assert client.get_experiment(other).experiment.name == "other"
    client.experiment_action(other, "kill")
