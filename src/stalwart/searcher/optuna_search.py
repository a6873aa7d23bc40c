"""`optuna`: model-based search with an Optuna sampler (TPE by default). Optuna is optional.

Fields: `metric`, `smaller_is_better`, `sampler` (`tpe` default, `random`, `cmaes`; `cmaes` also
needs the `cmaes` package), `max_trials`, `max_concurrent_trials` (default 16, 0 = unlimited),
and lengths as `single` (`max_time` + `time_metric`, or the legacy `max_length`; `Create.length`
is that value).

* Trials run as in `random` (concurrency, INVALID_HP replaced and not counted), but each new
  trial's hyperparameters come from `study.ask()` on an in-memory study.
* The value told for a trial is its last reported validation metric. A trial that exits
  COMPLETED / USER_REQUESTED_STOP with a metric is told COMPLETE; one without a metric, ERRORED
  or CANCELED is told FAIL; INVALID_HP is told FAIL and replaced.
* Space: `int` -> IntDistribution, `double` -> FloatDistribution, `log` -> FloatDistribution over
  `base^minval .. base^maxval` with `log=True` (log-uniform is the same in every base),
  `categorical` -> CategoricalDistribution over the value indices (values may be any YAML);
  `const` leaves are filled in, not searched. Parameters are named by their dotted paths.

Determinism. Before every ask the sampler is rebuilt with a seed drawn from the experiment's
generator, so a suggestion depends only on the seed and the study's history. The snapshot holds the
history (params, state, value of every trial, plus the sampler's per-trial system attributes), and
`restore` replays it into a fresh study with `add_trial`: no sampling happens on restore and the
next suggestion is the same as without the restart.

Optuna is imported only when this searcher is built; without it, building raises ConfigError.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from stalwart.api.errors import ConfigError
from stalwart.searcher._common import MetricReader, SearchContext
from stalwart.searcher.base import Action, Create, TrialExit
from stalwart.searcher.random_search import PoolSearch
from stalwart.searcher.space import HParamSpace

SAMPLERS = ("tpe", "random", "cmaes")


def import_optuna() -> Any:
    try:
        import optuna
    except ImportError as err:  # pragma: no cover - exercised only without the extra
        raise ConfigError(
            "searcher.name: 'optuna' needs the optional Optuna package on the master",
            details=["searcher.name: install it with `pip install 'optuna>=4'` "
                     "(and `cmaes` for sampler: cmaes) where the master runs"],
        ) from err
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


class OptunaSearch(PoolSearch):
    def __init__(self, space: HParamSpace, experiment_seed: int | None, reader: MetricReader, *,
                 max_trials: int, max_concurrent: int, length: int | None, sampler: str = "tpe") -> None:
        super().__init__(SearchContext(experiment_seed), max_trials, max_concurrent, length)
        if sampler not in SAMPLERS:
            raise ConfigError(f"searcher.sampler: expected one of {', '.join(SAMPLERS)}, got {sampler!r}",
                              details=[f"searcher.sampler: expected one of {', '.join(SAMPLERS)}, got {sampler!r}"])
        self.optuna = import_optuna()
        if sampler == "cmaes":
            try:
                import cmaes  # noqa: F401
            except ImportError as err:
                raise ConfigError("searcher.sampler: 'cmaes' needs the optional cmaes package",
                                  details=["searcher.sampler: install it with `pip install cmaes`"]) from err
        self.space = space
        self.reader = reader
        self.sampler_name = sampler
        self.minimize = reader.sign > 0
        self.distributions = self._distributions()
        self.records: list[dict] = []  # one per asked trial, in number order
        self.by_rid: dict[str, int] = {}
        self.study = self._new_study()

    # -- optuna plumbing ----------------------------------------------------------------------

    def _distributions(self) -> dict:
        d = self.optuna.distributions
        out: dict = {}
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
        return self.optuna.create_study(
            direction="minimize" if self.minimize else "maximize",
            sampler=self.optuna.samplers.RandomSampler(seed=0),
            study_name="stalwart",
        )

    def _sampler(self, seed: int) -> Any:
        samplers = self.optuna.samplers
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if self.sampler_name == "random":
                return samplers.RandomSampler(seed=seed)
            if self.sampler_name == "cmaes":
                return samplers.CmaEsSampler(seed=seed, warn_independent_sampling=False)
            return samplers.TPESampler(seed=seed)

    def _to_hparams(self, params: Mapping) -> dict:
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

    def next_hparams(self) -> dict:
        self.study.sampler = self._sampler(self.ctx.rng.randint(0, 2**31 - 1))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trial = self.study.ask(self.distributions)
            frozen = self.study.get_trials(deepcopy=False)[trial.number]
        self.records.append({"number": trial.number, "params": dict(trial.params), "state": "RUNNING",
                             "value": None, "last": None, "system_attrs": _jsonable(dict(frozen.system_attrs))})
        return self._to_hparams(trial.params)

    def _create(self) -> Create:
        create = super()._create()
        self.by_rid[create.request_id] = len(self.records) - 1
        self.records[-1]["rid"] = create.request_id
        return create

    def _tell(self, record: dict, state: str, value: float | None) -> None:
        ts = self.optuna.trial.TrialState
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if state == "COMPLETE":
                self.study.tell(record["number"], value)
            else:
                self.study.tell(record["number"], state=ts.FAIL)
            frozen = self.study.get_trials(deepcopy=False)[record["number"]]
        record["state"] = state
        record["value"] = value
        record["system_attrs"] = _jsonable(dict(frozen.system_attrs))

    # -- events -------------------------------------------------------------------------------

    def on_validation_completed(self, request_id: str, metrics: dict, steps_completed: int) -> list[Action]:
        index = self.by_rid.get(request_id)
        if index is None or request_id not in self.live:
            return []
        value = self.reader.value(metrics)
        if value is not None:
            self.records[index]["last"] = value * self.reader.sign  # as reported (not sign-flipped)
        return []

    def on_trial_exited(self, request_id: str, how: TrialExit) -> list[Action]:
        index = self.by_rid.get(request_id)
        if index is not None and request_id in self.live:
            record = self.records[index]
            if how in (TrialExit.COMPLETED, TrialExit.USER_REQUESTED_STOP) and record["last"] is not None:
                self._tell(record, "COMPLETE", record["last"])
            else:
                self._tell(record, "FAIL", None)
        return super().on_trial_exited(request_id, how)

    # -- state --------------------------------------------------------------------------------

    def _state(self) -> dict:
        return {**super()._state(), "records": self.records}

    def _load(self, state: Mapping) -> None:
        super()._load(state)
        self.records = [dict(r) for r in state["records"]]
        self.by_rid = {r["rid"]: i for i, r in enumerate(self.records) if "rid" in r}
        self.study = self._new_study()
        ts = self.optuna.trial.TrialState
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for record in self.records:
                frozen = self.optuna.trial.create_trial(
                    params=record["params"],
                    distributions=self.distributions,
                    state=getattr(ts, record["state"]),
                    value=record["value"] if record["state"] == "COMPLETE" else None,
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
