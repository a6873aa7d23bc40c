"""Searchers: pure state machines turning trial events into create/stop/pause/resume/shutdown actions."""

from stalwart.searcher.base import Action, Create, Pause, Resume, SearchMethod, Shutdown, Stop, TrialExit
from stalwart.searcher.factory import SUPPORTED, make_search_method
from stalwart.searcher.simulate import Preview, SimulatedExit, SimulationResult, preview, simulate
from stalwart.searcher.space import HParamSpace

__all__ = [
    "SUPPORTED",
    "Action",
    "Create",
    "HParamSpace",
    "Pause",
    "Preview",
    "Resume",
    "SearchMethod",
    "Shutdown",
    "SimulatedExit",
    "SimulationResult",
    "Stop",
    "TrialExit",
    "make_search_method",
    "preview",
    "simulate",
]
