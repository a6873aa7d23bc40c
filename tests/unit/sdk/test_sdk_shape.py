"""Scripts written against Determined's SDK run unchanged against Stalwart's: every public function of
`determined.experimental.client` (release 0.38.1) and every public method, attribute and enum member of the classes
it exports exists in `stalwart.experimental.client`, with the same parameters (names, kinds, defaults) and the
same kind of return value (a list, an iterator, anything else). Determined's source is read from the real package,
installed the way tests/integration/test_determined_compat.py installs it. `DELIBERATE` lists each difference kept,
with its reason; a difference not listed, or a listed one that is gone, fails the test."""

from __future__ import annotations

import enum
import inspect
import pathlib
import subprocess
import sys

import pytest

from determined_sdk_surface import (
    Surface,
    compare_callable,
    determined_surface,
    stalwart_attributes,
    stalwart_callable,
)
from stalwart.experimental import client as sdk

_USERS = "users are not in Stalwart's SDK yet: use the CLI (`stalwart user ...`) or stalwart.client.Client"
_WORKSPACES = ("workspaces, projects and resource pools are not in Stalwart's SDK yet: use the CLI "
               "(`stalwart workspace ...`, `stalwart project ...`) or stalwart.client.Client")
_OAUTH = "Stalwart has no OAuth/SCIM clients (an Enterprise feature of Determined)"
_TLS = "Stalwart's client has no TLS certificate options yet; give an http(s) master URL the system trusts"
_STATES = "Stalwart's master never gives this state (queued and running experiments and trials are ACTIVE)"
_SORTS = "Stalwart's master does not sort by this field"
_TASK_METRICS = ("Stalwart records no metrics of tasks that use a checkpoint (Determined's "
                 "report_task_using_checkpoint); the training metrics are the trial's: Trial.iter_metrics")
_PACHYDERM = "Stalwart has no Pachyderm integration"

DELIBERATE: dict[str, str] = {
    **{f"{owner}.{fn}": _USERS for owner in ("client", "Determined")
       for fn in ("create_user", "get_user_by_id", "get_user_by_name", "list_users", "whoami")},
    "User": _USERS,
    **{f"{owner}.{fn}": _WORKSPACES for owner in ("client", "Determined")
       for fn in ("create_workspace", "delete_workspace", "get_workspace", "list_workspaces")},
    "Workspace": _WORKSPACES, "Project": _WORKSPACES, "ResourcePool": _WORKSPACES,
    **{f"{owner}.{fn}": _OAUTH for owner in ("client", "Determined")
       for fn in ("add_oauth_client", "list_oauth_clients", "remove_oauth_client")},
    "Oauth2ScimClient": _OAUTH,
    **{f"{owner}({p})": _TLS for owner in ("client.login", "Determined.__init__")
       for p in ("cert_path", "cert_name", "noverify")},
    **{f"ExperimentState.{m}": _STATES for m in ("DELETED", "DELETE_FAILED", "DELETING", "PULLING", "QUEUED",
                                                 "RUNNING", "STARTING")},
    **{f"TrialState.{m}": _STATES for m in ("PULLING", "QUEUED", "RUNNING", "STARTING")},
    **{f"ExperimentSortBy.{m}": _SORTS for m in ("CHECKPOINT_COUNT", "CHECKPOINT_SIZE", "DESCRIPTION", "FORKED_FROM",
                                                 "NUM_TRIALS", "PROJECT_ID", "RESOURCE_POOL", "SEARCHER_METRIC_VAL",
                                                 "USER")},
    **{f"TrialSortBy.{m}": "Stalwart's trials carry no such field to sort by (sort the list in Python)"
       for m in ("BEST_VALIDATION_METRIC", "CHECKPOINT_SIZE", "LATEST_VALIDATION_METRIC", "LOG_RETENTION_DAYS")},
    "Checkpoint.get_metrics": _TASK_METRICS, "ModelVersion.get_metrics": _TASK_METRICS,
    "ModelVersion.iter_metrics": _TASK_METRICS,
    "Checkpoint.get_pachyderm_commit": _PACHYDERM, "Experiment.get_pachyderm_config": _PACHYDERM,
    "Checkpoint.add_metadata": "the master cannot change a checkpoint's metadata after it is reported",
    "Checkpoint.remove_metadata": "the master cannot change a checkpoint's metadata after it is reported",
    "Checkpoint.remove_files": "the master deletes whole checkpoints only: Checkpoint.delete()",
    "Checkpoint.task_id": "a checkpoint names its allocation (allocation_id) and trial (trial_id)",
    "Checkpoint.training": "the training facts are on the checkpoint itself: trial_id, steps_completed, "
                           "validation_metrics (and the trial's hparams: client.get_trial(ckpt.trial_id).hparams)",
    "Trial.summary_metrics": "the master keeps no summary of a trial's metrics: latest_validation, or "
                             "Trial.iter_metrics(group)",
    "Experiment.delete_tensorboard_files": "the master has no request that deletes an experiment's TensorBoard "
                                           "files from storage (they go with the experiment: Experiment.delete())",
}


@pytest.fixture(scope="module")
def determined(tmp_path_factory: pytest.TempPathFactory) -> Surface:
    """The real determined==0.38.1 package's SDK surface (installed without its dependencies, read with ast)."""
    target = tmp_path_factory.mktemp("real-determined-sdk")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target),
                    "determined==0.38.1"], check=True, timeout=600)
    return determined_surface(pathlib.Path(target))


def differences(theirs: Surface) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, fn in theirs.functions.items():
        ours = getattr(sdk, name, None)
        if ours is None:
            found[f"client.{name}"] = "missing"
        else:
            found.update(compare_callable(f"client.{name}", fn, stalwart_callable(ours)))
    for name, shape in theirs.classes.items():
        cls = getattr(sdk, name, None)
        if not isinstance(cls, type):
            found[name] = "missing"
            continue
        if issubclass(cls, enum.Enum):
            found.update((f"{name}.{m}", "no such member") for m in shape.members if m not in cls.__members__)
            continue
        attributes = stalwart_attributes(cls)
        found.update((f"{name}.{a}", "no such attribute") for a in shape.attributes if a not in attributes)
        for method, fn in shape.methods.items():
            ours = inspect.getattr_static(cls, method, None)
            if method == "__init__" and name != "Determined":
                continue  # objects come from the SDK's functions; Determined is the only class scripts construct
            if ours is None:
                found[f"{name}.{method}"] = "missing"
            else:
                ours_shape = stalwart_callable(getattr(cls, method), method=not isinstance(ours, staticmethod))
                found.update(compare_callable(f"{name}.{method}", fn, ours_shape))
    return found


def test_stalwarts_sdk_has_determineds_shape(determined: Surface) -> None:
    found = differences(determined)
    unlisted = {key: what for key, what in sorted(found.items()) if key not in DELIBERATE}
    assert not unlisted, "differences from Determined's SDK (close them, or list them in DELIBERATE with a reason):\n" \
        + "\n".join(f"  {key}: {what}" for key, what in unlisted.items())
    stale = sorted(set(DELIBERATE) - set(found))
    assert not stale, f"listed in DELIBERATE but no longer different (remove them): {stale}"


def test_list_methods_return_lists_and_iter_methods_iterators() -> None:
    assert stalwart_callable(sdk.Experiment.list_trials, method=True).returns == "list"
    assert stalwart_callable(sdk.Experiment.iter_trials, method=True).returns == "iterator"
    assert stalwart_callable(sdk.Model.list_versions, method=True).returns == "list"
