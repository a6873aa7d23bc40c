"""Read context archives in worker processes, so that a big or hostile one never holds the master's event loop.

tarfile parses each header in Python: read in a thread, a 100,000-member archive holds the GIL for seconds and
the event loop waits for it at every turn (GET /api/v1/master took up to 1.1 s with four such archives checked
at once). A worker process shares no GIL with the master; the route's thread just waits for its answer.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from stalwart.api.errors import StalwartError
from stalwart.context import ArchiveLimits, validate_archive

_WORKERS = 2
_TASKS_PER_WORKER = 50  # then a fresh process: memory a huge archive left behind goes back to the system

_pool: ProcessPoolExecutor | None = None
_pool_lock = threading.Lock()


PARENT_CHECK_S = 1.0
"""How often a worker looks whether the master that started it is still there."""


def _worker_init() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the master, which then ends its workers
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), name="parent-watch", daemon=True).start()


def _exit_with_parent(parent: int) -> None:
    """End this worker once its master is gone. A master that was SIGKILLed cannot end its workers, and they would
    wait for work forever: each holds both ends of its own call queue's pipe, so it never reads an end of file."""
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_S)
    os._exit(0)


def _get_pool() -> ProcessPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ProcessPoolExecutor(max_workers=min(_WORKERS, os.cpu_count() or 1),
                                        mp_context=multiprocessing.get_context("spawn"),
                                        initializer=_worker_init, max_tasks_per_child=_TASKS_PER_WORKER)
        return _pool


def _drop_pool(pool: ProcessPoolExecutor) -> None:
    global _pool
    with _pool_lock:
        if _pool is pool:
            _pool = None
    pool.shutdown(wait=False, cancel_futures=True)


def archive_names(archive: bytes, limits: ArchiveLimits) -> list[str]:
    """`validate_archive(archive, limits=limits)` in a worker process; blocks the calling thread (not the GIL)."""
    pool = _get_pool()
    try:
        return pool.submit(validate_archive, archive, limits=limits).result()
    except BrokenProcessPool:
        _drop_pool(pool)
        raise StalwartError("the master's worker process reading the context archive died; try again") from None


def shutdown() -> None:
    """End the worker processes (the master is stopping)."""
    with _pool_lock:
        pool = _pool
    if pool is not None:
        _drop_pool(pool)
