"""The single searcher over non-const hyperparameters: sampled once, as `random` with max_trials 1.

Determined 0.38.1 builds the single searcher as its random searcher with max_trials = 1 and
max_concurrent_trials = 1 (master/pkg/searcher/random.go), and its config schema has no rule
tying `single` to const hyperparameters; so every kind is sampled once from the experiment's seed.
"""

from stalwart.config import load_experiment_config
from stalwart.searcher import Create, Shutdown, TrialExit, make_search_method

HPARAMS = """
hyperparameters:
  lr: {type: log, minval: -4, maxval: -1}
  units: {type: int, minval: 1, maxval: 64}
  dropout: {type: double, minval: 0.0, maxval: 0.5}
  act: {type: categorical, vals: [relu, tanh, gelu]}
  model: {width: 8, depth: {type: int, minval: 1, maxval: 4}}
"""


def _config(name: str, seed: int, extra: str = "") -> dict:
    text = f"""
entrypoint: python3 train.py
{HPARAMS}
searcher: {{name: {name}, metric: loss, max_length: {{batches: 10}}{extra}}}
reproducibility: {{experiment_seed: {seed}}}
checkpoint_storage: {{type: shared_fs, host_path: /tmp}}
"""
    return load_experiment_config(text).config


def _first_create(name: str, seed: int, extra: str = "") -> Create:
    actions = make_search_method(_config(name, seed, extra)).initial_operations()
    assert len(actions) == 1 and isinstance(actions[0], Create)
    return actions[0]


def test_non_const_hyperparameters_are_accepted_and_sampled_within_their_ranges():
    hp = _first_create("single", 5).hparams
    assert 1e-4 <= hp["lr"] <= 1e-1
    assert isinstance(hp["units"], int) and 1 <= hp["units"] <= 64
    assert 0.0 <= hp["dropout"] <= 0.5
    assert hp["act"] in ("relu", "tanh", "gelu")
    assert hp["model"]["width"] == 8 and 1 <= hp["model"]["depth"] <= 4


def test_same_seed_same_sample_other_seed_other_sample():
    assert _first_create("single", 5) == _first_create("single", 5)
    other = _first_create("single", 6)
    assert other.hparams != _first_create("single", 5).hparams
    assert other.seed != _first_create("single", 5).seed


def test_the_sample_is_the_one_random_with_max_trials_1_draws():
    single = _first_create("single", 11)
    random_one = _first_create("random", 11, ", max_trials: 1")
    assert (single.hparams, single.seed) == (random_one.hparams, random_one.seed)


def test_one_trial_only_and_invalid_hp_is_not_resampled():
    search = make_search_method(_config("single", 5))
    assert len(search.initial_operations()) == 1
    after = search.on_trial_exited("1", TrialExit.INVALID_HP)
    assert not any(isinstance(a, Create) for a in after) and any(isinstance(a, Shutdown) for a in after)
