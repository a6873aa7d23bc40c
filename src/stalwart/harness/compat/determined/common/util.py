"""`determined.common.util`: the general helpers of Determined 0.38.1's module, with the same results.

YAML goes through PyYAML with YAML 1.2's scalar rules (`_yaml12`), as Determined's ruamel.yaml safe
loader and dumper read and write it: `yes` stays a string, `1e3` is a float, keys come out sorted.
Two helpers serve only Determined's own CLI and REST session (`get_config_path`, `get_max_retries_config`);
they raise a NotImplementedError saying so.
"""

from __future__ import annotations

import datetime
import functools
import os
import random
import re
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Any, NoReturn, TypeVar, cast, overload

import yaml

from ._yaml12 import Yaml12SafeDumper, Yaml12SafeLoader

T = TypeVar("T")
U = TypeVar("U", bound=Callable[..., Any])
_FALSE_WORDS = ("n", "no", "f", "false", "off", "0")
_PROTOBUF_FORMATS = ("%Y-%m-%dT%H:%M:%S.%fZ", "%Y-%m-%dT%H:%M:%SZ")


@overload
def chunks(lst: str, chunk_size: int) -> Iterator[str]: ...


@overload
def chunks(lst: Sequence[T], chunk_size: int) -> Iterator[Sequence[T]]: ...


def chunks(lst: str | Sequence[T], chunk_size: int) -> Iterator[Any]:
    """Consecutive slices of `chunk_size` items, the last one shorter: chunks('ABCDEFG', 3) -> ABC DEF G."""
    for start in range(0, len(lst), chunk_size):
        yield lst[start:start + chunk_size]


def sizeof_fmt(val: int | float) -> str:
    """A byte count in binary units with one decimal: 123456789 -> '117.7MB'."""
    size = float(val)
    for unit in ("", "K", "M", "G", "T", "P", "E", "Z"):
        if abs(size) < 1024.0:
            return f"{size:3.1f}{unit}B"
        size /= 1024.0
    return f"{size:.1f}YB"


def debug_mode() -> bool:
    return os.getenv("DET_DEBUG", "").lower() in ("true", "1", "yes")


def preserve_random_state(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator: `fn` runs, and Python's `random` state is put back as it was afterwards."""

    @functools.wraps(fn)
    def with_saved_state(*args: Any, **kwargs: Any) -> Any:
        saved = random.getstate()
        try:
            return fn(*args, **kwargs)
        finally:
            random.setstate(saved)

    return with_saved_state


def yaml_safe_dump(data: Any, stream: IO[Any] | str | None = None,
                   default_flow_style: bool | None = None) -> Any:
    """YAML text of `data` (keys sorted, innermost collections in flow style unless told otherwise).

    With a stream, writes to it and returns None; else returns the text."""
    if isinstance(stream, str):
        raise TypeError("yaml_safe_dump writes to a file object; open the path first (stream=open(path, 'w'))")
    return yaml.dump(data, stream=stream, Dumper=Yaml12SafeDumper, default_flow_style=default_flow_style)


def yaml_safe_load(f: IO[Any] | str) -> Any:
    return yaml.load(f, Loader=Yaml12SafeLoader)  # noqa: S506 - a safe loader


def safe_load_yaml_with_exceptions(yaml_file: IO[Any] | str) -> Any:
    """Like `yaml_safe_load`, but a YAML error prints its problem and place and exits with status 1."""
    try:
        return yaml.load(yaml_file, Loader=Yaml12SafeLoader)  # noqa: S506 - a safe loader
    except yaml.MarkedYAMLError as err:
        print(f"Error: invalid experiment config file.\n{err.__class__.__name__}: {err.problem}\n{err.problem_mark}")
        sys.exit(1)


def _master_only(name: str) -> NoReturn:
    raise NotImplementedError(
        f"determined.common.util.{name}() configures Determined's own CLI and REST session, which are not part of "
        "Stalwart: inside a trial use determined.experimental.client (Stalwart's SDK), outside it the stalwart CLI"
    )


def get_config_path() -> NoReturn:
    _master_only("get_config_path")


def get_max_retries_config() -> NoReturn:
    _master_only("get_max_retries_config")


def parse_protobuf_timestamp(ts: str) -> datetime.datetime:
    """An RFC 3339 time as the master sends it: a trailing Z is UTC, and the fraction of a second is dropped."""
    if ts.endswith("Z"):
        ts = ts[:-1] + "+00:00"
    return datetime.datetime.fromisoformat(re.sub(r"\.[0-9]*", "", ts))


def is_protobuf_timestamp(ts: str) -> bool:
    """Whether `ts` is `YYYY-MM-DDTHH:MM:SS[.ffffff]Z` (protobuf wants the trailing Z)."""
    if not ts.endswith("Z"):
        return False
    for fmt in _PROTOBUF_FORMATS:
        try:
            datetime.datetime.strptime(ts, fmt)
        except (ValueError, TypeError):
            continue
        return True
    return False


def wait_for(predicate: Callable[[], tuple[bool, T]], timeout: int = 60, interval: float = 0.1) -> T:
    """Call `predicate` every `interval` s until it returns (True, value); TimeoutError after `timeout` s."""
    start = time.time()
    while True:
        if time.time() - start > timeout:
            raise TimeoutError("timed out waiting for predicate")
        done, value = predicate()
        time.sleep(interval)
        if done:
            return value


def deprecated(message: str | None = None) -> Callable[[U], U]:
    """Decorator: each call warns (DeprecationWarning) that the function will be removed."""

    def decorator(func: U) -> U:
        @functools.wraps(func)
        def warn_then_call(*args: Any, **kwargs: Any) -> Any:
            text = f"{func.__name__} is deprecated and will be removed in a future version."
            if message:
                text += f" {message}."
            warnings.warn(text, category=DeprecationWarning, stacklevel=2)
            return func(*args, **kwargs)

        return cast(U, warn_then_call)

    return decorator


def strtobool(val: str) -> bool:
    """False for an empty string and n/no/f/false/off/0 (any case); True for any other string."""
    return bool(val and val.lower() not in _FALSE_WORDS)


__all__ = ["chunks", "debug_mode", "deprecated", "get_config_path", "get_max_retries_config", "is_protobuf_timestamp",
           "parse_protobuf_timestamp", "preserve_random_state", "safe_load_yaml_with_exceptions", "sizeof_fmt",
           "strtobool", "wait_for", "yaml_safe_dump", "yaml_safe_load"]
