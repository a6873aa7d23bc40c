"""A TensorBoard task's entrypoint: `python3 -m stalwart.harness.tensorboard_task` (master/tasks/tensorboards.py).

It reads what to show from its info file's `tensorboard` section (experiment ids, trial ids, each experiment's
checkpoint storage), brings the event files into `<work dir>/tb/exp-<id>/trial-<id>/` (harness/tensorboard_fetch.py),
keeps them up to date every few seconds from a background thread, and runs TensorBoard behind the master's proxy
through the service wrapper (harness/service.py): on a free port, under `--path_prefix /proxy/tensorboard-<id>`, its
port reported to the master once it answers. It ends with TensorBoard's exit status.
"""

from __future__ import annotations

import json
import os
import pathlib
import sys
import threading
from collections.abc import Sequence
from typing import Any

from stalwart.harness import service
from stalwart.harness.info import get_cluster_info
from stalwart.harness.tensorboard_fetch import Fetcher, shown_of

SYNC_EVERY_S = float(os.environ.get("STALWART_TENSORBOARD_SYNC_S", "5"))
"""How often the event files are brought up to date while TensorBoard runs."""
RELOAD_EVERY_S = 5
"""How often TensorBoard reads its directory again (its --reload_interval)."""


def tensorboard_argv(logdir: pathlib.Path, task_id: str, master_url: str) -> list[str]:
    """TensorBoard's command line for the service wrapper (`{port}` filled in by it).

    TensorBoard has no login of its own, so it listens on 127.0.0.1 when the master is on this machine; else on
    every address, since the master's proxy reaches it at its agent's address. `--path_prefix` is the wrapper's
    `{base_url}` (`/proxy/<task id>/`) without its trailing slash, which TensorBoard refuses."""
    listen = ["--host", "127.0.0.1"] if service.listen_address(master_url) == "127.0.0.1" else ["--bind_all"]
    return [sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir), "--port", "{port}",
            "--path_prefix", f"/proxy/{task_id}", *listen, "--reload_interval", str(RELOAD_EVERY_S),
            "--load_fast", "false"]


def _section() -> dict[str, Any]:
    """The info file's `tensorboard` section (the master writes it for a TensorBoard task only)."""
    path = os.environ.get("STALWART_INFO_FILE")
    if not path or not os.path.exists(path):
        raise SystemExit("stalwart.harness.tensorboard_task runs as a TensorBoard task's entrypoint "
                         "(`stalwart tensorboard start`): it found no info file (STALWART_INFO_FILE)")
    with open(path) as f:
        raw: dict[str, Any] = json.load(f)
    section = raw.get("tensorboard")
    if not isinstance(section, dict):
        raise SystemExit("this task's info file says nothing of a TensorBoard: start one with "
                         "`stalwart tensorboard start EXPERIMENT_ID...`")
    return section


def keep_syncing(fetcher: Fetcher, done: threading.Event) -> None:
    """Until `done`: bring new and changed event files every SYNC_EVERY_S."""
    while not done.wait(SYNC_EVERY_S):
        fetcher.sync()


def main(argv: Sequence[str] | None = None) -> int:
    del argv  # it takes no arguments: what to show is in the info file
    info = get_cluster_info()
    if info is None:
        raise SystemExit("stalwart.harness.tensorboard_task: no cluster info (run it as a TensorBoard task)")
    section = _section()
    logdir = pathlib.Path.cwd() / "tb"
    fetcher = Fetcher(logdir, shown_of(section))
    brought = fetcher.sync()
    print(f"brought {brought} TensorBoard file(s) of experiment(s) "
          f"{', '.join(str(e) for e in section.get('experiment_ids') or [])}", flush=True)
    done = threading.Event()
    threading.Thread(target=keep_syncing, args=(fetcher, done), daemon=True, name="tensorboard-sync").start()
    try:
        return service.serve(tensorboard_argv(logdir, info.task_id, info.master_url), info)
    finally:
        done.set()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
