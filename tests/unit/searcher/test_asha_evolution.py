"""ASHA with `sampler: evolution`: who becomes a parent, that children improve on random draws, and the config."""

import math
import random
import statistics

import pytest

from searcher_helpers import TOY_HP, build, expand, objective, run_search
from stalwart.api.errors import ConfigError
from stalwart.searcher import Create, evolution_sampler as evo
from stalwart.searcher.evolution_sampler import EvolutionModel
from stalwart.searcher.space import HParamSpace


def model_with(results: dict[str, tuple[float, float]], seed: int = 0) -> EvolutionModel:
    """A model that asked one trial per rid and was told `(step, value)` for each."""
    model = EvolutionModel(HParamSpace(TOY_HP), random.Random(seed))
    for rid, (step, value) in results.items():
        model.ask(rid)
        model.report(rid, step, value)
    return model


def test_the_elite_is_the_best_at_the_longest_rung_with_enough_results():
    results = {str(i): (2, 0.1 + i / 100) for i in range(30)}
    model = model_with(results)
    for i in range(evo.MIN_RESULTS - 1):  # 9 trials moved up to length 4: too few to compare there
        model.report(str(i), 4, 0.9 - i / 100)
    assert model.comparison_length() == 2
    assert model.elite() == ["0", "1", "2"]  # ceil(0.1 * 30) of the 30 results at length 2
    model.report("29", 4, 0.5)  # the 10th result at length 4: parents are now compared there
    assert model.comparison_length() == 4
    assert model.elite() == ["29", "8"]  # at least 2; "29" was the worst at length 2
    model.report("8", 4, 0.5)  # a result told again replaces the earlier one; a tie goes to the older trial
    assert model.elite() == ["8", "29"]
    assert model.records["8"]["rungs"] == [[2, 0.18], [4, 0.5]]


def test_no_comparison_rung_until_one_length_has_enough_results():
    # two brackets' first rungs (lengths 2 and 6) share the results: neither has MIN_RESULTS yet
    results = {str(i): (2 if i % 2 else 6, 0.5) for i in range(evo.MIN_RESULTS + 2)}
    model = model_with(results)
    assert model.comparison_length() is None and model.elite() == []


def test_children_are_mutations_of_the_elite_after_enough_results():
    results = {str(i): (2, 1.0) for i in range(evo.MIN_RESULTS)}
    model = model_with(results)
    for parent in ("0", "1"):  # the two best: the elite
        model.records[parent]["hparams"] = {"x": 0.8, "y": 0.2, "k": "c", "fixed": 3}
        model.report(parent, 2, 0.0)
    children = [model.ask(f"c{i}") for i in range(400)]
    near = [c for c in children if abs(c["x"] - 0.8) <= 3 * evo.MUTATION_SCALE and c["k"] == "c"]
    # kept x and k: P(exploit) * P(no resample of x) * P(no resample of k), plus random draws that land near
    assert len(near) / len(children) > evo.EXPLOIT_PROBABILITY * (1 - evo.RESAMPLE_PROBABILITY) ** 2 * 0.9
    assert all(c["fixed"] == 3 and set(c) == {"x", "y", "k", "fixed"} for c in children)
    assert all(0.0 <= c["x"] <= 1.0 and 0.0 <= c["y"] <= 1.0 for c in children)  # clipped to the range


def test_a_mutation_steps_in_the_space_a_number_is_sampled_in(monkeypatch):
    monkeypatch.setattr(evo, "RESAMPLE_PROBABILITY", 0.0)  # only the Gaussian steps
    hp = {"lr": {"type": "log", "minval": -5, "maxval": -1, "base": 10},
          "layers": {"type": "int", "minval": 1, "maxval": 8}}
    model = EvolutionModel(HParamSpace(hp), random.Random(1))
    children = [model.mutate({"lr": 1e-3, "layers": 4}) for _ in range(2000)]
    decades = [math.log10(c["lr"]) + 3 for c in children]
    assert abs(statistics.mean(decades)) < 0.05
    scale = evo.MUTATION_SCALE
    assert 0.9 * scale * 4 < statistics.pstdev(decades) < 1.1 * scale * 4  # of the 4 decades (few are clipped)
    assert all(isinstance(c["layers"], int) and 1 <= c["layers"] <= 8 for c in children)
    assert 0.9 * scale * 7 < statistics.pstdev(c["layers"] for c in children) < 1.1 * scale * 7 + 0.1  # of 1..8

    monkeypatch.setattr(evo, "MUTATION_SCALE", 1.0)  # large steps: every child is clipped to the range
    children = [model.mutate({"lr": 1e-3, "layers": 4}) for _ in range(500)]
    assert all(1e-5 <= c["lr"] <= 1e-1 and 1 <= c["layers"] <= 8 for c in children)
    assert {c["layers"] for c in children} >= {1, 8} and min(c["lr"] for c in children) == 1e-5


def test_before_enough_results_every_trial_is_a_random_draw():
    model = model_with({str(i): (2, 0.0) for i in range(evo.MIN_RESULTS - 1)}, seed=5)
    space, rng = HParamSpace(TOY_HP), random.Random(5)
    expected = [space.sample(rng) for _ in range(evo.MIN_RESULTS)]  # the 10th ask still has only 9 results
    assert [r["hparams"] for r in model.records.values()] + [model.ask("next")] == expected


def test_a_trial_with_invalid_hyperparameters_never_becomes_a_parent():
    model = model_with({str(i): (2, 0.5) for i in range(12)})
    model.report("7", 2, 0.0)
    assert model.elite()[0] == "7"
    model.close("7", invalid=True)
    assert "7" not in model.elite() and model.records["7"]["rungs"] == []
    model.close("8")  # an ordinary exit keeps the trial's results
    assert model.records["8"]["rungs"] == [[2, 0.5]]


def test_a_snapshot_of_the_first_rule_loads_with_each_trial_at_its_highest_rung():
    model = EvolutionModel(HParamSpace(TOY_HP), random.Random(0))
    hp = {"x": 0.5, "y": 0.5, "k": "a", "fixed": 3}
    model.load([{"rid": str(i), "hparams": hp, "step": 2, "value": i / 10} for i in range(evo.MIN_RESULTS)]
               + [{"rid": "new", "hparams": hp, "step": None, "value": None}])
    assert model.comparison_length() == 2 and model.elite() == ["0", "1"]
    assert model.records["new"]["rungs"] == []
    restored = EvolutionModel(HParamSpace(TOY_HP), random.Random(0))
    restored.load(model.state())
    assert restored.state() == model.state() and restored.elite() == model.elite()


def test_evolution_fed_with_rung_results_samples_better_trials_than_random_draws():
    evolved, rnd = run_search("evolution"), run_search("random")
    assert len(evolved) == len(rnd) == 80
    late = slice(40, 80)
    assert statistics.mean(objective(c.hparams, 27) for c in evolved[late]) < \
        0.6 * statistics.mean(objective(c.hparams, 27) for c in rnd[late])
    assert [c.hparams for c in run_search("evolution")] == [c.hparams for c in evolved]  # same seed, same trials


@pytest.mark.parametrize("name", ["adaptive_asha", "async_halving", "asha_promotion"])
def test_every_halving_searcher_takes_the_sampler_and_snapshots_its_model(name):
    rungs = {"num_rungs": 2} if name == "async_halving" else {"max_rungs": 2, "mode": "aggressive"}
    searcher = {"name": name, "metric": "loss", "max_trials": 6, **rungs, "divisor": 2, "max_time": 4,
                "time_metric": "batches", "max_concurrent_trials": 2, "sampler": "evolution"}
    s = build(expand({"hyperparameters": TOY_HP, "searcher": searcher}))
    first = [a for a in s.initial_operations() if isinstance(a, Create)]
    s.on_validation_completed(first[0].request_id, {"loss": 0.3, "batches": 2}, 2)
    snap = s.snapshot()
    assert [(r["rid"], r["rungs"]) for r in snap["model"][:2]] == \
        [(first[0].request_id, [[2, 0.3]]), (first[1].request_id, [])]
    assert len(snap["model"]) == len(s.snapshot()["model"])  # a snapshot changes nothing


def test_an_unknown_sampler_names_evolution_among_the_choices():
    searcher = {"name": "adaptive_asha", "metric": "loss", "max_trials": 4, "max_time": 8, "time_metric": "batches",
                "sampler": "evolve"}
    with pytest.raises(ConfigError) as info:
        build(expand({"hyperparameters": TOY_HP, "searcher": searcher}))
    assert "evolution" in str(info.value) + " ".join(info.value.details)
