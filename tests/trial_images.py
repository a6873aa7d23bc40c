"""The images the container tests' trials run in, built once per test run on the python image (container_servers).

`image_only_image`: the python image plus a pure-Python package, `stalwart_image_only` (`MARKER`), in its
site-packages: a package that only the image has (issue 28, acceptance 2). `torch_image`: the python image plus
torch, numpy and scikit-learn and what they need to run, copied from this venv (CPython 3.11, the image's own
minor) with their byte code, and neither Stalwart nor any of its own dependencies: the digits example runs in it
only with the harness the agent mounts. `push_image`: an image in the test registry under a name of the test's
(with the registry's credentials); `registry_only_image`: a small image of its own that only the registry has, for
the pull tests; `remove_local` untags an image in an engine, so that using it there needs a pull.

Each is made once per run, across xdist's workers: under a lock in the run directory, and only in the engines
that lack it. The torch image (about 1 GB of packages) is streamed into the engine's import: the python image's
tar, then the packages' files read straight from the venv, with no temporary tar written.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.metadata as metadata
import io
import pathlib
import re
import shutil
import tarfile
from collections.abc import Callable, Iterable, Iterator

import docker
import docker.errors
from packaging.requirements import Requirement

from container_daemons import Registry
from container_servers import build_image, servers

SITE_PACKAGES = "usr/local/lib/python3.11/dist-packages"  # on the image's sys.path (Debian's python3.11)
IMAGE_ONLY = "localhost/stalwart-test/image-only:1"
IMAGE_ONLY_MODULE = "stalwart_image_only"
MARKER = "from the image"
TORCH = "localhost/stalwart-test/torch:1"
TORCH_ROOTS = ("torch", "numpy", "scikit-learn")
NOT_IN_IMAGES = ("stalwart", "pydantic", "pydantic-core", "fastapi", "httpx", "pyyaml")  # the harness's own
SKIPPED = ("torch/include/", "torch/test/")  # C++ headers and test programs: not for running Python
CHUNK = 1 << 20


def api(engine_url: str) -> docker.APIClient:
    return docker.APIClient(base_url=engine_url, version="1.41", timeout=600)


def _has(engine_url: str, image: str) -> bool:
    try:
        api(engine_url).inspect_image(image)
    except docker.errors.NotFound:  # Podman's 'image not known' is no ImageNotFound to the SDK
        return False
    return True


def _safe(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", key)


@contextlib.contextmanager
def _run_lock(key: str) -> Iterator[pathlib.Path]:
    """The run's record directory of trial images, held under a lock for `key` (across xdist's workers)."""
    records = servers().run_dir / "trial-images"
    records.mkdir(exist_ok=True)
    with open(records / f"{_safe(key)}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield records


def _once(name: str, engine_urls: Iterable[str], make: Callable[[list[str]], None]) -> str:
    """`name` in each of `engine_urls`, made by `make(the engines lacking it)` under the run's lock for it."""
    with _run_lock(name):
        lacking = [url for url in engine_urls if not _has(url, name)]
        if lacking:
            make(lacking)
    return name


# -- the image-only package --------------------------------------------------------------------------------------


def image_only_image(engine_urls: Iterable[str]) -> str:
    """The python image plus `stalwart_image_only` (with its dist-info), in each of `engine_urls`."""
    files: dict[str, pathlib.Path | bytes] = {
        f"{SITE_PACKAGES}/{IMAGE_ONLY_MODULE}/__init__.py":
            f'"""A package only the test image has."""\n\nMARKER = {MARKER!r}\n'.encode(),
        f"{SITE_PACKAGES}/{IMAGE_ONLY_MODULE}-1.0.dist-info/METADATA":
            b"Metadata-Version: 2.1\nName: stalwart-image-only\nVersion: 1.0\n",
    }
    return _once(IMAGE_ONLY, engine_urls, lambda lacking: build_image(lacking, IMAGE_ONLY, files))


# -- the torch image ---------------------------------------------------------------------------------------------


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def torch_distributions() -> list[metadata.Distribution]:
    """torch, numpy and scikit-learn and everything they require to run (no extras), as installed here."""
    found: dict[str, metadata.Distribution] = {}
    todo = list(TORCH_ROOTS)
    while todo:
        name = todo.pop()
        if _canonical(name) in found:
            continue
        found[_canonical(name)] = dist = metadata.distribution(name)
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    wrong = sorted(set(found) & {_canonical(n) for n in NOT_IN_IMAGES})
    assert not wrong, f"the torch image must not hold Stalwart's own packages, but torch's needs pull in {wrong}"
    return sorted(found.values(), key=lambda d: _canonical(d.metadata["Name"]))


def _package_files(dists: Iterable[metadata.Distribution]) -> Iterator[tuple[pathlib.Path, str]]:
    """Each installed file of `dists` inside site-packages (byte code included) and its path in the image."""
    for dist in dists:
        for file in dist.files or []:
            rel = file.as_posix()
            if rel.startswith("..") or rel.startswith(SKIPPED) or "/tests/" in rel:  # the venv's bin/; tests
                continue
            path = pathlib.Path(str(dist.locate_file(file)))
            if path.is_file():
                yield path, f"{SITE_PACKAGES}/{rel}"


def _members(files: Iterable[tuple[pathlib.Path, str]]) -> Iterator[bytes]:
    """Tar members (root-owned, modes and times kept: the byte code stays valid) of `files`, their directories
    first, read in chunks."""
    reader = tarfile.TarFile(fileobj=io.BytesIO(), mode="w")  # only for gettarinfo (which also finds hard links)
    made: set[str] = set()
    for path, arcname in files:
        parts = arcname.split("/")
        for depth in range(SITE_PACKAGES.count("/") + 2, len(parts)):
            directory = "/".join(parts[:depth])
            if directory not in made:
                made.add(directory)
                entry = tarfile.TarInfo(directory)
                entry.type, entry.mode, entry.mtime = tarfile.DIRTYPE, 0o755, int(path.stat().st_mtime)
                yield entry.tobuf(tarfile.GNU_FORMAT)
        info = reader.gettarinfo(str(path), arcname)
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        yield info.tobuf(tarfile.GNU_FORMAT)
        if info.isreg():
            with open(path, "rb") as data:
                while chunk := data.read(CHUNK):
                    yield chunk
            if info.size % 512:
                yield b"\0" * (512 - info.size % 512)


def _tar_with(base_tar: pathlib.Path, members: Iterator[bytes]) -> Iterator[bytes]:
    """`base_tar` without its end-of-archive blocks, then `members`, then the end of the archive."""
    with tarfile.open(base_tar) as base:
        for _ in base:  # reads the headers only: where the members end
            pass
        end = base.offset
    with open(base_tar, "rb") as raw:
        left = end
        while left and (chunk := raw.read(min(CHUNK, left))):
            left -= len(chunk)
            yield chunk
    yield from members
    yield b"\0" * 1024


def _stream_import(engine_url: str, name: str, stream: Iterator[bytes]) -> None:
    repository, _, tag = name.rpartition(":")
    answer = api(engine_url).import_image(src=stream, repository=repository, tag=tag, stream_src=True)
    if "error" in str(answer).lower():
        raise RuntimeError(f"importing {name} into {engine_url}: {answer}")


def torch_image(engine_url: str) -> str:
    """The python image plus torch, numpy, scikit-learn and their needs (no Stalwart), in the engine (Docker)."""
    def make(lacking: list[str]) -> None:
        base_tar = servers().python_tar
        assert base_tar is not None, "no python image on this machine"
        for url in lacking:
            _stream_import(url, TORCH, _tar_with(base_tar, _members(_package_files(torch_distributions()))))

    return _once(TORCH, [engine_url], make)


# -- the registry ------------------------------------------------------------------------------------------------


def push_image(engine_url: str, registry: Registry, image: str, name: str) -> str:
    """`image` (present in the engine) pushed to the test registry as `name` (`repo:tag`) with the registry's
    credentials, once per run; the reference to pull it by (`HOST/repo:tag`), which the engine has not kept."""
    repository, _, tag = name.partition(":")
    remote, tag = f"{registry.host}/{repository}", tag or "latest"
    with _run_lock(f"push {remote}:{tag}") as records:
        done = records / f"{_safe(f'{remote}:{tag}')}.pushed"
        if not done.exists():
            client = api(engine_url)
            client.tag(image, remote, tag)
            try:
                for item in client.push(remote, tag, stream=True, decode=True, auth_config=registry.auth):
                    if item.get("error") or item.get("errorDetail"):
                        raise RuntimeError(f"pushing {image} as {remote}:{tag}: {item.get('error') or item}")
            finally:
                client.remove_image(f"{remote}:{tag}")  # the tag only: the image keeps its own name
            done.touch()
    return f"{remote}:{tag}"


def registry_only_image(engine_url: str, registry: Registry, name: str) -> str:
    """An image of its own (busybox, and a file naming it and the run: a layer no other image has) in the test
    registry as `name` (`repo:tag`), pushed through the engine once per run, and left in no engine: using it
    anywhere pulls it, layers and all. The reference to pull it by."""
    repository, _, tag = name.partition(":")
    source = f"localhost/stalwart-test/source-{_safe(repository.replace('/', '-'))}"
    with _run_lock(f"registry-only {name}") as records:
        done = records / f"{_safe(name)}.registry-only"
        if not done.exists():
            layer = io.BytesIO()
            with tarfile.open(fileobj=layer, mode="w") as tar:
                tar.add(shutil.which("busybox") or "/bin/busybox", arcname="bin/busybox")
                text = f"{name} {servers().run_dir}\n".encode()
                marker = tarfile.TarInfo("etc/stalwart-test-image")
                marker.size = len(text)
                tar.addfile(marker, io.BytesIO(text))
            api(engine_url).import_image_from_data(layer.getvalue(), repository=source, tag=tag or "latest")
            push_image(engine_url, registry, f"{source}:{tag or 'latest'}", name)
            remove_local(engine_url, f"{source}:{tag or 'latest'}")  # its last name: its layer goes too
            done.touch()
    return f"{registry.host}/{repository}:{tag or 'latest'}"


def remove_local(engine_url: str, image: str) -> None:
    """Untag `image` in the engine, so that using it needs a pull (nothing when it is not there)."""
    with contextlib.suppress(docker.errors.NotFound):  # Podman's 'image not known' included
        api(engine_url).remove_image(image)
