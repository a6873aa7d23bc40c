"""determined.experimental: not implemented by Stalwart; importing it says so."""

from ._unsupported import refuse

refuse("determined.experimental", "use the stalwart CLI or REST API to drive experiments")
