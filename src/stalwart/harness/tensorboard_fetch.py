"""A TensorBoard task's copy of the event files it shows, brought from checkpoint storage and kept up to date.

Trials keep their event files in their experiment's checkpoint storage at
`tensorboard/experiment/<exp id>/trial/<trial id>/<path>` (storage/base.py `tensorboard_key`). A `Fetcher` copies
them to `<root>/exp-<exp id>/trial-<trial id>/<path>`, so TensorBoard names each run by its experiment and trial and
shows several experiments side by side. Each `sync()` brings only what is new or has grown: event files are appended
to as a trial trains, so a file that grew gets just its new bytes appended (TensorBoard reads on from where it was),
and one that shrank (rewritten) is copied whole. The storages' configs hold credentials: nothing here prints them
(storage errors say what to check and carry no secret).
"""

from __future__ import annotations

import pathlib
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO, Any

from stalwart.api.errors import StalwartError
from stalwart.storage import ObjectStoreStorage, SharedFSStorage, StorageManager, make_storage
from stalwart.storage.base import tensorboard_file, tensorboard_key


@dataclass(frozen=True)
class Shown:
    """One experiment a TensorBoard shows: its storage, and the trials shown (None: all of them)."""

    experiment_id: int
    storage: StorageManager
    trial_ids: frozenset[int] | None


def shown_of(section: Mapping[str, Any]) -> list[Shown]:
    """The experiments of the info file's `tensorboard` section (ids, trial ids, storages), each with its storage."""
    trials = frozenset(int(t) for t in section.get("trial_ids") or []) or None
    storages = section.get("storages") or {}
    out = []
    for exp_id in section.get("experiment_ids") or []:
        config = storages.get(str(exp_id))
        if not config:
            raise ValueError(f"experiment {exp_id} has no checkpoint_storage: there are no event files to show")
        out.append(Shown(int(exp_id), make_storage(dict(config)), trials))
    return out


def _trial_of(rel: str) -> tuple[int, str] | None:
    """'trial/5/events.out...' -> (5, 'events.out...'); None for what is no trial's file."""
    parts = rel.split("/", 2)
    if len(parts) != 3 or parts[0] != "trial" or not parts[1].isdigit():
        return None
    return int(parts[1]), parts[2]


def _open_remote(storage: StorageManager, exp_id: int, rel: str) -> IO[bytes]:
    """A stored TensorBoard file of the experiment, opened for reading (`rel` under its experiment's directory)."""
    rel = tensorboard_file(rel)
    if isinstance(storage, SharedFSStorage):
        return open(storage.base / tensorboard_key(exp_id) / rel, "rb")  # noqa: SIM115 - the caller closes it
    if isinstance(storage, ObjectStoreStorage):
        opened: IO[bytes] = storage.fs.open(f"{storage.root}/{tensorboard_key(exp_id)}/{rel}", "rb")
        return opened
    raise ValueError(f"{type(storage).__name__} keeps no TensorBoard files")


def _report(shown: Shown, problem: str) -> None:
    print(f"could not bring the TensorBoard files of experiment {shown.experiment_id}: {problem}; trying again "
          "at the next sync", file=sys.stderr, flush=True)


class Fetcher:
    """Copies the shown experiments' event files under `root`, each sync only what changed."""

    def __init__(self, root: pathlib.Path, shown: list[Shown]) -> None:
        self.root = root
        self.shown = shown
        self._sizes: dict[pathlib.Path, int] = {}  # local file -> the stored size it was brought to

    def sync(self) -> int:
        """Bring what is new or changed in every shown experiment; how many files. A storage that fails is reported
        (without its config) and tried again at the next sync; the others are synced still."""
        count = 0
        for shown in self.shown:
            try:
                count += self._sync_experiment(shown)
            except (StalwartError, OSError) as err:  # what to check, never a secret
                _report(shown, str(err))
            except Exception as err:  # a storage library's own error may quote its request: only its kind
                _report(shown, f"{type(err).__name__} from its checkpoint storage (check its address and access)")
        return count

    def _sync_experiment(self, shown: Shown) -> int:
        self.root.joinpath(f"exp-{shown.experiment_id}").mkdir(parents=True, exist_ok=True)
        count = 0
        for rel, size in sorted(shown.storage.list_tensorboard(shown.experiment_id).items()):
            found = _trial_of(rel)
            if found is None or (shown.trial_ids is not None and found[0] not in shown.trial_ids):
                continue
            trial_id, path = found
            local = self.root / f"exp-{shown.experiment_id}" / f"trial-{trial_id}" / tensorboard_file(path)
            if self._sizes.get(local) == size:
                continue
            self._bring(shown, rel, local, size)
            count += 1
        return count

    def _bring(self, shown: Shown, rel: str, local: pathlib.Path, size: int) -> None:
        """The stored file into `local`: its new bytes appended when it grew, else copied whole."""
        local.parent.mkdir(parents=True, exist_ok=True)
        have = local.stat().st_size if local.is_file() else 0
        grew = have <= size and self._sizes.get(local) == have
        with _open_remote(shown.storage, shown.experiment_id, rel) as src:
            if grew:
                src.seek(have)
                with open(local, "ab") as dst:
                    shutil.copyfileobj(src, dst)
            else:
                with open(local, "wb") as dst:
                    shutil.copyfileobj(src, dst)
        self._sizes[local] = local.stat().st_size
