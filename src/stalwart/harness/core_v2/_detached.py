"""A detached script's trial: its experiment and trial made (or found again by their external ids) with the user's
session, a run started, then the run's heartbeats, its printed lines shipped to the trial's log, and its end
(COMPLETED, or ERROR when the script raises or exits non-zero; a script killed outright is ended by the master
after its heartbeat timeout)."""

from __future__ import annotations

import atexit
import io
import logging
import sys
import threading
import time
import types
from typing import Any, TextIO

from stalwart.api.errors import StalwartError
from stalwart.api.models.detached import DetachedRun
from stalwart.client import Client
from stalwart.harness.core._distributed import DistributedContext
from stalwart.harness.core_v2._config import Config, experiment_config_text
from stalwart.harness.info import ClusterInfo, TrialInfo
from stalwart.harness.session import trial_client

log = logging.getLogger("stalwart.core")
SHIP_EVERY_S = 1.0


def start(user: Client, master_url: str, config: Config, storage: dict[str, Any],
          distributed: DistributedContext) -> tuple[ClusterInfo, float]:
    """Make or find the experiment and trial and start a run (on the chief; the workers get its answer): the
    ClusterInfo a managed run's info file would hold, and the master's heartbeat timeout."""
    if config.external_trial_id is not None and config.external_experiment_id is None:
        raise ValueError("core_v2.Config: external_trial_id needs external_experiment_id too (a trial is found "
                         "again within its experiment)")
    run: dict[str, Any] | None = None
    if distributed.rank == 0:
        text = experiment_config_text(config, storage)
        exp = user.create_detached_experiment(text, config.external_experiment_id).experiment
        assert exp is not None
        trial = user.create_detached_trial(exp.id, dict(config.hparams or {}), config.external_trial_id).trial
        run = user.start_detached_run(trial.id, resume=True).model_dump(mode="json")
    if distributed.size > 1:
        run = distributed.broadcast(run)
    assert run is not None
    started = DetachedRun.model_validate(run)
    return _info(master_url, started, storage), started.heartbeat_timeout_s


def _info(master_url: str, run: DetachedRun, storage: dict[str, Any]) -> ClusterInfo:
    return ClusterInfo(
        master_url=master_url, cluster_id=run.cluster_id, agent_id="unmanaged", slot_ids=[],
        task_id=f"trial-{run.trial_id}", allocation_id=run.allocation_id, session_token=run.allocation_token,
        task_type="TRIAL", latest_checkpoint=run.latest_checkpoint, checkpoint_storage=storage,
        trial=TrialInfo(trial_id=run.trial_id, experiment_id=run.experiment_id, trial_run_id=run.trial_run_id,
                        trial_seed=run.trial_seed, hparams=run.hparams, _config=run.config,
                        steps_completed=run.steps_completed))


class _LineTee(io.TextIOBase):
    """Writes go to the stream as before; whole lines are also kept for the trial's log."""

    def __init__(self, stream: TextIO, name: str, sink: list[tuple[str, float, str]], lock: threading.Lock) -> None:
        self._stream, self._name, self._sink, self._lock = stream, name, sink, lock
        self._partial = ""

    def write(self, text: str) -> int:
        written = self._stream.write(text)
        with self._lock:
            lines = (self._partial + text).split("\n")
            self._partial = lines.pop()
            now = time.time()
            self._sink.extend((self._name, now, line) for line in lines)
        return written

    def flush(self) -> None:
        self._stream.flush()

    def fileno(self) -> int:
        return self._stream.fileno()

    def isatty(self) -> bool:
        return self._stream.isatty()

    @property
    def encoding(self) -> str:  # type: ignore[override]  # TextIOBase's is a plain attribute; the stream's is read
        return self._stream.encoding

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class DetachedRunKeeper:
    """The run's life on the script's side: heartbeats, its printed lines shipped to the trial's log, its end."""

    def __init__(self, info: ClusterInfo, chief: bool, heartbeat_timeout_s: float) -> None:
        self._info, self._chief = info, chief
        self._interval = max(0.2, min(30.0, heartbeat_timeout_s / 4))
        self._client = trial_client(info)
        self._lines: list[tuple[str, float, str]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ended = False
        self._exception: BaseException | None = None
        self._exit_code: int | str | None = None
        self._exit = sys.exit
        sys.exit = self._on_exit  # type: ignore[assignment]  # records the code, then exits as sys.exit does
        self._streams = (sys.stdout, sys.stderr)
        sys.stdout = _LineTee(sys.stdout, "stdout", self._lines, self._lock)
        sys.stderr = _LineTee(sys.stderr, "stderr", self._lines, self._lock)
        self._excepthook = sys.excepthook
        sys.excepthook = self._on_uncaught
        self._thread = threading.Thread(target=self._run, daemon=True, name="detached-heartbeat")
        self._thread.start()
        atexit.register(self.end)

    def _on_exit(self, code: int | str | None = 0) -> None:
        self._exit_code = code
        self._exit(code)

    def _on_uncaught(self, kind: type[BaseException], exc: BaseException, tb: types.TracebackType | None) -> None:
        self._exception = exc
        self._excepthook(kind, exc, tb)

    def _run(self) -> None:
        interval = self._interval
        last_beat = 0.0
        while not self._stop.wait(SHIP_EVERY_S if interval > SHIP_EVERY_S else interval):
            self._ship()
            if self._chief and time.monotonic() - last_beat >= interval:
                try:
                    self._client.detached_heartbeat(self._info.allocation_id)
                    last_beat = time.monotonic()
                except StalwartError as err:
                    log.warning("detached run heartbeat failed: %s", err)

    def _ship(self) -> None:
        with self._lock:
            lines, self._lines[:] = list(self._lines), []
        if not lines:
            return
        runs = [{"allocation_id": self._info.allocation_id, "trial_id": self._info.trial.trial_id if self._info.trial
                 else None, "stdtype": name, "lines": [[at, text] for n, at, text in lines if n == name]}
                for name in ("stdout", "stderr")]
        try:
            self._client.ship_logs([r for r in runs if r["lines"]])
        except StalwartError as err:
            self._streams[1].write(f"could not ship {len(lines)} log lines to the master: {err}\n")

    def end(self, error: BaseException | None = None) -> None:
        """End the run (once): COMPLETED, or ERROR when the script failed (`error`, an uncaught exception, or
        sys.exit with a non-zero code)."""
        if self._ended:
            return
        self._ended = True
        atexit.unregister(self.end)
        failure = error or self._exception
        if failure is None and self._exit_code not in (None, 0):
            failure = SystemExit(self._exit_code)
        self._stop.set()
        self._thread.join(timeout=5)
        self._ship()
        sys.stdout, sys.stderr = self._streams
        sys.excepthook = self._excepthook
        sys.exit = self._exit
        if not self._chief:
            return
        state, message = ("ERROR", f"{type(failure).__name__}: {failure}") if failure else ("COMPLETED", None)
        try:
            self._client.end_detached_run(self._info.allocation_id, state, message)
        except StalwartError as err:
            log.warning("could not end the detached run on the master: %s", err)

