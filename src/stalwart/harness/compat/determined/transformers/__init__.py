"""determined.transformers: DetCallback, the Hugging Face `transformers.Trainer` callback of Determined 0.38.

It reports the Trainer's logs as training and validation metrics, uploads every checkpoint the Trainer saves,
resumes from the trial's latest checkpoint, reports progress, and stops (with a final checkpoint) when the
master asks the trial to stop. Using it needs `transformers` installed (Stalwart's `transformers` extra); the
callback's module, which imports it, is loaded on first use of `DetCallback`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._hf_callback import DetCallback

__all__ = ["DetCallback"]


def __getattr__(name: str) -> Any:
    if name == "DetCallback":
        return importlib.import_module(f"{__name__}._hf_callback").DetCallback
    raise AttributeError(f"module 'determined.transformers' (Stalwart's implementation) has no attribute '{name}'")
