"""custom: a Determined 0.37-style user search method wrapped by CustomSearch."""

import pathlib
import uuid

import pytest

from searcher_helpers import expand, roundtrip
from stalwart.searcher import Create, Pause, Resume, Shutdown, Stop, TrialExit, make_search_method
from stalwart.searcher.custom import (
    Close,
    Create as UserCreate,
    CustomSearch,
    ExitedReason,
    Progress,
    Shutdown as UserShutdown,
    UserSearchMethod,
    ValidateAfter,
)

CONFIG = expand({"searcher": {"name": "custom", "metric": "loss", "unit": "batches"}})


class TwoStep(UserSearchMethod):
    """Creates 2 trials for 10 batches; continues the better one to 30; shuts down after closes."""

    def __init__(self):
        self.ids = [uuid.UUID(int=1), uuid.UUID(int=2)]
        self.results = {}
        self.calls = []

    def initial_operations(self, state):
        ops = []
        for i, rid in enumerate(self.ids):
            ops += [UserCreate(rid, {"lr": 0.1 * (i + 1)}, None), ValidateAfter(rid, 10)]
        return ops

    def on_trial_created(self, state, request_id):
        self.calls.append(("created", request_id))
        return []

    def on_validation_completed(self, state, request_id, metric, train_length):
        self.calls.append(("validated", request_id, metric, train_length))
        self.results[request_id] = metric
        if train_length == 30:
            return [Close(request_id)]
        if len(self.results) < 2:
            return [Progress(0.25)]
        best = min(self.results, key=self.results.get)
        worst = max(self.results, key=self.results.get)
        return [ValidateAfter(best, 30), Close(worst), Progress(0.5)]

    def on_trial_closed(self, state, request_id):
        self.calls.append(("closed", request_id))
        if len(state.trials_closed) == 2:
            return [UserShutdown()]
        return []

    def on_trial_exited_early(self, state, request_id, exited_reason):
        self.calls.append(("early", request_id, exited_reason))
        return []

    def progress(self, state):
        return 0.5

    def save_method_state(self, path: pathlib.Path):
        path.write_text(repr(sorted((str(k), v) for k, v in self.results.items())))

    def load_method_state(self, path: pathlib.Path):
        for key, value in eval(path.read_text()):  # noqa: S307 - test-only round trip
            self.results[uuid.UUID(key)] = value


R1, R2 = str(uuid.UUID(int=1)), str(uuid.UUID(int=2))


def test_operations_map_to_actions():
    user = TwoStep()
    s = make_search_method(CONFIG, custom_method=user)
    first = s.initial_operations()
    assert [(a.request_id, a.hparams, a.length) for a in first] == [(R1, {"lr": 0.1}, 10), (R2, {"lr": 0.2}, 10)]
    assert all(isinstance(a, Create) for a in first)
    assert user.calls == [("created", uuid.UUID(int=1)), ("created", uuid.UUID(int=2))]
    assert s.on_validation_completed(R1, {"loss": 0.9, "batches": 5}, 5) == []  # before its target
    assert s.on_validation_completed(R1, {"loss": 0.3, "batches": 10}, 10) == [Pause(R1)]
    out = s.on_validation_completed(R2, {"loss": 0.7}, 10)  # batches from steps_completed
    assert out == [Resume(R1, 30), Stop(R2)]
    assert user.calls[-1] == ("validated", uuid.UUID(int=2), 0.7, 10)
    assert s.progress({R1: 0.3}) == 0.5
    assert s.on_trial_exited(R2, TrialExit.COMPLETED) == []
    assert s.on_validation_completed(R1, {"loss": 0.1, "batches": 30}, 30) == [Stop(R1)]
    assert s.on_trial_exited(R1, TrialExit.COMPLETED) == [
        Shutdown(failure=False, reason="the custom search method shut the search down", cancel=False)]


def test_early_exits_are_reported_then_closed():
    user = TwoStep()
    s = CustomSearch(user, CONFIG)
    s.initial_operations()
    s.on_trial_exited(R1, TrialExit.CANCELED)
    assert user.calls[-2:] == [("early", uuid.UUID(int=1), ExitedReason.USER_CANCELED), ("closed", uuid.UUID(int=1))]
    assert uuid.UUID(int=1) in s.state.failures


def test_snapshot_keeps_the_users_method_state_and_ids():
    user = TwoStep()
    a = CustomSearch(user, CONFIG)
    a.initial_operations()
    a.on_validation_completed(R1, {"loss": 0.3, "batches": 10}, 10)
    snap = roundtrip(a.snapshot())
    other = TwoStep()
    b = CustomSearch(other, CONFIG)
    b.restore(snap)
    assert other.results == {uuid.UUID(int=1): 0.3}
    assert b.state.trials_created == {uuid.UUID(int=1), uuid.UUID(int=2)}
    out_a = a.on_validation_completed(R2, {"loss": 0.7, "batches": 10}, 10)
    out_b = b.on_validation_completed(R2, {"loss": 0.7, "batches": 10}, 10)
    assert out_a == out_b == [Resume(R1, 30), Stop(R2)]


def test_custom_without_the_user_object_is_a_config_error():
    from stalwart.api.errors import ConfigError

    with pytest.raises(ConfigError, match="custom"):
        make_search_method(CONFIG)
