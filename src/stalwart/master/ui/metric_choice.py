"""Which metric a chart shows first: the searcher metric, else the first other metric, never a step counter."""

from __future__ import annotations

# progress counters reported beside the metrics (the PyTorch harness adds `batches` and `epochs`): as a chart's
# y they only draw the x axis again
COUNTERS = frozenset({"batches", "epochs", "steps", "step", "steps_completed", "batches_trained", "epochs_trained",
                      "records", "records_trained", "global_step"})


def default_metric(names: list[str], searcher_metric: str | None = None) -> str | None:
    """The searcher metric when it is among `names`, else the first name that is not a counter (None if none)."""
    if searcher_metric and searcher_metric in names:
        return searcher_metric
    return next((n for n in names if n not in COUNTERS), None)


def experiment_default(names: dict[str, list[str]], searcher_metric: str | None) -> dict[str, str | None]:
    """{group, metric} for an experiment's chart: always a validation metric; until one worth drawing exists,
    the searcher metric (so the first validations show at once, and the chart never jumps groups)."""
    pick = default_metric(names.get("validation") or [], searcher_metric)
    return {"group": "validation", "metric": pick if pick is not None else searcher_metric}
