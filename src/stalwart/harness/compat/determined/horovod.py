"""determined.horovod: not implemented by Stalwart; importing it says so."""

from ._unsupported import refuse

refuse("determined.horovod", "use torch.distributed through determined.launch.torch_distributed")
