"""How many slots this machine offers: the GPUs it can see, else a configured number of CPU slots."""

from __future__ import annotations

import os
import shutil
import subprocess


def visible_gpus() -> list[str]:
    """GPU indices this process may use (honouring CUDA_VISIBLE_DEVICES), found with nvidia-smi."""
    if not shutil.which("nvidia-smi"):
        return []
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    found = [str(i) for i, line in enumerate(l for l in out.splitlines() if l.startswith("GPU "))]
    allowed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if allowed is not None:
        wanted = [x.strip() for x in allowed.split(",") if x.strip()]
        found = [g for g in found if g in wanted]
    return found


def detect(cpu_slots: int | None) -> tuple[int, str]:
    """(number of slots, slot type). An explicit CPU slot count wins over GPU detection."""
    if cpu_slots is not None:
        return cpu_slots, "cpu"
    gpus = visible_gpus()
    if gpus:
        return len(gpus), "cuda"
    return 1, "cpu"
