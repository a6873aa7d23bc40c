"""`stalwart.core`: the Core API for user code (an alias of stalwart.harness.core)."""

from stalwart.harness.core import *  # noqa: F401,F403
from stalwart.harness.core import __all__  # noqa: F401
from stalwart.harness.errors import InvalidHP  # noqa: F401
