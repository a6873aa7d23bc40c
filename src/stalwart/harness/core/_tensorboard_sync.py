"""Send a trial's TensorBoard files from its local directory to checkpoint storage, each time only what changed.

On shared_fs the harness writes the event files straight into storage and nothing is sent. On an object store (s3,
gcs, azure) they are written under the trial's work directory and a `TensorboardSync` puts every file that is new or
changed (size or modification time) since the last sync at `tensorboard/experiment/<id>/trial/<id>/<path>`, as
Determined's TensorBoard manager does: after the reports the master acknowledged, on `upload_tensorboard_files()`
and when the context closes. Each file is streamed from disk by the backend, never read whole into memory.
"""

from __future__ import annotations

import logging
import pathlib
import threading
from collections.abc import Callable

from stalwart.storage import StorageManager

log = logging.getLogger("stalwart.core")

Selector = Callable[[pathlib.Path], bool]
Mangler = Callable[[pathlib.Path, int], pathlib.Path]


class TensorboardSync:
    """Puts the changed files under `root` into `storage` as trial `trial_id`'s of experiment `experiment_id`."""

    def __init__(self, root: pathlib.Path, storage: StorageManager, experiment_id: int, trial_id: int,
                 rank: int = 0) -> None:
        self.root = root
        self._storage = storage
        self._experiment_id, self._trial_id, self._rank = experiment_id, trial_id, rank
        self._sent: dict[str, tuple[int, int]] = {}  # relative path -> (size, mtime in ns) when last sent
        self._lock = threading.Lock()  # the metric shipper's thread and the trial's both sync

    def sync(self, selector: Selector | None = None, mangler: Mangler | None = None) -> int:
        """Send what changed (of the files `selector` picks, named as `mangler` renames them); how many files."""
        with self._lock:
            changed: list[tuple[pathlib.Path, str, tuple[int, int]]] = []
            for path in sorted(self.root.rglob("*")) if self.root.is_dir() else []:
                if not path.is_file() or (selector is not None and not selector(path)):
                    continue
                rel = path.relative_to(self.root)
                name = (mangler(rel, self._rank) if mangler is not None else rel).as_posix()
                stat = path.stat()
                stamp = (stat.st_size, stat.st_mtime_ns)
                if self._sent.get(name) != stamp:
                    changed.append((path, name, stamp))
            if changed:
                self._storage.put_tensorboard([(path, name) for path, name, _ in changed], self._experiment_id,
                                              self._trial_id)
                self._sent.update({name: stamp for _, name, stamp in changed})
            return len(changed)

    def sync_quietly(self) -> None:
        """`sync()`, a failure logged (the files stay on disk; the next sync sends them) rather than raised."""
        try:
            self.sync()
        except Exception as err:  # storage errors say what to check and carry no secret
            log.warning("could not send the TensorBoard files to checkpoint storage: %s", err)
