"""TensorBoards: a task that serves the TensorBoard event files of some experiments (or some of their trials).

Starting one checks that each experiment and trial exists (404 naming the first that does not) and that the caller
may view every experiment it shows (`view_experiments`, as the proxy checks each visitor: proxy/target.py), then
starts a command whose config says what it shows (`tensorboard: {experiment_ids, trial_ids}`; `experiment_ids` is
always filled, also for trials, since the proxy decides who may open it from it), with no slots unless the config
asks, running `python3 -m stalwart.harness.tensorboard_task`. Its start order's info file carries each shown
experiment's checkpoint storage with its secrets (`tensorboard.storages`), read from the experiments when the task
starts: the file only the task reads, never its config, its environment or an answer.
"""

from __future__ import annotations

import copy
from typing import Any

from stalwart.api import permissions as P
from stalwart.api.errors import InvalidRequest
from stalwart.master.identity import authz
from stalwart.master.identity.sessions import Identity
from stalwart.master.queries import experiments as experiment_rows, trials as trial_rows
from stalwart.master.queries.rows import Conn, Row
from stalwart.master.service import Master
from stalwart.master.tasks import commands, starting
from stalwart.master.workspaces import placement

KIND = "tensorboard"
ENTRYPOINT = ["python3", "-m", "stalwart.harness.tensorboard_task"]
MAX_SHOWN = 100
"""The most experiments or trials one TensorBoard shows."""


def served(m: Master, exp_ids: list[int], trial_ids: list[int]) -> tuple[list[int], list[int]]:
    """The experiments (those asked for, or those of the trials asked for, each once) and trials a TensorBoard
    shows; 404 for the first unknown one, 400 for none, both kinds or too many."""
    if not exp_ids and not trial_ids:
        raise InvalidRequest("give the experiments (experiment_ids) or trials (trial_ids) the TensorBoard shows")
    if exp_ids and trial_ids:
        raise InvalidRequest("give either experiments (experiment_ids) or trials (trial_ids), not both: a "
                             "TensorBoard shows every trial of its experiments, or just the trials named")
    if len(exp_ids) + len(trial_ids) > MAX_SHOWN:
        raise InvalidRequest(f"a TensorBoard shows at most {MAX_SHOWN} experiments and trials; start several")
    experiments = list(dict.fromkeys(exp_ids))
    with m.db.begin() as conn:
        for exp_id in experiments:
            experiment_rows.get(conn, exp_id)  # 404 "experiment 99 not found"
        for trial_id in dict.fromkeys(trial_ids):
            experiments.append(int(trial_rows.get(conn, trial_id)["experiment_id"]))
    return list(dict.fromkeys(experiments)), list(dict.fromkeys(trial_ids))


CODE_KEYS = ("bind_mounts", "environment.image", "environment.environment_variables", "environment.pod_spec")
"""What would let a TensorBoard's starter run code of their own beside the experiments' storage credentials."""


def _refuse_own_code(config: dict[str, Any]) -> None:
    """A TensorBoard runs Stalwart's program with the storage credentials of experiments its starter may only view:
    no image, mounts, variables or pod spec of theirs (a pool's task container defaults still apply)."""
    environment = config.get("environment") or {}
    given = [key for key in CODE_KEYS if (environment.get(key.partition(".")[2]) if key.startswith("environment.")
                                          else config.get(key))]
    if given:
        raise InvalidRequest(f"{given[0]}: a TensorBoard takes no {given[0].rpartition('.')[2].replace('_', ' ')} of "
                             "its own: it runs Stalwart's TensorBoard with the experiments' storage credentials "
                             "(drop the key, or start it without the template that sets it)")


def _shape(exp_ids: list[int], trial_ids: list[int]) -> starting.Shape:
    def shape(config: dict[str, Any]) -> dict[str, Any]:
        _refuse_own_code(config)
        cfg = copy.deepcopy(config)
        cfg["tensorboard"] = {"experiment_ids": exp_ids, "trial_ids": trial_ids}
        cfg["entrypoint"] = list(ENTRYPOINT)
        resources = cfg.setdefault("resources", {}) or {}
        resources.setdefault("slots", 0)  # a TensorBoard needs no GPU
        cfg["resources"] = resources
        shown = ", ".join(f"trial {t}" for t in trial_ids) if trial_ids else \
            ", ".join(f"experiment {e}" for e in exp_ids)
        cfg["description"] = cfg.get("description") or f"TensorBoard ({shown})"[:200]
        return cfg
    return shape


async def start(m: Master, ident: Identity, owner: str, config: dict[str, Any], *, exp_ids: list[int],
                trial_ids: list[int], template: str | None) -> int:
    """Start a TensorBoard of `exp_ids` and `trial_ids` for `owner`; its id. The caller must view every experiment."""
    experiments, trials = served(m, exp_ids, trial_ids)
    if template is None:  # create_commands first, as every task's start says (with a template: once merged)
        with m.db.begin() as conn:
            project = placement.project_for(conn, config)
        authz.require(m, ident, P.CREATE_COMMANDS, placement.target(project))
    for target in authz.targets_of(m, [("exp_id", exp_id) for exp_id in experiments]):
        authz.require(m, ident, P.VIEW_EXPERIMENTS, target)
    config = {k: v for k, v in config.items() if k not in ("entrypoint", "tensorboard")}  # this module's to say
    return await starting.start(m, ident, owner, config, template=template, context=None, kind=KIND,
                                shape=_shape(experiments, trials))


def storages_info(conn: Conn, task: Row) -> dict[str, Any]:
    """What a TensorBoard's info file adds (`tensorboard`): the experiments and trials it shows, and each shown
    experiment's checkpoint storage with its secrets (`storages`: experiment id -> checkpoint_storage)."""
    shown = task["config"].get("tensorboard") or {}
    exp_ids = [int(e) for e in shown.get("experiment_ids") or []]
    storages = {str(e): experiment_rows.get(conn, e)["config"].get("checkpoint_storage") for e in exp_ids}
    return {"tensorboard": {"experiment_ids": exp_ids, "trial_ids": [int(t) for t in shown.get("trial_ids") or []],
                            "storages": storages}}


commands.INFO_EXTRAS[KIND] = storages_info
