"""determined.transformers: not implemented by Stalwart; importing it says so."""

from ._unsupported import refuse

refuse("determined.transformers", "report metrics from your HF Trainer callback through determined.core")
