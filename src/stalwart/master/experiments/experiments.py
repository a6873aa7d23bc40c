"""The experiment state machine: create, pause, activate, cancel, kill, finishing, and (un)archiving."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stalwart.api.errors import ConfigError, InvalidStateError
from stalwart.api.states import ExperimentState as S
from stalwart.config import read_source, secrets, views
from stalwart.config.container_policy import require_allowed
from stalwart.config.experiment import load_experiment_config
from stalwart.context import ArchiveLimits, check_entrypoint, validate_archive
from stalwart.master.allocations import lifecycle
from stalwart.master.experiments import finishing, searchers, searching
from stalwart.master.queries import experiments as experiment_rows, trials as trial_rows
from stalwart.master.scheduling import jobs, managers
from stalwart.master.service import Master, now
from stalwart.searcher import SearchMethod


@dataclass
class NewExperiment:
    """An experiment that passed every check and is ready to store (with its searcher, built)."""

    config: dict[str, Any]
    warnings: list[str]
    resources: dict[str, Any]
    pool: str
    search: SearchMethod
    names_storage: bool = True  # the config names its checkpoint storage (else it took the default)


def read_archive_here(archive: bytes, limits: ArchiveLimits) -> list[str]:
    return validate_archive(archive, limits=limits)


def check_experiment(m: Master, config_text: str, archive: bytes, *,
                     read_archive: Callable[[bytes, ArchiveLimits], list[str]] = read_archive_here,
                     checkpoint_storage: dict[str, Any] | None = None,
                     parent: tuple[str, dict[str, Any]] | None = None) -> NewExperiment:
    """Every check of a new experiment, and its searcher built. No database work: the create route runs it in a
    worker thread, off the event loop, with `read_archive` reading the archive in a worker process.
    `checkpoint_storage`: the default when the config names none (the workspace's; else the master's). `parent`:
    (its name, its stored config) when the config comes from another experiment (fork, continue): a hidden secret
    shown as the placeholder keeps the parent's value (config/secrets.py)."""
    default_storage = checkpoint_storage or m.settings.default_checkpoint_storage()
    expanded = load_experiment_config(config_text, master_defaults={"checkpoint_storage": default_storage,
                                                                    **_default_log_policies(m, config_text)})
    config = secrets.restore(expanded.config, parent[1] if parent else None, parent[0] if parent else "")
    names = set(read_archive(archive, m.settings.context_limits))
    problems = check_entrypoint(config["entrypoint"], names)
    if problems:
        raise ConfigError("the entrypoint cannot run from this context directory", details=problems)
    resources = config.get("resources") or {}
    pool = jobs.resolve_pool(m, resources.get("resource_pool") or None, views.slots_per_trial(config))
    return NewExperiment(config, expanded.warnings, resources, pool, searchers.build(config, archive),
                         names_storage="checkpoint_storage" in read_source(config_text))


def _default_log_policies(m: Master, config_text: str) -> dict[str, Any]:
    """The master's `task_container_defaults.log_policies` (its pool's merged over the cluster's), which the
    experiment's own merge over by name (docs/logs.md)."""
    user = read_source(config_text)
    resources = user.get("resources") if isinstance(user, dict) else None
    pool = resources.get("resource_pool") if isinstance(resources, dict) else None
    cluster = m.settings.cluster
    policies = cluster.container_defaults_section(pool if isinstance(pool, str) and pool
                                                  else cluster.default_compute_pool).get("log_policies")
    return {"log_policies": policies} if policies else {}


def discard(new: NewExperiment) -> None:
    """Let go of a checked experiment that will not be stored (its searcher; a custom one's process ends)."""
    searchers.discard(new.search)


def create_experiment(m: Master, config_text: str, archive: bytes, *, activate: bool, owner: str,
                      validate_only: bool = False, checked: NewExperiment | None = None,
                      project_id: int = 1) -> tuple[int | None, list[str]]:
    """Validate everything first (unless `checked` is given: what `check_experiment` returned); store nothing
    unless all of it is fine."""
    new = checked or check_experiment(m, config_text, archive)
    try:  # what it asks of its container: the pool's task_container_policy (a 400 naming the key)
        require_allowed(new.config, m.settings.cluster.container_policy(new.pool))
        with m.db.begin() as conn:  # a Slurm pool: an OS user to run its jobs as, no image without podman
            managers.check_new_work(m, conn, new.config, new.pool, owner, project_id)
    except ConfigError:
        searchers.discard(new.search)
        raise
    if validate_only:
        searchers.discard(new.search)
        return None, new.warnings
    try:
        exp_id = _store_experiment(m, new.config, config_text, archive, new.search, activate=activate, owner=owner,
                                   resources=new.resources, pool=new.pool, project_id=project_id)
    except BaseException:
        searchers.discard(new.search, m)
        raise
    m.wake_scheduler()
    return exp_id, new.warnings


def _store_experiment(m: Master, config: dict[str, Any], config_text: str, archive: bytes, search: SearchMethod, *,
                      activate: bool, owner: str, resources: dict[str, Any], pool: str, project_id: int) -> int:
    with m.db.begin() as conn:
        exp_id = experiment_rows.insert(
            conn,
            project_id=project_id,
            name=config.get("name") or "",
            description=config.get("description"),
            labels=list(config.get("labels") or []),
            owner=owner,
            config=config,
            config_text=secrets.redact_text(config_text, config),  # shown as given, but never with a secret
            state=S.ACTIVE if activate else S.PAUSED,
            created_at=now(),
        )
        if not config.get("name"):
            config = {**config, "name": f"Experiment {exp_id}"}
            experiment_rows.set_name(conn, exp_id, config["name"], config)
        experiment_rows.insert_context(conn, exp_id, archive)
        jobs.create_job(m, conn, jobs.EXPERIMENT, exp_id, resources, pool)
        searchers.adopt(m, exp_id, search)
        searching.apply(m, conn, exp_id, search, search.initial_operations())
    return exp_id


def pause(m: Master, exp_id: int) -> None:
    with m.db.begin() as conn:
        exp = finishing.experiment(conn, exp_id)
        if exp["state"] == S.PAUSED.value:
            return
        if exp["state"] != S.ACTIVE.value:
            raise InvalidStateError(f"experiment {exp_id} is {exp['state']}; only an ACTIVE experiment can be paused")
        finishing.set_state(conn, exp_id, S.PAUSED)
        finishing.set_trials(conn, exp_id, [S.ACTIVE], S.PAUSED)
        for alloc in finishing.live_allocations(conn, exp_id):
            lifecycle.request_preemption(m, conn, alloc["id"])


def activate(m: Master, exp_id: int) -> None:
    with m.db.begin() as conn:
        exp = finishing.experiment(conn, exp_id)
        if exp["state"] == S.ACTIVE.value:
            return
        if exp["state"] != S.PAUSED.value:
            raise InvalidStateError(f"experiment {exp_id} is {exp['state']}; only a PAUSED experiment can be activated")
        finishing.set_state(conn, exp_id, S.ACTIVE)
        finishing.set_trials(conn, exp_id, [S.PAUSED], S.ACTIVE)
    m.wake_scheduler()


def archive(m: Master, exp_id: int) -> None:
    _set_archived(m, exp_id, True)


def unarchive(m: Master, exp_id: int) -> None:
    _set_archived(m, exp_id, False)


def _set_archived(m: Master, exp_id: int, archived: bool) -> None:
    """Archiving hides a finished experiment from the default lists; as in Determined, only terminal ones."""
    with m.db.begin() as conn:
        exp = finishing.experiment(conn, exp_id)
        if not S(exp["state"]).terminal:
            verb = "archived" if archived else "unarchived"
            raise InvalidStateError(f"experiment {exp_id} is {exp['state']}; only a finished experiment "
                                    f"(COMPLETED, CANCELED or ERROR) can be {verb}")
        experiment_rows.set_archived(conn, exp_id, archived)


def cancel(m: Master, exp_id: int) -> None:
    _stop(m, exp_id, S.STOPPING_CANCELED)


def kill(m: Master, exp_id: int) -> None:
    _stop(m, exp_id, S.STOPPING_KILLED)


def _stop(m: Master, exp_id: int, stopping: S) -> None:
    with m.db.begin() as conn:
        exp = finishing.experiment(conn, exp_id)
        state = S(exp["state"])
        if state.terminal:
            raise InvalidStateError(f"experiment {exp_id} is already {state.value}")
        if stopping is S.STOPPING_CANCELED and state in (S.STOPPING_KILLED, S.STOPPING_CANCELED):
            return  # a cancel of a stopping (cancel or kill) experiment changes nothing
        finishing.set_state(conn, exp_id, stopping)
        live = finishing.live_allocations(conn, exp_id)
        busy = {a["trial_id"] for a in live}
        for alloc in live:
            if stopping is S.STOPPING_KILLED:
                lifecycle.request_kill(m, conn, alloc)
            else:
                lifecycle.request_preemption(m, conn, alloc["id"])
        for trial_id in trial_rows.open_ids(conn, exp_id):
            if trial_id not in busy:
                trial_rows.set_state(conn, trial_id, S.CANCELED, ended_at=now())
        finishing.maybe_finish(m, conn, exp_id)
    m.wake_scheduler()


