"""The `single` searcher over ranged hyperparameters, end to end: sampled once from the experiment's seed.

Determined 0.38.1 runs `single` as its random searcher with max_trials 1 (master/pkg/searcher/random.go,
`newSingleSearch`) and its config schema ties no hyperparameter type to it, so an `int`, `double`, `log` or
`categorical` hyperparameter is sampled once; the trial sees the sample, and the same seed gives the same one.
"""

from __future__ import annotations

import json

import pytest

from integration.helpers import create, logs, wait_state

pytestmark = pytest.mark.integration

TRAIN = """\
import json
import determined as det

hparams = det.get_cluster_info().trial.hparams
print("HPARAMS " + json.dumps(hparams, sort_keys=True))
"""


def _config(seed: int) -> str:
    return f"""
name: single-sampling
entrypoint: python3 train.py
max_restarts: 0
searcher: {{name: single, metric: loss, max_length: {{batches: 1}}}}
reproducibility: {{experiment_seed: {seed}}}
hyperparameters:
  lr: {{type: log, minval: -4, maxval: -1}}
  units: {{type: int, minval: 1, maxval: 64}}
  dropout: {{type: double, minval: 0.0, maxval: 0.5}}
  act: {{type: categorical, vals: [relu, tanh, gelu]}}
  model: {{width: 8, depth: {{type: int, minval: 1, maxval: 4}}}}
"""


def _run(cluster, ctx, seed: int) -> tuple[dict, dict]:
    """Run one single-searcher experiment; its trial's hparams as the API and as the trial itself saw them."""
    exp_id = create(cluster, _config(seed), ctx)
    d = wait_state(cluster, exp_id, {"COMPLETED", "ERROR"}, timeout=60)
    assert d["experiment"]["state"] == "COMPLETED", d["experiment"]
    [trial] = d["trials"]
    printed = [e["log"] for e in logs(cluster, trial["id"]) if e["log"].startswith("HPARAMS ")]
    assert len(printed) == 1, printed
    return trial["hparams"], json.loads(printed[0].removeprefix("HPARAMS ").strip())


def test_single_samples_ranged_hyperparameters_once_reproducibly(cluster, tmp_path):
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "train.py").write_text(TRAIN)

    first, seen = _run(cluster, ctx, seed=21)
    assert seen == first  # the trial trains with the sample the master stored
    assert 1e-4 <= first["lr"] <= 1e-1 and 0.0 <= first["dropout"] <= 0.5
    assert isinstance(first["units"], int) and 1 <= first["units"] <= 64
    assert first["act"] in ("relu", "tanh", "gelu")
    assert first["model"]["width"] == 8 and 1 <= first["model"]["depth"] <= 4

    again, _ = _run(cluster, ctx, seed=21)
    assert again == first  # same seed, same sample
    other, _ = _run(cluster, ctx, seed=22)
    assert other != first
