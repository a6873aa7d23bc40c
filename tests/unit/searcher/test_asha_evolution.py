"""ASHA with `sampler: evolution`: who becomes a parent, that children improve on random draws, and the config."""

import random
import statistics

import pytest
from searcher_helpers import TOY_HP, build, expand, objective, run_search

from stalwart.api.errors import ConfigError
from stalwart.searcher import Create
from stalwart.searcher import evolution_sampler as evo
from stalwart.searcher.evolution_sampler import EvolutionModel
from stalwart.searcher.space import HParamSpace


def model_with(results: dict[str, tuple[float, float]], seed: int = 0) -> EvolutionModel:
    """A model that asked one trial per rid and was told `(step, value)` for each."""
    model = EvolutionModel(HParamSpace(TOY_HP), random.Random(seed))
    for rid, (step, value) in results.items():
        model.ask(rid)
        model.report(rid, step, value)
    return model


def test_the_elite_ranks_by_rung_reached_then_value():
    results = {str(i): (2, 0.1 + i / 100) for i in range(30)}
    results["late"] = (8, 0.9)  # reached the last rung, with a worse value than every rung-0 result
    model = model_with(results)
    model.report("3", 4, 0.5)  # moved up to rung 1
    model.report("3", 2, 0.0)  # a lower rung never counts once a higher one has
    assert model.elite() == ["late", "3", "0", "1"]  # ceil(0.1 * 31) = 4


def test_children_are_mutations_of_the_elite_after_enough_results():
    results = {str(i): (2, 1.0) for i in range(evo.MIN_RESULTS)}
    model = model_with(results)
    for parent in ("0", "1"):  # the two best: the elite
        model.records[parent]["hparams"] = {"x": 0.8, "y": 0.2, "k": "c", "fixed": 3}
        model.report(parent, 4, 0.0)
    children = [model.ask(f"c{i}") for i in range(200)]
    near = [c for c in children if abs(c["x"] - 0.8) <= 0.8 * evo.PERTURB_FACTOR + 1e-9 and c["k"] == "c"]
    # kept x and k: P(exploit) * P(no resample of x) * P(no resample of k), plus random draws that land near
    assert len(near) / len(children) > evo.EXPLOIT_PROBABILITY * (1 - evo.RESAMPLE_PROBABILITY) ** 2 * 0.8
    assert all(c["fixed"] == 3 and set(c) == {"x", "y", "k", "fixed"} for c in children)


def test_before_enough_results_every_trial_is_a_random_draw():
    model = model_with({str(i): (2, 0.0) for i in range(evo.MIN_RESULTS - 1)}, seed=5)
    space, rng = HParamSpace(TOY_HP), random.Random(5)
    expected = [space.sample(rng) for _ in range(evo.MIN_RESULTS)]  # the 10th ask still has only 9 results
    assert [r["hparams"] for r in model.records.values()] + [model.ask("next")] == expected


def test_a_trial_with_invalid_hyperparameters_never_becomes_a_parent():
    model = model_with({str(i): (2, 0.5) for i in range(12)})
    model.report("7", 8, 0.0)
    assert model.elite()[0] == "7"
    model.close("7", invalid=True)
    assert "7" not in model.elite()
    model.close("8")  # an ordinary exit keeps the trial's results
    assert model.records["8"]["step"] == 2


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
    assert [(r["rid"], r["step"], r["value"]) for r in snap["model"][:2]] == \
        [(first[0].request_id, 2, 0.3), (first[1].request_id, None, None)]
    assert len(snap["model"]) == len(s.snapshot()["model"])  # a snapshot changes nothing


def test_an_unknown_sampler_names_evolution_among_the_choices():
    searcher = {"name": "adaptive_asha", "metric": "loss", "max_trials": 4, "max_time": 8, "time_metric": "batches",
                "sampler": "evolve"}
    with pytest.raises(ConfigError) as info:
        build(expand({"hyperparameters": TOY_HP, "searcher": searcher}))
    assert "evolution" in str(info.value) + " ".join(info.value.details)
