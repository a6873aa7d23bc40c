"""Which checkpoints a checkpoint GC policy keeps, and why (pure: no database, no storage).

Determined's policy keeps the union of three sets of an experiment's COMPLETED checkpoints: the
`save_experiment_best` best of the whole experiment and the `save_trial_best` best of each trial, both by the
searcher metric's validation at the checkpoint's step (a checkpoint with no such number is never "best"), and the
`save_trial_latest` latest of each trial (by steps, then report time). Every other checkpoint is the policy's to
delete. Ties are broken the same way every time (trial id, steps, uuid), so a dry run lists exactly what applying
the policy then deletes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, NamedTuple

Ckpt = dict[str, Any]
"""A checkpoint row as a dict, with "metric": the searcher metric's validation at its step (or None)."""


class Policy(NamedTuple):
    """The three numbers of `checkpoint_storage` that say what GC keeps."""

    save_experiment_best: int
    save_trial_best: int
    save_trial_latest: int


def is_number(value: object) -> bool:
    """A metric value a checkpoint can be ranked by (not a bool, not NaN)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)


def best(ckpts: Iterable[Ckpt], n: int, smaller_is_better: bool) -> list[Ckpt]:
    """The `n` best checkpoints by their metric, best first; those without a number are never among them."""
    scored = [c for c in ckpts if is_number(c["metric"])]
    sign = 1.0 if smaller_is_better else -1.0
    scored.sort(key=lambda c: (sign * c["metric"], c["trial_id"], c["steps_completed"], c["uuid"]))
    return scored[:max(n, 0)]


def latest(ckpts: Iterable[Ckpt], n: int) -> list[Ckpt]:
    """The `n` latest checkpoints (most steps, then latest report), latest first."""
    ordered = sorted(ckpts, key=lambda c: (c["steps_completed"], c["report_time"], c["uuid"]), reverse=True)
    return ordered[:max(n, 0)]


def by_trial(ckpts: Iterable[Ckpt]) -> dict[int, list[Ckpt]]:
    """The checkpoints grouped by trial id, in trial id order."""
    grouped: dict[int, list[Ckpt]] = {}
    for c in sorted(ckpts, key=lambda c: c["trial_id"]):
        grouped.setdefault(c["trial_id"], []).append(c)
    return grouped


def _ranked(label: str, chosen: list[Ckpt]) -> list[tuple[str, str]]:
    """(uuid, reason) for each chosen checkpoint: "LABEL" for the first, "LABEL (2nd)"... after it."""
    return [(c["uuid"], label if i == 1 else f"{label} ({_ordinal(i)})") for i, c in enumerate(chosen, 1)]


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def keep_reasons(ckpts: list[Ckpt], policy: Policy, smaller_is_better: bool) -> dict[str, str]:
    """uuid -> why the policy keeps that checkpoint (its reasons joined by "; "), for each checkpoint it keeps; the
    checkpoints not in the answer are the ones it deletes."""
    found: list[tuple[str, str]] = _ranked("best of the experiment",
                                           best(ckpts, policy.save_experiment_best, smaller_is_better))
    for trial_id, mine in by_trial(ckpts).items():
        found += _ranked(f"best of trial {trial_id}", best(mine, policy.save_trial_best, smaller_is_better))
        found += _ranked(f"latest of trial {trial_id}", latest(mine, policy.save_trial_latest))
    reasons: dict[str, list[str]] = {}
    for uuid, reason in found:
        reasons.setdefault(uuid, []).append(reason)
    return {uuid: "; ".join(why) for uuid, why in reasons.items()}


def to_delete(ckpts: list[Ckpt], keep: dict[str, str]) -> list[Ckpt]:
    """The checkpoints not kept, by trial and steps."""
    return sorted((c for c in ckpts if c["uuid"] not in keep), key=lambda c: (c["trial_id"], c["steps_completed"],
                                                                              c["uuid"]))
