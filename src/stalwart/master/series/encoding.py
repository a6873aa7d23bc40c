"""Series answers as bytes: compact JSON (an experiment's y values rounded to 6 significant digits), or the
float32 binary of format=f32 (routes/series.py documents its layout)."""

from __future__ import annotations

import json
import math
import sys
from array import array
from typing import TypedDict


class TrialBody(TypedDict):
    """One trial's series (api.models.series.TrialSeries)."""

    trial_id: int
    group: str
    metric: str | None
    x_axis: str
    metrics: list[str]
    raw_points: int
    points: int
    downsampled: bool
    source: str
    x: list[float]
    y: list[float]


class TrialYs(TypedDict):
    """One trial's y values on an experiment's grid (None: no point in that slot)."""

    trial_id: int
    raw_points: int
    y: list[float | None]


class ExperimentBody(TypedDict):
    """An experiment's trials on one x grid (api.models.series.ExperimentSeries)."""

    experiment_id: int
    group: str
    metric: str | None
    x_axis: str
    metrics: list[str]
    max_points: int
    source: str
    x: list[float]
    trials: list[TrialYs]


def dumps(data: TrialBody | ExperimentBody) -> bytes:
    """Long number lists straight to JSON (FastAPI's encoder would walk every element)."""
    return json.dumps(data, separators=(",", ":")).encode()


def rounded(ys: list[float | None]) -> list[float | None]:
    """y values to 6 significant digits of the series' largest magnitude: a third of the JSON, same pixels."""
    top = max((abs(v) for v in ys if v is not None), default=0.0)
    if top == 0.0:
        return ys
    digits = 6 - int(math.floor(math.log10(top)))
    return [None if v is None else round(v, digits) for v in ys]


def encode(body: ExperimentBody, fmt: str) -> bytes:
    """An experiment's series as JSON (fmt "json") or as float32 binary (fmt "f32"): a little-endian uint32 n,
    n bytes of JSON (the body without the y values, plus `slots` and `encoding`), zero padding to a multiple
    of 4, then the float32 y values trial after trial (NaN: no point)."""
    if fmt == "json":
        for tr in body["trials"]:
            tr["y"] = rounded(tr["y"])
        return dumps(body)
    nan = float("nan")
    values = array("f", [nan if v is None else v for tr in body["trials"] for v in tr["y"]])
    if sys.byteorder == "big":
        values.byteswap()
    trials = [{"trial_id": tr["trial_id"], "raw_points": tr["raw_points"]} for tr in body["trials"]]
    head = json.dumps({**body, "trials": trials, "slots": len(body["x"]), "encoding": "f32"},
                      separators=(",", ":")).encode()
    pad = b"\0" * (-len(head) % 4)
    return len(head).to_bytes(4, "little") + head + pad + values.tobytes()
