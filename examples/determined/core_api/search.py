"""A custom search method written against Determined 0.37's custom searcher API (`determined.searcher`).

Successive doubling over a few learning rates: every candidate trains `first_length` batches; the
best half continues to twice the length, and so on, until one is left at `max_length`. Run it with
`custom_search.yaml` (`searcher: {name: custom, search_method: "search:SuccessiveDoubling"}`): the
master runs this class in a process of its own and snapshots its state after every event, so a
master restart continues the search where it was.
"""

import json
import pathlib
import uuid

from determined import searcher

LEARNING_RATES = [0.002, 0.02, 0.05, 0.1]
FIRST_LENGTH = 50
MAX_LENGTH = 200
BASE_HPARAMS = {"hidden": 48, "batch_size": 32, "batch_sleep": 0.0}


class SuccessiveDoubling(searcher.SearchMethod):
    def __init__(self):
        self.length = FIRST_LENGTH
        self.alive = []  # request ids still competing, as strings
        self.results = {}  # request id -> searcher metric at the current length

    def initial_operations(self, searcher_state):
        ops = []
        for lr in LEARNING_RATES:
            create = searcher.Create(uuid.uuid4(), {**BASE_HPARAMS, "learning_rate": lr}, checkpoint=None)
            self.alive.append(str(create.request_id))
            ops += [create, searcher.ValidateAfter(create.request_id, self.length)]
        return ops

    def on_validation_completed(self, searcher_state, request_id, metric, train_length):
        if str(request_id) not in self.alive or train_length != self.length:
            return []
        self.results[str(request_id)] = metric
        if len(self.results) < len(self.alive):
            return []
        ranked = sorted(self.alive, key=lambda rid: self.results[rid])  # smaller loss first
        if self.length >= MAX_LENGTH or len(ranked) == 1:
            return [searcher.Close(uuid.UUID(rid)) for rid in ranked]
        keep, drop = ranked[: max(1, len(ranked) // 2)], ranked[max(1, len(ranked) // 2):]
        self.length = min(MAX_LENGTH, self.length * 2)
        self.alive, self.results = keep, {}
        return [searcher.Close(uuid.UUID(rid)) for rid in drop] + [
            searcher.ValidateAfter(uuid.UUID(rid), self.length) for rid in keep]

    def on_trial_closed(self, searcher_state, request_id):
        if len(searcher_state.trials_closed) == len(searcher_state.trials_created):
            return [searcher.Shutdown()]
        return []

    def on_trial_exited_early(self, searcher_state, request_id, exited_reason):
        if str(request_id) in self.alive:
            self.alive.remove(str(request_id))
        return []

    def progress(self, searcher_state):
        return len(searcher_state.trials_closed) / max(1, len(searcher_state.trials_created))

    def save_method_state(self, path: pathlib.Path):
        path.write_text(json.dumps({"length": self.length, "alive": self.alive, "results": self.results}))

    def load_method_state(self, path: pathlib.Path):
        state = json.loads(path.read_text())
        self.length, self.alive, self.results = state["length"], state["alive"], state["results"]
