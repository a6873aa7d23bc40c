"""determined.keras: not implemented by Stalwart; importing it says so."""

from ._unsupported import refuse

refuse("determined.keras", "port the model to determined.pytorch or the Core API (determined.core)")
