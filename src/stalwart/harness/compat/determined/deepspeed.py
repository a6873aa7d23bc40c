"""determined.deepspeed: not implemented by Stalwart; importing it says so."""

from ._unsupported import refuse

refuse("determined.deepspeed", "use determined.pytorch with torch.distributed")
