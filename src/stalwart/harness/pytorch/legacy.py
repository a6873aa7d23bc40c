"""The legacy `entrypoint: model_def:Trial` harness: `python -m stalwart.harness.pytorch.legacy model_def:Trial`.

It imports the Trial class from the context directory (the working directory) and runs
`Trainer.fit()` with the deprecated config keys, as Determined's legacy harness does:
min_checkpoint_period, min_validation_period, scheduling_unit, checkpoint_policy,
perform_initial_validation, searcher.max_length, records_per_epoch and optimizations.
On a cluster the config comes from the trial; off-cluster pass `--config exp.yaml`.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import logging
import os
import pathlib
import re
import sys
from collections.abc import Callable, Mapping
from typing import Any, TypedDict

from stalwart.config import load_experiment_config, resolve_const_hparams, views
from stalwart.harness.info import get_cluster_info
from stalwart.harness.pytorch._log import LOG_FORMAT
from stalwart.harness.pytorch._trainer import Trainer, init, legacy_max_length
from stalwart.harness.pytorch._trial import PyTorchTrial
from stalwart.harness.pytorch._units import Batch, TrainUnit, from_length

log = logging.getLogger("stalwart.pytorch")

SPEC = re.compile(r"^(?:(?P<module>[A-Za-z_][\w.]*):)?(?P<qualname>[A-Za-z_][\w.]*)$")


def load_trial_class(spec: str, context_dir: str | os.PathLike[str] = ".") -> type[PyTorchTrial]:
    """The class named by `module:Class`, `pkg.mod:Outer.Inner`, or a bare `Class` from the root __init__.py."""
    obj = load_entrypoint_object(spec, context_dir)
    if not (isinstance(obj, type) and issubclass(obj, PyTorchTrial)):
        raise TypeError(f"entrypoint {spec!r} names {obj!r}, which is not a stalwart.pytorch.PyTorchTrial subclass")
    return obj


def load_entrypoint_object(spec: str, context_dir: str | os.PathLike[str] = ".") -> Any:
    """What `module:Class` (`pkg.mod:Outer.Inner`, or a bare `Class` from the root __init__.py) names."""
    match = SPEC.match(spec.strip())
    if match is None:
        raise ValueError(f"entrypoint {spec!r} is not of the form module:Class")
    root = str(pathlib.Path(context_dir).resolve())
    if root not in sys.path:
        sys.path.insert(0, root)
    module = _import_root_package(root) if match["module"] is None else importlib.import_module(match["module"])
    obj: Any = module
    for part in match["qualname"].split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ValueError(f"entrypoint {spec!r}: {obj.__name__!r} has no attribute {part!r}") from None
    return obj


def _keras_trial_runner(obj: Any) -> Callable[[Any], None] | None:
    """The harness of a determined.keras.TFKerasTrial subclass (as the trial imported it), else None."""
    keras = sys.modules.get("determined.keras")
    if keras is None or not (isinstance(obj, type) and issubclass(obj, keras.TFKerasTrial)):
        return None
    runner: Callable[[Any], None] = importlib.import_module(f"{keras.__name__}._trial_run").run_trial
    return runner


def _import_root_package(root: str) -> Any:
    init_file = pathlib.Path(root) / "__init__.py"
    if not init_file.is_file():
        raise ValueError("a bare Trial class entrypoint needs an __init__.py at the context directory's root")
    name = "model_def_root"
    spec = importlib.util.spec_from_file_location(name, init_file, submodule_search_locations=[root])
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import the context directory's root package from {init_file}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class FitArguments(TypedDict):
    """Trainer.fit()'s keyword arguments, as the deprecated config keys give them."""

    max_length: TrainUnit
    checkpoint_period: TrainUnit | None
    validation_period: TrainUnit | None
    reporting_period: TrainUnit
    checkpoint_policy: str
    step_zero_validation: bool
    profiling_enabled: bool
    latest_checkpoint: str | None


def _section(config: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = config.get(key)
    return value if isinstance(value, Mapping) else {}


def fit_arguments(config: Mapping[str, Any], *, global_batch_size: int | None = None,
                  target_length: int | None = None, latest_checkpoint: str | None = None) -> FitArguments:
    """Trainer.fit() keyword arguments from the deprecated config keys."""
    gbs = global_batch_size or views.global_batch_size(config)
    rpe = views.records_per_epoch(config)

    def period(key: str) -> TrainUnit | None:
        value = config.get(key)
        return None if value is None else from_length(value, gbs, records_per_epoch=rpe, zero_is_never=True)

    return {
        "max_length": legacy_max_length(dict(config), target_length, gbs),
        "checkpoint_period": period("min_checkpoint_period"),
        "validation_period": period("min_validation_period"),
        "reporting_period": Batch(int(config.get("scheduling_unit") or 100)),
        "checkpoint_policy": str(config.get("checkpoint_policy") or "best"),
        "step_zero_validation": bool(config.get("perform_initial_validation", False)),
        "profiling_enabled": bool(_section(config, "profiling").get("enabled", False)),
        "latest_checkpoint": latest_checkpoint,
    }


def run(spec: str, config_path: str | None = None) -> None:
    entry = load_entrypoint_object(spec)
    keras_runner = _keras_trial_runner(entry)
    if keras_runner is not None:  # a det.keras.TFKerasTrial: DeterminedCallback's machinery trains it
        return keras_runner(entry)
    if getattr(entry, "trial_controller_class", None) is not None and not (
            isinstance(entry, type) and issubclass(entry, PyTorchTrial)):
        # a det.LegacyTrial with its own TrialController (Determined 0.37's harness): the compat package runs it
        importlib.import_module("determined.exec.harness").run_legacy_trial(entry)
        return
    info = get_cluster_info()
    trial_info = info.trial if info is not None else None
    latest_checkpoint = info.latest_checkpoint if info is not None and trial_info is not None else None
    if trial_info is not None:
        config, hparams, storage = trial_info._config, trial_info.hparams, None
    elif config_path is not None:
        config = load_experiment_config(pathlib.Path(config_path).read_text()).config
        hparams = resolve_const_hparams(config.get("hyperparameters"))
        storage = config.get("checkpoint_storage")
    else:
        raise SystemExit("off-cluster, pass the experiment config: --config exp.yaml")
    trial_class = load_trial_class(spec)
    optimizations = _section(config, "optimizations")
    with init(hparams=hparams, exp_conf=dict(config), checkpoint_storage=storage,
              aggregation_frequency=int(optimizations.get("aggregation_frequency") or 1)) as context:
        context._average_aggregated_gradients_default = bool(optimizations.get("average_aggregated_gradients", True))
        context._fp16_compression_default = bool(optimizations.get("gradient_compression", False))
        kwargs = fit_arguments(
            config, global_batch_size=context._global_batch_size,
            target_length=trial_info.target_length if trial_info is not None else None,
            latest_checkpoint=latest_checkpoint,
        )
        Trainer(trial_class(context), context).fit(**kwargs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m stalwart.harness.pytorch.legacy", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("entrypoint", nargs="?", help="module:TrialClass (nested: pkg.mod:Outer.Inner)")
    parser.add_argument("--trial", dest="trial", help="the same as the positional entrypoint")
    parser.add_argument("--config", help="experiment config YAML (off-cluster only)")
    args = parser.parse_args(argv)
    spec = args.trial or args.entrypoint
    if not spec:
        parser.error("name the Trial class: module:TrialClass")
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)
    run(spec, args.config)
    clean_distributed_exit()
    return 0


def clean_distributed_exit() -> None:
    """After training with several workers: wait for all, tear the process group down and leave at once.

    gloo workers can abort in interpreter finalisers after their work is done (one run in ten on
    torch 2.13), which would fail the whole gang; leaving through os._exit skips them.
    """
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return
    dist.barrier()
    dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
