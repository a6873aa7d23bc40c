"""Typed searcher settings: one frozen dataclass per searcher kind, built from a checked `searcher` section.

The `searcher` section is checked and defaulted once, by the tables in `stalwart.config.searcher`;
`settings_of` turns the checked section into these objects, which the searchers take as they are.
No field here has a default of its own: every value comes from the checked section.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass(frozen=True)
class TrialLength:
    """A trial's full training length: `units` of `time_metric` (`max_time` + `time_metric`, or `max_length`)."""

    units: int
    time_metric: str


@dataclass(frozen=True, kw_only=True)
class SearcherSettings:
    """The fields every searcher shares; `metric` is always set (the config refuses a searcher without it)."""

    name: ClassVar[str] = ""
    metric: str
    smaller_is_better: bool
    source_trial_id: int | None
    source_checkpoint_uuid: str | None


@dataclass(frozen=True, kw_only=True)
class SingleSettings(SearcherSettings):
    name: ClassVar[str] = "single"
    length: TrialLength | None


@dataclass(frozen=True, kw_only=True)
class RandomSettings(SearcherSettings):
    name: ClassVar[str] = "random"
    max_trials: int
    max_concurrent_trials: int
    length: TrialLength | None


@dataclass(frozen=True, kw_only=True)
class GridSettings(SearcherSettings):
    name: ClassVar[str] = "grid"
    max_concurrent_trials: int
    length: TrialLength | None


@dataclass(frozen=True, kw_only=True)
class HalvingSettings(SearcherSettings):
    """The ASHA family: `async_halving`, `adaptive_asha`, `asha_promotion`."""

    max_trials: int
    divisor: float
    max_concurrent_trials: int
    stop_once: bool | None  # null unless set: only an explicit `false` asks for 0.37's promotions
    sampler: str
    length: TrialLength

    @property
    def promotions(self) -> bool:
        """Promotion-based ASHA (pause and resume) instead of 0.38's stop-based one."""
        return self.name == "asha_promotion" or self.stop_once is False


@dataclass(frozen=True, kw_only=True)
class AsyncHalvingSettings(HalvingSettings):
    name: ClassVar[str] = "async_halving"
    num_rungs: int


@dataclass(frozen=True, kw_only=True)
class AdaptiveAshaSettings(HalvingSettings):
    name: ClassVar[str] = "adaptive_asha"
    mode: str
    max_rungs: int
    bracket_rungs: tuple[int, ...]


@dataclass(frozen=True, kw_only=True)
class AshaPromotionSettings(AdaptiveAshaSettings):
    name: ClassVar[str] = "asha_promotion"


@dataclass(frozen=True, kw_only=True)
class HyperbandSettings(SearcherSettings):
    name: ClassVar[str] = "hyperband"
    max_trials: int | None
    divisor: float
    max_rungs: int
    max_concurrent_trials: int
    length: TrialLength


@dataclass(frozen=True, kw_only=True)
class PBTSettings(SearcherSettings):
    name: ClassVar[str] = "pbt"
    population_size: int
    num_rounds: int
    length_per_round: int
    time_metric: str
    truncate_fraction: float
    resample_probability: float
    perturb_factor: float


@dataclass(frozen=True, kw_only=True)
class OptunaSettings(SearcherSettings):
    name: ClassVar[str] = "optuna"
    max_trials: int
    sampler: str
    max_concurrent_trials: int
    length: TrialLength | None


@dataclass(frozen=True, kw_only=True)
class CustomSettings(SearcherSettings):
    name: ClassVar[str] = "custom"
    unit: str
    search_method: str | None
    length: TrialLength | None


def trial_length(section: Mapping[str, Any]) -> TrialLength | None:
    """`max_time` in `time_metric` units when both are set, else the legacy `max_length`, else None."""
    if section.get("max_time") is not None and section.get("time_metric") is not None:
        return TrialLength(int(section["max_time"]), str(section["time_metric"]))
    legacy = section.get("max_length")
    if not isinstance(legacy, Mapping) or len(legacy) != 1:
        return None
    ((unit, units),) = legacy.items()
    return TrialLength(int(units), str(unit))


def round_length(section: Mapping[str, Any]) -> tuple[int, str]:
    """PBT's `(length_per_round, time_metric)`: a `{unit: n}` length gives its unit unless `time_metric` is set."""
    raw = section["length_per_round"]
    time_metric = section.get("time_metric")
    if isinstance(raw, Mapping):
        ((unit, raw),) = raw.items()
        time_metric = time_metric or unit
    return int(raw), str(time_metric or "batches")


def _common(s: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "metric": str(s["metric"]),
        "smaller_is_better": bool(s["smaller_is_better"]),
        "source_trial_id": s["source_trial_id"],
        "source_checkpoint_uuid": s["source_checkpoint_uuid"],
    }


def _required_length(s: Mapping[str, Any]) -> TrialLength:
    length = trial_length(s)
    if length is None:  # the checks refuse such a section; reaching here is a bug, not bad input
        raise AssertionError(f"searcher {s['name']!r}: no length in a checked section")
    return length


def _halving(s: Mapping[str, Any]) -> dict[str, Any]:
    return {
        **_common(s),
        "max_trials": int(s["max_trials"]),
        "divisor": float(s["divisor"]),
        "max_concurrent_trials": int(s["max_concurrent_trials"]),
        "stop_once": s["stop_once"],
        "sampler": str(s["sampler"]),
        "length": _required_length(s),
    }


def _adaptive(s: Mapping[str, Any]) -> dict[str, Any]:
    return {**_halving(s), "mode": str(s["mode"]), "max_rungs": int(s["max_rungs"]),
            "bracket_rungs": tuple(int(r) for r in s["bracket_rungs"])}


def _pbt(s: Mapping[str, Any]) -> PBTSettings:
    length, time_metric = round_length(s)
    replace, explore = s["replace_function"], s["explore_function"]
    return PBTSettings(
        **_common(s), population_size=int(s["population_size"]), num_rounds=int(s["num_rounds"]),
        length_per_round=length, time_metric=time_metric,
        truncate_fraction=float(replace["truncate_fraction"]),
        resample_probability=float(explore["resample_probability"]),
        perturb_factor=float(explore["perturb_factor"]),
    )


def settings_of(s: Mapping[str, Any]) -> SearcherSettings | None:
    """The typed settings of a checked `searcher` section (None for the end-of-life names, parsed only)."""
    name = s.get("name")
    if name == "single":
        return SingleSettings(**_common(s), length=trial_length(s))
    if name == "random":
        return RandomSettings(**_common(s), max_trials=int(s["max_trials"]),
                              max_concurrent_trials=int(s["max_concurrent_trials"]), length=trial_length(s))
    if name == "grid":
        return GridSettings(**_common(s), max_concurrent_trials=int(s["max_concurrent_trials"]), length=trial_length(s))
    if name == "async_halving":
        return AsyncHalvingSettings(**_halving(s), num_rungs=int(s["num_rungs"]))
    if name == "adaptive_asha":
        return AdaptiveAshaSettings(**_adaptive(s))
    if name == "asha_promotion":
        return AshaPromotionSettings(**_adaptive(s))
    if name == "hyperband":
        max_trials = s["max_trials"]
        return HyperbandSettings(**_common(s), max_trials=None if max_trials is None else int(max_trials),
                                 divisor=float(s["divisor"]), max_rungs=int(s["max_rungs"]),
                                 max_concurrent_trials=int(s["max_concurrent_trials"]), length=_required_length(s))
    if name == "pbt":
        return _pbt(s)
    if name == "optuna":
        return OptunaSettings(**_common(s), max_trials=int(s["max_trials"]), sampler=str(s["sampler"]),
                              max_concurrent_trials=int(s["max_concurrent_trials"]), length=trial_length(s))
    if name == "custom":
        method = s["search_method"]
        return CustomSettings(**_common(s), unit=str(s["unit"]), search_method=None if method is None else str(method),
                              length=trial_length(s))
    return None
