"""`determined.common.api`: Determined's REST client package, which Stalwart does not include.

Importing the package works (so `import determined.common` never fails), but its members, and the
generated `bindings` module, raise errors that point to Stalwart's SDK.
"""

from __future__ import annotations

INSTEAD = ("use the Python SDK instead: determined.experimental.client inside a trial "
           "(stalwart.experimental.client outside it)")


def __getattr__(name: str) -> object:
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(
        f"determined.common.api.{name} is part of Determined's REST client, which is not part of Stalwart; {INSTEAD}"
    )
