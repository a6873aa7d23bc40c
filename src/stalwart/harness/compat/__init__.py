"""Import-compatible `determined` package for trial processes: the launcher puts COMPAT_PATH first on PYTHONPATH."""

import pathlib

COMPAT_PATH = pathlib.Path(__file__).resolve().parent
