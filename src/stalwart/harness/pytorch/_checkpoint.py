"""Checkpoint files of a PyTorchTrial: state_dict.pth (models, optimizers, RNG...) and load_data.json."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
import logging
import pathlib
import pickle
import random
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar, cast

import numpy as np
import torch

from stalwart.harness.pytorch._callback import PyTorchCallback
from stalwart.harness.pytorch._context import PyTorchTrialContext
from stalwart.harness.pytorch._trial import PyTorchTrial

log = logging.getLogger("stalwart.pytorch")

STATE_FILE = "state_dict.pth"
LOAD_DATA_FILE = "load_data.json"
_LEGACY_STATE_FILES = (("state_dict.pth",), ("determined", "state_dict.pth"), ("checkpoint.pt",))

# A checkpoint's state (state_dict.pth: state dicts, RNG states...) or load_data.json, by key.
State = dict[str, Any]
_Live = TypeVar("_Live")


@dataclasses.dataclass
class TrialState:
    """Where training stands; saved in load_data.json so a resume continues exactly here."""

    trial_id: int = 0
    batches_trained: int = 0
    epochs_trained: int = 0
    last_ckpt: int = 0
    last_val: int = 0
    data_seed: int | None = None
    best_validation: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> TrialState:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in raw.items() if k in names})


# -- RNG ------------------------------------------------------------------------------------------

def rng_state(context: PyTorchTrialContext) -> State:
    """Python, numpy and torch RNG states, in a form torch.load(weights_only=True) accepts."""
    legacy_state = np.random.get_state(legacy=True)
    if not isinstance(legacy_state, tuple):  # only a non-MT19937 global generator gives a dict
        raise TypeError(f"numpy's global RNG is not a MT19937 (its state is {type(legacy_state).__name__}): "
                        "its state cannot be checkpointed")
    kind, keys, pos, has_gauss, cached = legacy_state
    state: State = {
        "cpu_rng_state": torch.random.get_rng_state(),
        "np_rng_state": {"kind": kind, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
                         "has_gauss": int(has_gauss), "cached_gaussian": float(cached)},
        "random_rng_state": random.getstate(),
    }
    if context.device.type == "cuda":
        state["gpu_rng_state"] = torch.cuda.get_rng_state(context.device)
    return state


def restore_rng(state: State, context: PyTorchTrialContext) -> None:
    np_state = state["np_rng_state"]
    if isinstance(np_state, dict):
        np_state = (np_state["kind"], np.asarray(np_state["keys"], dtype=np.uint32), np_state["pos"],
                    np_state["has_gauss"], np_state["cached_gaussian"])
    np.random.set_state(np_state)
    # random.getstate()'s tuple, whose inner tuples a round trip through a checkpoint may turn into lists
    random.setstate(cast(tuple[Any, ...], _as_tuples(state["random_rng_state"])))
    torch.random.set_rng_state(state["cpu_rng_state"])
    if "gpu_rng_state" in state and context.device.type == "cuda":
        torch.cuda.set_rng_state(state["gpu_rng_state"], context.device)


@contextlib.contextmanager
def rng_isolated(context: PyTorchTrialContext) -> Iterator[None]:
    """Run a block (a validation) without moving the training RNG streams."""
    saved = rng_state(context)
    try:
        yield
    finally:
        restore_rng(saved, context)


def _as_tuples(value: object) -> object:
    return tuple(_as_tuples(v) for v in value) if isinstance(value, (list, tuple)) else value


# -- saving ---------------------------------------------------------------------------------------

def _unwrapped(model: torch.nn.Module) -> torch.nn.Module:
    return model.module if isinstance(model, torch.nn.parallel.DistributedDataParallel) else model


def build_state(context: PyTorchTrialContext, callbacks: dict[str, PyTorchCallback]) -> State:
    state: State = {
        "models_state_dict": [_unwrapped(m).state_dict() for m in context.models],
        "optimizers_state_dict": [o.state_dict() for o in context.optimizers],
        "lr_schedulers_state_dict": [s.state_dict() for s in context.lr_schedulers],
        "callbacks": {name: cb.state_dict() for name, cb in callbacks.items()},
        "rng_state": rng_state(context),
    }
    if context._scaler is not None:
        state["scaler_state_dict"] = context._scaler.state_dict()
    return state


def load_data(context: PyTorchTrialContext, trial: object, trial_state: TrialState) -> State:
    cls = type(trial)
    return {
        "trial_type": "PyTorchTrial",
        "experiment_config": context._exp_conf,
        "hparams": context._hparams,
        "trial_cls_spec": f"{cls.__module__}:{cls.__qualname__}",
        "is_trainer": True,
        "trial_state": trial_state.to_dict(),
    }


def write(path: pathlib.Path, state: State, data: State) -> None:
    path.mkdir(parents=True, exist_ok=True)
    torch.save(state, str(path / STATE_FILE))
    (path / LOAD_DATA_FILE).write_text(json.dumps(data, default=str))


# -- loading --------------------------------------------------------------------------------------

def read(path: pathlib.Path, **torch_load_kwargs: Any) -> tuple[State | None, State]:
    """(state_dict.pth contents or None, load_data.json contents or {}) of a checkpoint directory."""
    data_file = path / LOAD_DATA_FILE
    data: State = json.loads(data_file.read_text()) if data_file.exists() else {}
    kwargs: dict[str, Any] = {"map_location": "cpu", "weights_only": False, **torch_load_kwargs}
    for parts in _LEGACY_STATE_FILES:
        candidate = path.joinpath(*parts)
        if candidate.exists():
            state: State = torch.load(str(candidate), **kwargs)
            return state, data
    return None, data


def read_trial_state(path: pathlib.Path, data: State) -> dict[str, Any] | None:
    """The saved TrialState fields: ours in load_data.json, or Determined's trial_state.pkl."""
    saved: dict[str, Any] | None = None
    if "trial_state" in data:
        saved = data["trial_state"]
    elif (legacy := path / "trial_state.pkl").exists():
        with legacy.open("rb") as f:
            saved = pickle.load(f)
    return saved


def apply_state(state: State, context: PyTorchTrialContext, callbacks: dict[str, PyTorchCallback]) -> None:
    """Load models, optimizers, schedulers, scaler, RNG states and callback states from `state`."""
    models = state.get("models_state_dict") or ([state["model_state_dict"]] if "model_state_dict" in state else [])
    _load_list("models", models, [_unwrapped(m) for m in context.models], _load_model)
    optimizers = state.get("optimizers_state_dict") or (
        [state["optimizer_state_dict"]] if "optimizer_state_dict" in state else [])
    _load_list("optimizers", optimizers, context.optimizers, lambda o, s: o.load_state_dict(s))
    schedulers = state.get("lr_schedulers_state_dict") or ([state["lr_scheduler"]] if "lr_scheduler" in state else [])
    _load_list("LR schedulers", schedulers, context.lr_schedulers, lambda o, s: o.load_state_dict(s))
    if "scaler_state_dict" in state and context._scaler is not None:
        context._scaler.load_state_dict(state["scaler_state_dict"])
    if "rng_state" in state:
        restore_rng(state["rng_state"], context)
    else:
        log.warning("the checkpoint has no RNG state to restore")
    saved = state.get("callbacks", {})
    for name, cb in callbacks.items():
        if name in saved:
            cb.load_state_dict(saved[name])


def _load_list(what: str, saved: Sequence[dict[str, Any]], live: Sequence[_Live],
               load: Callable[[_Live, dict[str, Any]], object]) -> None:
    if len(saved) != len(live):
        raise RuntimeError(f"the checkpoint has {len(saved)} {what} but this trial wrapped {len(live)}")
    for obj, sd in zip(live, saved, strict=True):
        load(obj, sd)


def _load_model(model: torch.nn.Module, state_dict: dict[str, Any]) -> None:
    if any(k.startswith("module.") for k in state_dict) and not any(k.startswith("module.") for k in
                                                                   model.state_dict()):
        state_dict = dict(state_dict)
        torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(state_dict, "module.")
    model.load_state_dict(state_dict)


# -- exporting ------------------------------------------------------------------------------------

def _import_spec(spec: str, path: pathlib.Path) -> type[PyTorchTrial]:
    module_name, _, qualname = spec.partition(":")
    for extra in (path / "code", pathlib.Path.cwd()):
        if extra.is_dir() and str(extra) not in sys.path:
            sys.path.insert(0, str(extra))
    obj: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    trial_class: type[PyTorchTrial] = obj  # what load_data.json's trial_cls_spec names
    return trial_class


def load_trial_from_checkpoint_path(path: str | pathlib.Path, trial_class: type[PyTorchTrial] | None = None,
                                    trial_kwargs: dict[str, Any] | None = None,
                                    torch_load_kwargs: dict[str, Any] | None = None) -> PyTorchTrial:
    """A PyTorchTrial instance with its models loaded from a checkpoint directory (for inference/export).

    The trial class is `trial_class`, or the one recorded in load_data.json, imported from the
    checkpoint's `code/` directory or the working directory.
    """
    ckpt_dir = pathlib.Path(path)
    data_file = ckpt_dir / LOAD_DATA_FILE
    data: State = json.loads(data_file.read_text()) if data_file.exists() else {}
    if trial_class is None:
        if "trial_cls_spec" not in data:
            raise ValueError(f"{ckpt_dir} has no {LOAD_DATA_FILE} naming the trial class: pass trial_class=")
        trial_class = _import_spec(data["trial_cls_spec"], ckpt_dir)
    context = PyTorchTrialContext(None, hparams=data.get("hparams"), exp_conf=data.get("experiment_config"),
                                  managed_training=False, device=torch.device("cpu"))
    trial = trial_class(context, **(trial_kwargs or {}))
    state, _ = read(ckpt_dir, **(torch_load_kwargs or {}))
    if state is None:
        raise FileNotFoundError(f"{ckpt_dir} has no {STATE_FILE}")
    models = state.get("models_state_dict") or [state["model_state_dict"]]
    _load_list("models", models, [_unwrapped(m) for m in context.models], _load_model)
    return trial
