"""The Trainer's length (`max_steps` or `num_train_epochs`) against the searcher's, as Determined 0.38 checks it.

The Trainer decides how long a trial trains. A searcher length given as well must say the same thing: the
deprecated `max_length: {batches: N}` / `{epochs: N}`, or `max_time` in `time_metric` units for the stop-based
ASHAs (`adaptive_asha`, `async_halving`) when the time metric is `batches` or `epochs`. A unitless `max_length`
is refused.
"""

from __future__ import annotations

from typing import Any, Protocol


class TrainerLength(Protocol):
    """The two fields of `transformers.TrainingArguments` that set how long the Trainer trains."""

    max_steps: int
    num_train_epochs: float


STOP_BASED_ASHA = ("adaptive_asha", "async_halving")


def trainer_length(args: TrainerLength) -> tuple[str, float, str]:
    """(unit, length, the argument that set it): batches from `max_steps` when set, else epochs."""
    if args.max_steps > -1:
        return "batches", args.max_steps, "--max_steps"
    return "epochs", args.num_train_epochs, "--num_train_epochs"


def check_searcher_config(searcher: dict[str, Any], args: TrainerLength) -> None:
    """Raise ValueError when the searcher's configured length disagrees with the Trainer's."""
    unit, length, flag = trainer_length(args)
    max_length = searcher.get("max_length")
    if isinstance(max_length, int) and not isinstance(max_length, bool):
        raise ValueError(
            "HF trainer does not use the deprecated unitless searcher.max_length; remove it and set the length "
            f"with {flag} alone, so that the training length is not specified twice"
        )
    if isinstance(max_length, dict) and max_length:
        search_unit, search_length = next(iter(max_length.items()))
        if (search_unit, search_length) != (unit, length):
            raise ValueError(
                f"HF trainer units do not match the configured searcher.max_length ({unit}={length} != "
                f"{search_unit}={search_length}); searcher.max_length is deprecated: remove it and set the "
                f"length with {flag} alone"
            )
        return
    if searcher.get("name") in STOP_BASED_ASHA:
        time_metric, max_time = searcher.get("time_metric"), searcher.get("max_time")
        if time_metric in ("batches", "epochs") and (time_metric, max_time) != (unit, length):
            raise ValueError(
                f"HF trainer units do not match the max_time of the {searcher['name']} searcher ({unit}={length} "
                f"!= {time_metric}={max_time}); change searcher.max_time or {flag} so that they agree"
            )
