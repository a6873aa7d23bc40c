"""Errors user code raises inside a trial (Determined's names)."""


class InvalidHP(Exception):
    """Raise inside `core.init()`'s block when these hyperparameters cannot train; the searcher replaces the trial."""
