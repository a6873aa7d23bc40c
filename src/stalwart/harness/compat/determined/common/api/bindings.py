"""`determined.common.api.bindings`: refused with an ImportError (Determined's generated REST client)."""

from __future__ import annotations

from . import INSTEAD

raise ImportError(
    "determined.common.api.bindings is Determined's generated REST client (protobuf bindings for Determined's "
    f"master), which is not part of Stalwart; {INSTEAD}"
)
