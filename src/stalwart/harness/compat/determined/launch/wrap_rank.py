"""`python3 -m determined.launch.wrap_rank [--no-redirect-stdio] RANK [--] SCRIPT...`, Determined's form.

RANK is a number, or a comma-separated list of environment variable names tried in order (e.g. `RANK`,
`LOCAL_RANK,RANK`). SCRIPT runs with every output line prefixed `[rank=N] ` by Stalwart's wrap_rank
(`stalwart.harness.wrap_rank`: signals passed on, the worker killed when its launcher is gone). Stalwart
already ships each container's output, so `--no-redirect-stdio` is accepted and changes nothing.
"""

from __future__ import annotations

import argparse
import os
import sys

from stalwart.harness.wrap_rank import run_with_rank

_DIGITS = set("0123456789")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python3 -m determined.launch.wrap_rank",
                                     usage="wrap_rank.py [-h] [--no-redirect-stdio] RANK SCRIPT...",
                                     description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-redirect-stdio", action="store_true",
                        help="accepted for Determined's command lines; Stalwart ships output either way")
    parser.add_argument("rank", metavar="RANK", help="an integer rank, or comma-separated names of environment "
                        "variables tried in order for an integer rank")
    parser.add_argument("script", nargs=argparse.REMAINDER, metavar="SCRIPT...", help="the worker command")
    return parser


def resolve_rank(rank: str, environ: dict[str, str] | os._Environ[str]) -> int:
    """The rank a RANK argument names; ValueError (saying what to fix) when it names none."""
    if rank and set(rank) <= _DIGITS:
        return int(rank)
    for name in rank.split(","):
        if name in environ:
            try:
                return int(environ[name])
            except ValueError:
                raise ValueError(f"environment variable {name}={environ[name]!r} is not an integer rank") from None
    raise ValueError(f"rank environment variable is set to {rank}, but it is not in os.environ "
                     "(give a number or the name of a variable the launcher sets, e.g. RANK or LOCAL_RANK)")


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    try:
        rank = resolve_rank(args.rank, os.environ)
    except ValueError as err:
        print(err, file=sys.stderr)
        return 1
    if not args.script:
        print("wrap_rank: no SCRIPT given (usage: python3 -m determined.launch.wrap_rank RANK -- CMD...)",
              file=sys.stderr)
        return 2
    return run_with_rank(args.script, str(rank))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
