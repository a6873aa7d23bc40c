"""determined.launch.tensorflow: not implemented by Stalwart; importing it says so."""

from .._unsupported import refuse

refuse("determined.launch.tensorflow", "use python3 -m determined.launch.torch_distributed")
