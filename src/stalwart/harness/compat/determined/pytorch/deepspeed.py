"""determined.pytorch.deepspeed: not implemented by Stalwart; importing it says so."""

from .._unsupported import refuse

refuse("determined.pytorch.deepspeed", "use determined.pytorch.PyTorchTrial or the Core API")
