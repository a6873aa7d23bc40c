"""`python -m stalwart.harness.compat` prints the directory of Stalwart's `determined` package, for a script run
outside the cluster (detached mode, docs/detached.md): `PYTHONPATH=$(python -m stalwart.harness.compat) python
train.py`."""

from stalwart.harness.compat import COMPAT_PATH

print(COMPAT_PATH)
