"""determined.core: the Core API (Stalwart's implementation, Determined's signatures)."""

from stalwart.harness.core import *  # noqa: F401,F403
from stalwart.harness.core import __all__  # noqa: F401
