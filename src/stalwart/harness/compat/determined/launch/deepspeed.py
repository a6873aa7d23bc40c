"""determined.launch.deepspeed: not implemented by Stalwart; importing it says so."""

from .._unsupported import refuse

refuse("determined.launch.deepspeed", "use python3 -m determined.launch.torch_distributed")
