"""`python3 -m determined.launch.torch_distributed [TORCH_OVERRIDES --] SCRIPT...`: Stalwart's launcher.

See `stalwart.harness.torch_distributed`: one worker per slot through torch.distributed.run,
`[rank=N]` on every output line, the whole gang stopped when one worker dies. `--trial
module:Class` (Determined's legacy form) runs the PyTorchTrial harness.
"""

from __future__ import annotations

import sys

from stalwart.harness.torch_distributed import main, split_overrides, worker_command

__all__ = ["main", "split_overrides", "worker_command"]

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
