"""`determined.searcher`: Determined 0.37's custom searcher API (SearchMethod and its operations).

A class written against it runs with `searcher: {name: custom, search_method: "module:Class"}`;
the master runs it in a process of its own. Determined's runners (`LocalSearchRunner`,
`RemoteSearchRunner`) are not needed for that and are refused with a message saying what to do.
"""

from __future__ import annotations

from typing import NoReturn

from stalwart.searcher.custom import (
    Close,
    Create,
    ExitedReason,
    Operation,
    Progress,
    SearcherState,
    Shutdown,
    UserSearchMethod as SearchMethod,
    ValidateAfter,
)

_RUNNERS = {"LocalSearchRunner", "RemoteSearchRunner", "SearchRunner"}


def __getattr__(name: str) -> NoReturn:
    if name in _RUNNERS:
        raise ImportError(
            f"determined.searcher.{name} is not implemented by Stalwart: instead of running a search runner, "
            "set `searcher: {name: custom, search_method: 'module:Class'}` in the experiment config and the "
            "master runs your SearchMethod in a process of its own")
    raise AttributeError(f"module 'determined.searcher' (Stalwart's implementation) has no attribute '{name}'")


__all__ = ["Close", "Create", "ExitedReason", "Operation", "Progress", "SearchMethod", "SearcherState",
           "Shutdown", "ValidateAfter"]
