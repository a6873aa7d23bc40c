"""determined.pytorch: PyTorchTrial, Trainer and friends (Stalwart's implementation)."""

from stalwart.harness.pytorch import *  # noqa: F401,F403
from stalwart.harness.pytorch import __all__  # noqa: F401
