"""determined.pytorch.deepspeed (DeepSpeedTrial, DeepSpeedTrialContext): not implemented by Stalwart; importing it
says so, and why: DeepSpeed's CPU path needs its ops built for another torch than the 2.13 Stalwart's trials run, so
no DeepSpeedTrial could be run and tested here."""

from .._unsupported import refuse

refuse("determined.pytorch.deepspeed", "DeepSpeed is out of scope for now: its CPU path needs ops built for another "
       "torch than the 2.13 Stalwart runs, so DeepSpeedTrial cannot be run and tested; port the trial to "
       "determined.pytorch.PyTorchTrial (DistributedDataParallel) or the Core API")
