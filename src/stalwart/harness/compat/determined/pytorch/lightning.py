"""determined.pytorch.lightning: not implemented by Stalwart; importing it says so."""

from .._unsupported import refuse

refuse("determined.pytorch.lightning", "use determined.pytorch.PyTorchTrial or the Core API")
