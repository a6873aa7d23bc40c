"""The single searcher: one trial with the const hyperparameters, seeded, snapshot and restore."""

from stalwart.config import load_experiment_config
from stalwart.searcher import Create, Shutdown, TrialExit, make_search_method

CONFIG = """
entrypoint: python3 train.py
hyperparameters: {lr: 0.1, opt: {type: const, val: sgd}, model: {width: 8}}
searcher: {name: single, metric: loss, max_length: {batches: 50}}
reproducibility: {experiment_seed: 3}
checkpoint_storage: {type: shared_fs, host_path: /tmp}
"""


def _search():
    return make_search_method(load_experiment_config(CONFIG).config)


def test_creates_one_trial_with_resolved_hparams_and_a_seed_from_the_experiment_seed():
    actions = _search().initial_operations()
    assert len(actions) == 1 and isinstance(actions[0], Create)
    create = actions[0]
    assert create.hparams == {"lr": 0.1, "opt": "sgd", "model": {"width": 8}}
    assert create.length == 50
    assert create.seed == _search().initial_operations()[0].seed


def test_snapshot_restore_gives_identical_next_actions():
    a = _search()
    a.initial_operations()
    b = _search()
    b.restore(a.snapshot())
    assert b.initial_operations() == [] == a.initial_operations()
    assert a.on_trial_exited("1", TrialExit.ERRORED) == b.on_trial_exited("1", TrialExit.ERRORED) == [
        Shutdown(failure=True, reason="the trial failed")]
    assert a.progress({}) == 1.0
