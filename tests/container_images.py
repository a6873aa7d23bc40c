"""The images the container tests run, made offline and imported into each engine once per test run.

`busybox.tar`: the static busybox (machine-notes §3). `python.tar`: Debian bookworm's minimal base with
python3, made by debootstrap from the machine's own Debian mirror, slimmed (no docs, man pages, locales, apt
lists or caches), with one setuid-root copy of python3 (`SETUID_PYTHON`: the check that a setuid binary stays
non-root under no-new-privileges). The debootstrap result is cached between runs (`STALWART_TEST_CACHE`, else
~/.cache/stalwart-tests): making it takes about 40 s, unpacking it a second. Its root stays in the run
directory, and `build_image` makes further images on it (the python image plus files of a test's choosing).
"""

from __future__ import annotations

import hashlib
import io
import os
import pathlib
import re
import shutil
import subprocess
import tarfile
import threading
from collections.abc import Iterable, Mapping

SUITE = "bookworm"
INCLUDE = "python3"
SETUID_PYTHON = "/usr/local/bin/setuid-python3"  # mode 4755, owned by root
SLIM = ("usr/share/doc", "usr/share/man", "usr/share/locale", "usr/share/info", "var/lib/apt/lists",
        "var/cache/apt", "var/cache/debconf", "var/log")
RECIPE = 1  # bump when what goes into the cached root changes


def debian_mirror() -> str:
    """The machine's own Debian mirror (deb822 sources, else sources.list), else Debian's default."""
    sources = pathlib.Path("/etc/apt/sources.list.d/debian.sources")
    if sources.exists() and (m := re.search(r"^URIs:\s*(\S+)", sources.read_text(), re.M)):
        return m.group(1)
    listing = pathlib.Path("/etc/apt/sources.list")
    if listing.exists() and (m := re.search(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)", listing.read_text(), re.M)):
        return m.group(1)
    return "http://deb.debian.org/debian"


def _cache_dir() -> pathlib.Path:
    base = os.environ.get("STALWART_TEST_CACHE") or os.path.expanduser("~/.cache/stalwart-tests")
    return pathlib.Path(base)


def _debootstrap(root: pathlib.Path, mirror: str) -> None:
    done = subprocess.run(["debootstrap", "--variant=minbase", f"--include={INCLUDE}", SUITE, str(root), mirror],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"debootstrap {SUITE} from {mirror} failed ({done.returncode}):\n{done.stdout[-2000:]}"
                           f"\n{done.stderr[-2000:]}")
    for rel in SLIM:
        for entry in (root / rel).glob("*"):
            shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
    setuid = root / SETUID_PYTHON.lstrip("/")
    shutil.copy2(root / "usr/bin/python3", setuid)
    os.chown(setuid, 0, 0)
    os.chmod(setuid, 0o4755)


def _tar(root: pathlib.Path, out: pathlib.Path) -> None:
    """`root`'s tree as a tar (numeric owners, modes and setuid bits kept; no device nodes)."""
    subprocess.run(["tar", "-C", str(root), "--numeric-owner", "--exclude=./dev/*", "--exclude=./proc/*",
                    "--exclude=./sys/*", "-cf", str(out), "."], check=True)


def python_rootfs(run_dir: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """The python image's root in the run directory and its tar there, from the cache or made now."""
    mirror = debian_mirror()
    key = hashlib.sha256(f"{SUITE} {INCLUDE} {mirror} {RECIPE}".encode()).hexdigest()[:16]
    cached = _cache_dir() / f"debian-{SUITE}-{INCLUDE}-{key}.tar"
    root, tar = run_dir / "rootfs", run_dir / "python.tar"
    root.mkdir()
    if cached.exists():
        subprocess.run(["tar", "-C", str(root), "--numeric-owner", "-xpf", str(cached)], check=True)
        shutil.copyfile(cached, tar)
        return root, tar
    _debootstrap(root, mirror)
    _tar(root, tar)
    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.with_suffix(f".{os.getpid()}.partial")
    shutil.copyfile(tar, partial)
    os.replace(partial, cached)  # whole or absent, also with two runs at once
    return root, tar


def busybox_tar(run_dir: pathlib.Path) -> pathlib.Path:
    """A tar of a root holding only the static busybox at /bin/busybox and its `sh`."""
    busybox = shutil.which("busybox") or "/bin/busybox"
    tar = run_dir / "busybox.tar"
    with tarfile.open(tar, "w") as out:
        out.add(busybox, arcname="bin/busybox")
        link = tarfile.TarInfo("bin/sh")
        link.type, link.linkname = tarfile.SYMTYPE, "busybox"
        out.addfile(link)
    return tar


def import_image(engine_urls: Iterable[str], tar: pathlib.Path, name: str) -> None:
    """Import `tar` as image `name` (`repo:tag`) into every engine, the engines at once."""
    import docker

    errors: list[BaseException] = []

    def one(url: str) -> None:
        try:
            docker.APIClient(base_url=url, version="1.41", timeout=600).import_image(str(tar), repository=name)
        except BaseException as err:  # reported below, with the engine's URL
            errors.append(RuntimeError(f"importing {name} into {url}: {err}"))

    threads = [threading.Thread(target=one, args=(url,)) for url in engine_urls]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def build_image(engine_urls: Iterable[str], name: str, extra_files: Mapping[str, pathlib.Path | bytes],
                base_tar: pathlib.Path) -> str:
    """Image `name`: the python image's root plus `extra_files` (path in the image -> a host file or directory,
    kept with its mode, or bytes: 0755 under a `bin/` directory, else 0644), imported into every engine."""
    out = base_tar.with_name(f"{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}.tar")
    shutil.copyfile(base_tar, out)
    with tarfile.open(out, "a") as tar:
        for path_in_image, source in extra_files.items():
            arcname = path_in_image.lstrip("/")
            if isinstance(source, bytes):
                info = tarfile.TarInfo(arcname)
                info.size, info.mode = len(source), 0o755 if "bin/" in arcname else 0o644
                tar.addfile(info, io.BytesIO(source))
            else:
                tar.add(str(source), arcname=arcname)
    try:
        import_image(engine_urls, out, name)
    finally:
        out.unlink()
    return name
