"""Stalwart's harness for a container's Python: the `stalwart` package (which holds the `determined` compatibility
package, `stalwart/harness/compat/determined`) and the distributions of its core dependencies, built for one
CPython minor version into a directory that a container launcher bind-mounts read-only at MOUNT_POINT and puts
first on PYTHONPATH. A user's image without Stalwart then runs `python3 -m stalwart.harness.launch` unchanged.

Nothing of the image's own is replaced but these packages: torch, numpy and every extra come from the image.
For the agent's own Python the bundle is a copy of the files installed here; for another supported version the
same versions are fetched as binary wheels with pip (pydantic-core and PyYAML are compiled per version), so an
agent with no package index needs its bundles built beforehand: `stalwart agent harness-bundle --python 3.12
--dest DIR`, then `stalwart agent run --harness-bundles DIR`.

Bundles are cached under a directory per version and content (the versions installed here and Stalwart's own
source): a changed Stalwart gives a new bundle. A bundle for the agent's own Python holds its modules compiled
(a read-only mount keeps no `__pycache__`: each process would compile them again, about 0.4 s more per start).
One is built in a temporary directory and renamed into place under a file lock, so agents or threads that race
for it get one bundle; its files are world-readable (0644, directories 0755) since containers run as the tasks'
users.
"""

from __future__ import annotations

import compileall
import contextlib
import fcntl
import hashlib
import importlib.metadata as metadata
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field

import stalwart

# The CPython minor versions a bundle is built for: pyproject's `requires-python = ">=3.11"`, up to the newest
# version Stalwart is tested with.
SUPPORTED: tuple[tuple[int, int], ...] = ((3, 11), (3, 12), (3, 13))
MOUNT_POINT = "/opt/stalwart/harness"
CACHE_ENV = "STALWART_HARNESS_BUNDLES"  # `agent run --harness-bundles DIR` (or `harness_bundles` in its config)
MANIFEST = "stalwart-harness-bundle.json"  # written last, at the bundle's root: what it holds
FORMAT = 1  # the layout's version: a change here builds every bundle again
PIP_TIMEOUT_S = 600.0
_SKIPPED_SUFFIXES = (".pyc", ".pth")
# Left to compile on import, if ever: pygments' hundreds of lexers and styles (rich loads only their registries).
NOT_COMPILED = re.compile(r"/pygments/(lexers|styles)/(?!__init__\.py$|_mapping\.py$)")


class BundleError(Exception):
    """No bundle for this Python can be had (an unsupported version, a package index out of reach, a cache
    directory that cannot be written): the message says what failed and how to fix it."""


@dataclass(frozen=True)
class _Plan:
    """What a bundle for one Python version holds: the installed distributions (by canonical name) and what
    applies only to that version and is not installed here (pip requirements, fetched unpinned)."""

    version: tuple[int, int]
    installed: dict[str, metadata.Distribution] = field(default_factory=dict)
    not_installed: tuple[str, ...] = ()

    def pins(self) -> list[str]:
        return [f"{name}=={dist.version}" for name, dist in sorted(self.installed.items())] + list(self.not_installed)


def version_text(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def supported_text() -> str:
    return ", ".join(version_text(v) for v in SUPPORTED)


def parse_version(text: str) -> tuple[int, int]:
    """'3.12' → (3, 12); BundleError naming the supported versions for anything else."""
    major, _, minor = text.strip().partition(".")
    if not (major.isdigit() and minor.isdigit()) or (int(major), int(minor)) not in SUPPORTED:
        raise BundleError(f"Python {text!r} is not a version Stalwart's harness supports; supported: "
                          f"{supported_text()}")
    return int(major), int(minor)


def cache_root(work_root: pathlib.Path) -> pathlib.Path:
    """Where an agent keeps its bundles: $STALWART_HARNESS_BUNDLES (pre-built ones: `agent run --harness-bundles
    DIR`), else `harness-bundles` in its work directory."""
    given = os.environ.get(CACHE_ENV)
    return pathlib.Path(given) if given else pathlib.Path(work_root) / "harness-bundles"


def bundle_dir(cache_root: pathlib.Path, version: tuple[int, int]) -> pathlib.Path:
    """The bundle for CPython `version` under `cache_root`, built first when it is not there yet."""
    version = (int(version[0]), int(version[1]))
    if version not in SUPPORTED:
        raise BundleError(f"Python {version_text(version)} cannot run Stalwart's harness; supported versions: "
                          f"{supported_text()}")
    plan = _plan(version)
    sources = _stalwart_sources()
    key = _key(plan, sources)
    target = pathlib.Path(cache_root) / key
    if (target / MANIFEST).is_file():
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with _locked(target.parent / f".{key}.lock"):
            if not (target / MANIFEST).is_file():
                _build_into_place(target, plan, sources)
    except OSError as err:
        raise BundleError(f"cannot write Stalwart's harness for Python {version_text(version)} to {target}: "
                          f"{err}; give the agent a writable directory with --harness-bundles DIR (or "
                          f"`harness_bundles` in its config file)") from err
    return target


# -- what goes in ---------------------------------------------------------------------------------------
def _canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _plan(version: tuple[int, int]) -> _Plan:
    """Stalwart's core dependencies, recursively, as they apply on CPython `version` (no extras)."""
    try:
        from packaging.requirements import Requirement
    except ImportError as err:  # pragma: no cover - pyproject's `containers` extra lists packaging
        raise BundleError("building Stalwart's harness for containers needs the `packaging` package: "
                          "pip install 'stalwart[containers]'") from err
    environment = {"python_version": version_text(version), "python_full_version": f"{version_text(version)}.0",
                   "extra": ""}
    installed: dict[str, metadata.Distribution] = {}
    not_installed: set[str] = set()
    todo = [_distribution("stalwart")]
    while todo:
        dist = todo.pop()
        for text in dist.requires or []:
            req = Requirement(text)
            name = _canonical(req.name)
            if (req.marker is not None and not req.marker.evaluate(environment)) or name in installed:
                continue
            try:
                installed[name] = metadata.distribution(req.name)
            except metadata.PackageNotFoundError:
                not_installed.add(f"{req.name}{req.specifier}")
                continue
            todo.append(installed[name])
    return _Plan(version, installed, tuple(sorted(not_installed)))


def _distribution(name: str) -> metadata.Distribution:
    try:
        return metadata.distribution(name)
    except metadata.PackageNotFoundError as err:
        raise BundleError(f"{name} is not installed as a distribution in {sys.prefix} (pip install it): its "
                          f"dependencies cannot be found for the harness bundle") from err


def _stalwart_sources() -> list[tuple[str, bytes]]:
    """The files of the `stalwart` package (relative path, content), compiled caches left out: read once, so that
    the bundle holds exactly what its key was computed from."""
    package = pathlib.Path(stalwart.__file__).resolve().parent
    files = []
    for path in sorted(package.rglob("*")):
        relative = path.relative_to(package.parent)
        if path.is_file() and "__pycache__" not in relative.parts and path.suffix not in _SKIPPED_SUFFIXES:
            files.append((relative.as_posix(), path.read_bytes()))
    return files


def _key(plan: _Plan, sources: list[tuple[str, bytes]]) -> str:
    """The bundle's directory name: its Python, and a hash of its versions, platform and Stalwart's source."""
    digest = hashlib.sha256(f"{FORMAT}\n{sysconfig.get_platform()}\n".encode())
    digest.update("\n".join(plan.pins()).encode())
    for relative, content in sources:
        digest.update(f"\0{relative}\0{len(content)}\0".encode())
        digest.update(content)
    return f"cp{plan.version[0]}{plan.version[1]}-{digest.hexdigest()[:16]}"


# -- building -------------------------------------------------------------------------------------------
@contextlib.contextmanager
def _locked(path: pathlib.Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` (other processes, and other threads of this one, wait for it)."""
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _build_into_place(target: pathlib.Path, plan: _Plan, sources: list[tuple[str, bytes]]) -> None:
    """Build in a temporary directory beside `target`, then rename it into place (called under the lock)."""
    for left in target.parent.glob(f".{target.name}.build-*"):  # a build that died half-way
        shutil.rmtree(left, ignore_errors=True)
    if target.exists():  # no manifest: not a finished bundle
        shutil.rmtree(target)
    building = pathlib.Path(tempfile.mkdtemp(prefix=f".{target.name}.build-", dir=target.parent))
    try:
        if plan.version == sys.version_info[:2] and not plan.not_installed:
            _copy_installed(building, plan)
        else:
            _pip_install(building, plan)
        for relative, content in sources:
            destination = building / relative
            destination.parent.mkdir(parents=True, exist_ok=True)
            destination.write_bytes(content)
        if plan.version == sys.version_info[:2]:  # compiled once here: a read-only mount keeps no caches
            compileall.compile_dir(building, quiet=2, rx=NOT_COMPILED)
        manifest = {"format": FORMAT, "python": version_text(plan.version), "stalwart": stalwart.__version__,
                    "distributions": plan.pins(), "platform": sysconfig.get_platform()}
        (building / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        _make_readable(building)
        os.rename(building, target)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise


def _copy_installed(destination: pathlib.Path, plan: _Plan) -> None:
    """Copy the distributions' installed files (as their RECORDs list them; no scripts, no caches)."""
    for name, dist in plan.installed.items():
        if dist.files is None:
            raise BundleError(f"{name} {dist.version} lists no installed files (its RECORD is missing): reinstall "
                              f"it with pip")
        for file in dist.files:
            parts = pathlib.PurePosixPath(file).parts
            if parts[0] == ".." or "__pycache__" in parts or file.suffix in _SKIPPED_SUFFIXES:
                continue
            source = pathlib.Path(str(dist.locate_file(file)))
            if source.is_file():
                (destination / file).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, destination / file)


def _pip_install(destination: pathlib.Path, plan: _Plan) -> None:
    """Fetch the same versions as binary wheels built for `plan.version` into `destination`."""
    what = version_text(plan.version)
    command = [sys.executable, "-m", "pip", "install", "--target", str(destination), "--python-version", what,
               "--implementation", "cp", "--only-binary=:all:", "--no-deps", "--no-compile", "--no-input",
               "--disable-pip-version-check", "--no-warn-script-location", "--timeout", "15", "--retries", "1",
               "--quiet", *plan.pins()]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=PIP_TIMEOUT_S,
                              stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise BundleError(_pip_failed(plan, str(err))) from err
    if done.returncode != 0:
        raise BundleError(_pip_failed(plan, _pip_reason(done.stderr or done.stdout) or
                                      f"pip exited with {done.returncode}"))
    shutil.rmtree(destination / "bin", ignore_errors=True)  # console scripts: the harness runs none


def _pip_reason(output: str) -> str:
    """pip's own words for a failure: its ERROR lines, and the network's error (`[Errno 111] Connection refused`)
    from a retry warning."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line.removeprefix("ERROR: ") for line in lines if line.startswith("ERROR:")]
    network = re.findall(r"\[Errno -?\d+\][^'\")]*", output)
    return "; ".join(dict.fromkeys([*network[-1:], *errors[-2:]])) or " ".join(lines[-3:])


def _pip_failed(plan: _Plan, reason: str) -> str:
    what = version_text(plan.version)
    return (f"could not build Stalwart's harness for Python {what}: pip could not fetch {', '.join(plan.pins())} "
            f"as wheels for CPython {what} ({reason}). Where no package index is reachable, build it on a machine "
            f"with the same Stalwart and package versions that reaches one: `stalwart agent harness-bundle "
            f"--python {what} --dest DIR`; copy DIR here and run the agent with `--harness-bundles DIR` (or "
            f"`harness_bundles: DIR` in its config file)")


def _make_readable(root: pathlib.Path) -> None:
    """Every user may read the bundle, none may change it: directories 0755, files 0644."""
    os.chmod(root, 0o755)
    for directory, subdirectories, files in os.walk(root):
        for name in subdirectories:
            os.chmod(os.path.join(directory, name), 0o755)
        for name in files:
            os.chmod(os.path.join(directory, name), 0o644)
