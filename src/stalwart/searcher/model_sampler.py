"""Model-based hyperparameter suggestions from an Optuna sampler, for any searcher that creates trials.

`OptunaModel` keeps an in-memory Optuna study beside a searcher: `ask(rid)` gives the hyperparameters
of a new trial, `report(rid, step, value)` records a result the trial reached (an intermediate value),
and `finish(rid, state, value)` closes it as COMPLETE, PRUNED or FAIL. The study minimises unless
built with `minimize=False` (the early-stopping searchers pass smaller-is-better values).

Used by `optuna` (every trial runs to the end; COMPLETE with its last value) and, selected by
`searcher.sampler: tpe`, by the early-stopping searchers (`adaptive_asha`, `async_halving`,
`asha_promotion`): each rung result is an intermediate value at that rung's length, a trial that
reaches the last rung is COMPLETE, one stopped below it is PRUNED. TPE ranks pruned trials below
completed ones, by the furthest rung reached and then by value, so the model learns from the cheap
low-rung results as the search goes (the idea of BOHB, Falkner et al. 2018, with ASHA's rungs).

Determinism. Before every ask the sampler is rebuilt with a seed drawn from the searcher's generator,
so a suggestion depends only on that seed and the study's history. `state()` holds the history
(params, state, value, intermediate values and the sampler's system attributes of every trial) as
JSON; `load()` replays it into a fresh study with `add_trial`: no sampling happens on restore and the
next suggestion is the same as without the restart.

Optuna is imported only when a model is built; without it, building raises ConfigError.
"""

from __future__ import annotations

import random
import warnings
from collections.abc import Mapping
from typing import Any

from stalwart.api.errors import ConfigError
from stalwart.searcher.space import HParamSpace

SAMPLERS = ("tpe", "random", "cmaes")
FINISHED = ("COMPLETE", "PRUNED", "FAIL")


def import_optuna(what: str = "searcher.name: 'optuna'") -> Any:
    try:
        import optuna
    except ImportError as err:  # pragma: no cover - exercised only without the extra
        raise ConfigError(
            f"{what} needs the optional Optuna package on the master",
            details=[f"{what}: install it with `pip install 'optuna>=4'` "
                     "(and `cmaes` for sampler: cmaes) where the master runs"],
        ) from err
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


class OptunaModel:
    """An Optuna study fed by a searcher's events; see the module docstring."""

    def __init__(self, space: HParamSpace, rng: random.Random, sampler: str = "tpe", *, minimize: bool = True,
                 what: str = "searcher.name: 'optuna'") -> None:
        self.optuna = import_optuna(what)  # `sampler` is one of SAMPLERS: the config checked it
        if sampler == "cmaes":
            try:
                import cmaes  # noqa: F401
            except ImportError as err:
                raise ConfigError("searcher.sampler: 'cmaes' needs the optional cmaes package",
                                  details=["searcher.sampler: install it with `pip install cmaes`"]) from err
        self.space = space
        self.rng = rng
        self.sampler_name = sampler
        self.minimize = minimize
        self.distributions = self._distributions()
        self.records: list[dict[str, Any]] = []  # one per asked trial, in number order
        self.by_rid: dict[str, int] = {}
        self.handles: dict[int, Any] = {}  # number -> optuna Trial of a trial still running
        self.study = self._new_study()

    # -- optuna plumbing ----------------------------------------------------------------------

    def _distributions(self) -> dict[str, Any]:
        d = self.optuna.distributions
        out: dict[str, Any] = {}
        for leaf in self.space.searchable:
            spec = leaf.spec
            if leaf.kind == "int":
                out[leaf.name] = d.IntDistribution(int(spec["minval"]), int(spec["maxval"]))
            elif leaf.kind == "double":
                out[leaf.name] = d.FloatDistribution(float(spec["minval"]), float(spec["maxval"]))
            elif leaf.kind == "log":
                out[leaf.name] = d.FloatDistribution(leaf.low(), leaf.high(), log=True)
            else:
                out[leaf.name] = d.CategoricalDistribution(list(range(len(spec["vals"]))))
        return out

    def _new_study(self) -> Any:
        return self.optuna.create_study(direction="minimize" if self.minimize else "maximize",
                                        sampler=self.optuna.samplers.RandomSampler(seed=0), study_name="stalwart")

    def _sampler(self, seed: int) -> Any:
        samplers = self.optuna.samplers
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if self.sampler_name == "random":
                return samplers.RandomSampler(seed=seed)
            if self.sampler_name == "cmaes":
                return samplers.CmaEsSampler(seed=seed, warn_independent_sampling=False)
            return samplers.TPESampler(seed=seed)

    def _to_hparams(self, params: Mapping[str, Any]) -> dict[str, Any]:
        values = {}
        for leaf in self.space.searchable:
            value = params[leaf.name]
            if leaf.kind == "categorical":
                value = leaf.spec["vals"][int(value)]
            elif leaf.kind == "int":
                value = int(value)
            else:
                value = float(value)
            values[leaf.path] = value
        return self.space.build(values)

    def _frozen(self, number: int) -> Any:
        return self.study.get_trials(deepcopy=False)[number]

    def _handle(self, number: int) -> Any:
        handle = self.handles.get(number)
        if handle is None:  # a trial replayed by load(): its Trial object is rebuilt on first use (by storage id)
            handle = self.handles[number] = self.optuna.trial.Trial(self.study, self._frozen(number)._trial_id)
        return handle

    # -- the searcher's side ------------------------------------------------------------------

    def ask(self, rid: str) -> dict[str, Any]:
        """Hyperparameters for the new trial `rid`."""
        self.study.sampler = self._sampler(self.rng.randint(0, 2**31 - 1))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trial = self.study.ask(self.distributions)
        self.handles[trial.number] = trial
        self.by_rid[rid] = len(self.records)
        self.records.append({"number": trial.number, "rid": rid, "params": dict(trial.params), "state": "RUNNING",
                             "value": None, "last": None, "steps": {},
                             "system_attrs": _jsonable(dict(self._frozen(trial.number).system_attrs))})
        return self._to_hparams(trial.params)

    def record(self, rid: str) -> dict[str, Any] | None:
        index = self.by_rid.get(rid)
        return None if index is None else self.records[index]

    def report(self, rid: str, step: float, value: float) -> None:
        """`rid` reached `value` at `step` (ignored once it is finished; the first value per step counts)."""
        record = self.record(rid)
        if record is None or record["state"] != "RUNNING":
            return
        record["last"] = value
        whole = int(float(step))  # Optuna's steps are integers: a fractional time counts at its whole part
        if str(whole) in record["steps"]:
            return
        record["steps"][str(whole)] = value
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self._handle(record["number"]).report(value, whole)

    def finish(self, rid: str, state: str, value: float | None = None) -> None:
        """Close `rid` as COMPLETE (with `value`), PRUNED (its reported values stay) or FAIL; once."""
        if state not in FINISHED:
            raise ValueError(f"state: expected one of {FINISHED}, got {state!r}")
        record = self.record(rid)
        if record is None or record["state"] != "RUNNING":
            return
        if state == "COMPLETE" and value is None:
            state = "FAIL"
        ts = self.optuna.trial.TrialState
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if state == "COMPLETE":
                self.study.tell(record["number"], value)
            else:
                self.study.tell(record["number"], state=getattr(ts, state))
        self.handles.pop(record["number"], None)
        record["state"] = state
        record["value"] = value if state == "COMPLETE" else None
        record["system_attrs"] = _jsonable(dict(self._frozen(record["number"]).system_attrs))

    def close(self, rid: str, *, invalid: bool = False) -> None:
        """Close `rid` that ended without a final result: PRUNED with what it reported, FAIL if nothing (or if
        its hyperparameters were invalid)."""
        record = self.record(rid)
        if record is not None:
            self.finish(rid, "PRUNED" if record["steps"] and not invalid else "FAIL")

    # -- state --------------------------------------------------------------------------------

    def state(self) -> list[dict[str, Any]]:
        return self.records

    def load(self, records: list[Mapping[str, Any]]) -> None:
        self.records = [{**r, "steps": dict(r.get("steps") or {})} for r in records]  # never aliases the snapshot
        self.by_rid = {r["rid"]: i for i, r in enumerate(self.records) if "rid" in r}
        self.handles = {}
        self.study = self._new_study()
        ts = self.optuna.trial.TrialState
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for record in self.records:
                state = getattr(ts, record["state"])
                frozen = self.optuna.trial.create_trial(
                    params=record["params"],
                    distributions=self.distributions,
                    state=state,
                    value=record["value"] if record["state"] == "COMPLETE" else None,
                    intermediate_values={int(k): v for k, v in record["steps"].items()},
                    system_attrs=record.get("system_attrs") or {},
                )
                self.study.add_trial(frozen)


def _jsonable(value: Any) -> Any:
    """System attributes as plain JSON (optuna keeps them JSON-serialisable already)."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)
