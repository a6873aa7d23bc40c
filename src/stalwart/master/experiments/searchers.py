"""An experiment's searcher object: built new, kept (a custom one's worker process) or loaded from its snapshot."""

from __future__ import annotations

import threading
from typing import Any

from stalwart.api.errors import ConfigError
from stalwart.api.states import ExperimentState as S
from stalwart.master.experiments import custom_search
from stalwart.master.queries import experiments as experiment_rows
from stalwart.master.queries.rows import Conn, Row
from stalwart.master.service import Master
from stalwart.searcher import Action, SearchMethod, Shutdown, TrialExit, make_search_method


def build(config: dict[str, Any], archive: bytes, label: str = "") -> SearchMethod:
    """A fresh searcher; a custom one starts its worker process from the context `archive`."""
    if config["searcher"]["name"] == "custom":
        return custom_search.start(config, archive, label)
    return make_search_method(config)


def discard(search: SearchMethod, m: Master | None = None) -> None:
    """Let go of a searcher that will not be used (a custom one's process ends)."""
    if isinstance(search, custom_search.SearcherProcess):
        if m is not None:
            with _custom_lock:
                for exp_id in [k for k, v in m.custom_searchers.items() if v is search]:
                    del m.custom_searchers[exp_id]
        search.close()


def adopt(m: Master, exp_id: int, search: SearchMethod) -> None:
    """Keep a custom searcher's process for the experiment's life."""
    if isinstance(search, custom_search.SearcherProcess):
        search.label = f"experiment {exp_id}"
        with _custom_lock:
            m.custom_searchers[exp_id] = search


def forget(m: Master, exp_id: int) -> None:
    """The experiment has ended: stop its custom searcher's process, if it has one."""
    with _custom_lock:
        search = m.custom_searchers.pop(exp_id, None)
    if isinstance(search, custom_search.SearcherProcess):
        search.close()


def close_all(m: Master) -> None:
    """The master is stopping: end every custom searcher's process."""
    with _custom_lock:
        kept = list(m.custom_searchers.values())
    for search in kept:
        if isinstance(search, custom_search.SearcherProcess):
            search.close()


_custom_lock = threading.Lock()


class _Inert(SearchMethod):
    """Stands in for a custom searcher that cannot run: nothing new happens, or the search fails."""

    def __init__(self, state: dict[str, Any] | None, progress: float, failure: str = "") -> None:
        self.state, self.last_progress, self.failure = state, progress, failure

    def _events(self) -> list[Action]:
        return [Shutdown(failure=True, reason=self.failure)] if self.failure else []

    def initial_operations(self) -> list[Action]:
        return self._events()

    def on_validation_completed(self, request_id: str, metrics: dict[str, Any], steps_completed: int) -> list[Action]:
        return self._events()

    def on_trial_exited(self, request_id: str, how: TrialExit) -> list[Action]:
        return self._events()

    def progress(self, trial_progress: dict[str, float]) -> float:
        return self.last_progress

    def snapshot(self) -> dict[str, Any] | None:  # type: ignore[override]  # a searcher that never ran has no state
        return self.state

    def restore(self, snapshot: dict[str, Any]) -> None:
        self.state = snapshot


def _load_custom(m: Master, conn: Conn, exp: Row) -> SearchMethod:
    with _custom_lock:
        kept: SearchMethod | None = m.custom_searchers.get(exp["id"])
    if kept is not None:
        return kept
    if S(exp["state"]).terminal:
        return _Inert(exp["searcher_state"], exp["progress"])
    archive = experiment_rows.context_archive(conn, exp["id"])
    search = None
    try:
        if archive is None:
            raise ConfigError(f"experiment {exp['id']} has no stored context to start its custom searcher from")
        search = custom_search.start(exp["config"], archive, f"experiment {exp['id']}")
        if exp["searcher_state"] is not None:
            search.restore(exp["searcher_state"])
    except ConfigError as exc:
        if isinstance(search, custom_search.SearcherProcess):
            search.close()
        return _Inert(exp["searcher_state"], exp["progress"], failure=f"custom searcher could not be restarted: {exc}")
    adopt(m, exp["id"], search)
    return search


def load(m: Master, conn: Conn, exp_id: int) -> tuple[Row, SearchMethod]:
    exp = experiment_rows.get(conn, exp_id)
    if exp["config"]["searcher"]["name"] == "custom":
        return exp, _load_custom(m, conn, exp)
    search = make_search_method(exp["config"])
    if exp["searcher_state"] is not None:
        search.restore(exp["searcher_state"])
    return exp, search
