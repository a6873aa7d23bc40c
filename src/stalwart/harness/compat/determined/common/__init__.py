"""`determined.common`: the helpers of Determined's common package that trial code uses (`check`, `util`).

`determined.common.api` holds no REST client here: Determined's generated bindings are not part of Stalwart.
"""

from __future__ import annotations

from . import check, util

__all__ = ["check", "util"]
