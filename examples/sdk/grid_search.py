"""Drive a grid search from Python with Stalwart's SDK: create, wait, read metrics, load the best model.

    python examples/sdk/grid_search.py                 # the master of STALWART_MASTER, or the local cluster
    python examples/sdk/grid_search.py --master http://127.0.0.1:8080 --batches 100

Creates the grid of grid.yaml over the digits MLP (examples/digits), waits for it, lists its trials, reads
their validation metrics into a pandas DataFrame, downloads the best checkpoint and loads its state dict into
the model. The same calls work inside a trial, as `from determined.experimental import client`.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile

import torch
import yaml

from stalwart.experimental import client, metrics_frame

HERE = pathlib.Path(__file__).resolve().parent
DIGITS = HERE.parent / "digits"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--master", help="the master's address (else STALWART_MASTER, DET_MASTER, local cluster)")
    parser.add_argument("--batches", type=int, default=None, help="train each trial this many batches")
    parser.add_argument("--out", default=None, help="where to download the best checkpoint (default: a temp dir)")
    args = parser.parse_args(argv)

    if args.master:
        client.login(master=args.master)
    config = yaml.safe_load((HERE / "grid.yaml").read_text())
    if args.batches:
        config["searcher"]["max_length"] = {"batches": args.batches}

    exp = client.create_experiment(config, DIGITS)
    print(f"created experiment {exp.id}; waiting for its {len(list(_grid(config)))} trials")
    state = exp.wait(interval=1.0)
    print(f"experiment {exp.id} ended {state.value}")
    if state.value != "COMPLETED":
        return 1

    trials = list(exp.list_trials())
    for trial in trials:
        print(f"trial {trial.id}: {trial.hparams} -> {trial.latest_validation}")

    frame = metrics_frame(client.iter_trials_metrics([t.id for t in trials], "validation"))
    print(frame[["trial_id", "steps_completed", "validation_accuracy", "validation_loss"]].to_string(index=False))

    best = exp.top_checkpoint()
    print(f"best checkpoint {best.uuid} (trial {best.trial_id}, steps {best.steps_completed}): "
          f"{best.validation_metrics}")
    target = pathlib.Path(args.out) if args.out else pathlib.Path(tempfile.mkdtemp(prefix="stalwart-sdk-")) / best.uuid
    path = pathlib.Path(best.download(target))
    state_dict = torch.load(path / "state.pt")["model"]

    sys.path.insert(0, str(DIGITS))
    from model import load_data, make_model  # examples/digits/model.py

    trial = next(t for t in trials if t.id == best.trial_id)
    model = make_model(int(trial.hparams["hidden"] if trial.hparams else 64))
    model.load_state_dict(state_dict)
    _, (x_val, y_val) = load_data()
    with torch.no_grad():
        accuracy = (model(x_val).argmax(1) == y_val).float().mean().item()
    print(f"loaded the best model from {path}: validation_accuracy={accuracy:.4f}")
    return 0


def _grid(config: dict) -> list[tuple]:
    """The grid's points (every hyperparameter given as `vals` is one axis)."""
    points: list[tuple] = [()]
    for spec in config["hyperparameters"].values():
        if isinstance(spec, dict) and "vals" in spec:
            points = [p + (v,) for p in points for v in spec["vals"]]
    return points


if __name__ == "__main__":
    sys.exit(main())
