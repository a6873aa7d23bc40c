"""determined.deepspeed: not implemented by Stalwart; importing it says so (see determined.pytorch.deepspeed)."""

from ._unsupported import refuse

refuse("determined.deepspeed", "DeepSpeed is out of scope for now (its CPU path needs ops built for another torch "
       "than the 2.13 Stalwart runs); use determined.pytorch with torch.distributed")
