"""Searchers: pure state machines turning trial events into create/stop/shutdown actions."""

from stalwart.searcher.base import Action, Create, SearchMethod, Shutdown, Stop, TrialExit
from stalwart.searcher.factory import make_search_method

__all__ = ["Action", "Create", "SearchMethod", "Shutdown", "Stop", "TrialExit", "make_search_method"]
