"""determined.experimental.core_v2: Stalwart's core_v2 itself (the same module object, so `core_v2.train` and the
other module-wide contexts that init() sets are seen through either name)."""

import sys

from stalwart.harness import core_v2

sys.modules[__name__] = core_v2
