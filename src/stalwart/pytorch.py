"""`stalwart.pytorch`: PyTorchTrial, Trainer and friends for user code (an alias of stalwart.harness.pytorch)."""

from stalwart.harness.pytorch import *  # noqa: F401,F403
from stalwart.harness.pytorch import __all__  # noqa: F401
