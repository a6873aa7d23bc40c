"""The YAHPO Gym LCBench surrogate and the peers of bench/search.py (Optuna, Ray Tune's ASHA) as search methods.

`Surrogate` maps (OpenML task, hyperparameters, epoch) to validation accuracy and cumulative training
time with YAHPO Gym's ONNX model, read directly with onnxruntime. `OptunaPeer` and `RayAshaPeer` wrap
the peers as `SearchMethod`s so the simulator gives them the same workers, clock and events as ours.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np

from stalwart.searcher import Create, SearchMethod, Stop
from stalwart.searcher._common import SearchContext
from stalwart.searcher.space import HParamSpace

DATA = "/work/shared/data/yahpo-lcbench"
EPOCHS = 52
CONT = ["epoch", "batch_size", "learning_rate", "momentum", "weight_decay", "num_layers", "max_units", "max_dropout"]
CHUNKS = [(1, 4), (5, 16), (17, 52)]  # epochs computed per surrogate call (lazily)

HPARAMS = {
    "batch_size": {"type": "log", "minval": 4, "maxval": 9, "base": 2},  # 16..512, rounded
    "learning_rate": {"type": "log", "minval": -4, "maxval": -1, "base": 10},
    "max_dropout": {"type": "double", "minval": 0.0, "maxval": 1.0},
    "max_units": {"type": "log", "minval": 6, "maxval": 10, "base": 2},  # 64..1024, rounded
    "momentum": {"type": "double", "minval": 0.1, "maxval": 0.99},
    "num_layers": {"type": "int", "minval": 1, "maxval": 5},
    "weight_decay": {"type": "double", "minval": 1e-5, "maxval": 0.1},
}


# -- the surrogate -----------------------------------------------------------------------------------

class Surrogate:
    def __init__(self) -> None:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        self.session = ort.InferenceSession(f"{DATA}/model.onnx", opts)
        with open(f"{DATA}/encoding.json") as f:
            self.encoding = json.load(f)["OpenML_task_id"]

    def run(self, task: str, rows: np.ndarray) -> np.ndarray:
        cat = np.full((len(rows), 1), self.encoding[task], dtype=np.int32)
        return self.session.run(None, {"x_cat": cat, "x_cont": rows.astype(np.float32)})[0]

    @staticmethod
    def row(hp: dict, epoch: int) -> list[float]:
        return [epoch, round(hp["batch_size"]), hp["learning_rate"], hp["momentum"], hp["weight_decay"],
                hp["num_layers"], round(hp["max_units"]), hp["max_dropout"]]

    def objective(self, task: str) -> Callable[[dict, float], tuple[float, float]]:
        """metric_fn for simulate: (val_accuracy, cumulative time) at an epoch, computed in chunks."""
        cache: dict[tuple, dict[int, tuple[float, float]]] = {}

        def metric_fn(hp: dict, step: float) -> tuple[float, float]:
            key = tuple(sorted(hp.items()))
            curve = cache.setdefault(key, {})
            epoch = int(round(step))
            if epoch not in curve:
                lo, hi = next((a, b) for a, b in CHUNKS if a <= epoch <= b)
                # compute from the start of the curve known so far, keeping time monotone
                start = max([e for e in curve if e < lo], default=0) + 1
                rows = np.array([self.row(hp, e) for e in range(start, hi + 1)])
                out = self.run(task, rows)
                last_time = curve[start - 1][1] if start > 1 else 0.0
                for i, e in enumerate(range(start, hi + 1)):
                    last_time = max(last_time, float(out[i, 0]), 1e-3)
                    curve[e] = (float(out[i, 1]), last_time)
            return curve[epoch]

        return metric_fn

    def pool(self, task: str, n: int = 3000, seed: int = 12345) -> tuple[float, float]:
        """(best accuracy at any epoch, median full-training time) over a random pool."""
        space = HParamSpace(HPARAMS)
        import random

        rng = random.Random(seed)
        configs = [space.sample(rng) for _ in range(n)]
        rows = np.array([self.row(hp, e) for hp in configs for e in range(1, EPOCHS + 1)])
        out = self.run(task, rows)
        acc = out[:, 1].reshape(n, EPOCHS)
        full = np.maximum.accumulate(np.maximum(out[:, 0].reshape(n, EPOCHS), 1e-3), axis=1)[:, -1]
        return float(acc.max()), float(np.median(full))


# -- peers as search methods --------------------------------------------------------------------------

class _PoolPeer(SearchMethod):
    """Keeps `workers` trials alive forever (the budget ends the run); subclasses decide the rest."""

    def __init__(self, workers: int, seed: int) -> None:
        self.workers = workers
        self.ctx = SearchContext(seed)
        self.live: set[str] = set()

    def new_hparams(self, rid: str) -> dict:
        raise NotImplementedError

    def _create(self) -> Create:
        rid = self.ctx.new_request_id()
        self.live.add(rid)
        return Create(rid, self.new_hparams(rid), self.ctx.trial_seed(), EPOCHS)

    def initial_operations(self):
        return [self._create() for _ in range(self.workers)]

    def on_trial_exited(self, request_id, how):
        self.live.discard(request_id)
        self.closed(request_id, how)
        return [self._create() for _ in range(self.workers - len(self.live))]

    def closed(self, request_id, how) -> None:
        pass

    def progress(self, trial_progress):
        return 0.0

    def snapshot(self):
        return {}

    def restore(self, snapshot):
        pass


class OptunaPeer(_PoolPeer):
    def __init__(self, workers: int, seed: int, pruner: str | None) -> None:
        super().__init__(workers, seed)
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.optuna = optuna
        d = optuna.distributions
        self.dists = {
            "batch_size": d.FloatDistribution(16, 512, log=True),
            "learning_rate": d.FloatDistribution(1e-4, 1e-1, log=True),
            "max_dropout": d.FloatDistribution(0.0, 1.0),
            "max_units": d.FloatDistribution(64, 1024, log=True),
            "momentum": d.FloatDistribution(0.1, 0.99),
            "num_layers": d.IntDistribution(1, 5),
            "weight_decay": d.FloatDistribution(1e-5, 0.1),
        }
        pruners = {
            None: optuna.pruners.NopPruner(),
            "sha": optuna.pruners.SuccessiveHalvingPruner(),
            "sha3": optuna.pruners.SuccessiveHalvingPruner(min_resource=3),
            "sha3-rf2": optuna.pruners.SuccessiveHalvingPruner(min_resource=3, reduction_factor=2),
            "hyperband": optuna.pruners.HyperbandPruner(min_resource=1, max_resource=EPOCHS, reduction_factor=3),
        }
        self.study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed),
                                         pruner=pruners[pruner], study_name=f"bench-{seed}")
        self.trials: dict[str, object] = {}
        self.last: dict[str, float] = {}
        self.pruned: set[str] = set()

    def new_hparams(self, rid):
        trial = self.study.ask(self.dists)
        self.trials[rid] = trial
        return dict(trial.params)

    def on_validation_completed(self, request_id, metrics, steps_completed):
        trial = self.trials[request_id]
        value = metrics["val_accuracy"]
        self.last[request_id] = value
        step = int(metrics["epochs"])
        trial.report(value, step)
        if step < EPOCHS and trial.should_prune():
            self.pruned.add(request_id)
            return [Stop(request_id)]
        return []

    def closed(self, request_id, how):
        state = self.optuna.trial.TrialState
        if request_id in self.pruned:
            self.study.tell(self.trials[request_id], state=state.PRUNED)
        elif request_id in self.last:
            self.study.tell(self.trials[request_id], self.last[request_id])
        else:
            self.study.tell(self.trials[request_id], state=state.FAIL)


class RayAshaPeer(_PoolPeer):
    class _Trial:
        def __init__(self, trial_id: str) -> None:
            self.trial_id = trial_id

    def __init__(self, workers: int, seed: int, grace_period: int = 1, reduction_factor: int = 4) -> None:
        super().__init__(workers, seed)
        from ray.tune.schedulers import ASHAScheduler

        np.random.seed(seed)
        self.scheduler = ASHAScheduler(time_attr="epochs", metric="val_accuracy", mode="max", max_t=EPOCHS,
                                       grace_period=grace_period, reduction_factor=reduction_factor)
        self.space = HParamSpace(HPARAMS)
        self.trials: dict[str, RayAshaPeer._Trial] = {}

    def new_hparams(self, rid):
        trial = self._Trial(rid)
        self.trials[rid] = trial
        self.scheduler.on_trial_add(None, trial)
        return self.space.sample(self.ctx.rng)

    def on_validation_completed(self, request_id, metrics, steps_completed):
        result = {"epochs": metrics["epochs"], "val_accuracy": metrics["val_accuracy"]}
        decision = self.scheduler.on_trial_result(None, self.trials[request_id], result)
        return [Stop(request_id)] if decision == "STOP" else []

    def closed(self, request_id, how):
        self.scheduler.on_trial_remove(None, self.trials.pop(request_id))



def base_config(seed: int, searcher: dict) -> dict:
    return {
        "hyperparameters": HPARAMS,
        "reproducibility": {"experiment_seed": seed},
        "searcher": {"metric": "val_accuracy", "smaller_is_better": False, **searcher},
    }
