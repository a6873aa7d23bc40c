"""The harness bundle (agent/harness_bundle.py): Stalwart's harness and its core packages, built for a CPython
minor version, run with nothing else on the path; it is cached, world-readable, built once under races, and
refused for an unsupported Python or an index out of reach with the way to pre-build it."""

from __future__ import annotations

import concurrent.futures
import json
import os
import pathlib
import shutil
import stat
import subprocess
import sys
import textwrap

import pytest

import stalwart
from stalwart.agent.harness_bundle import MANIFEST, SUPPORTED, BundleError, bundle_dir

OWN = sys.version_info[:2]
EXTRAS_AND_THE_IMAGES_OWN = ("torch", "numpy", "fastapi", "sqlalchemy", "uvicorn", "docker", "pandas", "optuna")


@pytest.fixture(scope="module")
def own_bundle(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    return bundle_dir(tmp_path_factory.mktemp("bundles"), OWN)


def isolated_python(bundle: pathlib.Path, code: str, cwd: pathlib.Path | None = None,
                    env: dict[str, str] | None = None, args: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """Run `code` in this interpreter isolated (-I: no PYTHONPATH, no user site; -S: no site-packages; -B: writes
    no caches, as on a read-only mount) with only the bundle put first on sys.path."""
    prologue = f"import sys; sys.path[:0] = [{str(bundle)!r}]\n"
    return subprocess.run([sys.executable, "-I", "-S", "-B", "-c", prologue + textwrap.dedent(code), *args],
                          capture_output=True, text=True, timeout=120, cwd=cwd, env=env)


def test_the_bundle_alone_imports_the_harness_and_the_determined_compat_api(own_bundle: pathlib.Path) -> None:
    res = isolated_python(own_bundle, """
        import stalwart.harness.launch, pydantic_core, yaml
        from stalwart.harness.compat import COMPAT_PATH
        sys.path.insert(0, str(COMPAT_PATH))  # as the harness's launcher puts it first on PYTHONPATH
        import determined
        from determined import core
        import determined.experimental, determined.searcher
        print(stalwart.harness.launch.__file__, pydantic_core.__file__, yaml.__file__, determined.__file__,
              core.__file__)
        print("site" in sys.modules, [m for m in ("torch", "numpy") if m in sys.modules])
    """)
    assert res.returncode == 0, res.stderr
    files, flags = res.stdout.splitlines()
    assert all(f.startswith(str(own_bundle)) for f in files.split()), files
    assert flags == "False []"


def test_the_harness_launches_an_entrypoint_that_sees_only_the_bundle(own_bundle: pathlib.Path,
                                                                     tmp_path: pathlib.Path) -> None:
    """`python -m stalwart.harness.launch` from the bundle runs the entrypoint with the `determined` package first on
    PYTHONPATH, as a container whose PYTHONPATH is the mount point does."""
    probe = "import determined, stalwart; from determined import core; print(determined.__file__, stalwart.__file__)"
    (tmp_path / "config.yaml").write_text(json.dumps({"entrypoint": [sys.executable, "-S", "-c", probe]}))
    res = isolated_python(own_bundle, "import runpy; runpy.run_module('stalwart.harness.launch', run_name='__main__')",
                          cwd=tmp_path, env={"PATH": os.environ["PATH"], "PYTHONPATH": str(own_bundle)},
                          args=("--local", "config.yaml"))
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == [str(own_bundle / "stalwart/harness/compat/determined/__init__.py"),
                                  str(own_bundle / "stalwart/__init__.py")]


def test_it_holds_stalwarts_core_packages_and_nothing_the_image_brings(own_bundle: pathlib.Path) -> None:
    manifest = json.loads((own_bundle / MANIFEST).read_text())
    names = {pin.split("==")[0] for pin in manifest["distributions"]}
    assert {"pydantic", "pydantic-core", "pyyaml", "httpx", "click", "rich", "pathspec"} <= names
    assert manifest["python"] == f"{OWN[0]}.{OWN[1]}" and manifest["stalwart"] == stalwart.__version__
    for name in EXTRAS_AND_THE_IMAGES_OWN:
        assert name not in names
        assert not (own_bundle / name).exists()
    assert not (own_bundle / "bin").exists()
    assert not list(own_bundle.glob("*.pth"))


def test_every_file_is_world_readable_and_nobody_elses_to_change(own_bundle: pathlib.Path) -> None:
    modes = {stat.S_IMODE(p.stat().st_mode) for p in own_bundle.rglob("*") if p.is_file()}
    dir_modes = {stat.S_IMODE(p.stat().st_mode) for p in [own_bundle, *own_bundle.rglob("*")] if p.is_dir()}
    assert modes == {0o644}
    assert dir_modes == {0o755}
    # compiled here once: a read-only mount keeps no caches, so each process would compile the harness again
    assert list((own_bundle / "stalwart/harness").glob("__pycache__/launch.cpython-*.pyc"))


def test_a_second_call_reuses_the_bundle(own_bundle: pathlib.Path) -> None:
    bundle = bundle_dir(own_bundle.parent, OWN)  # the fixture's, unless Stalwart's source changed since
    before, cached = (bundle / MANIFEST).stat(), sorted(own_bundle.parent.iterdir())
    assert bundle_dir(own_bundle.parent, OWN) == bundle
    after = (bundle / MANIFEST).stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert sorted(own_bundle.parent.iterdir()) == cached


def test_two_processes_racing_build_one_bundle(tmp_path: pathlib.Path) -> None:
    code = ("import pathlib, sys; from stalwart.agent.harness_bundle import bundle_dir; "
            f"print(bundle_dir(pathlib.Path(sys.argv[1]), {OWN!r}))")
    racers = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [r.communicate(timeout=120) for r in racers]
    assert [r.returncode for r in racers] == [0, 0], outputs
    (first, _), (second, _) = outputs
    assert first == second
    built = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert built == [pathlib.Path(first.strip())]  # no second copy, no half-built directory left
    assert (built[0] / MANIFEST).is_file()


def test_two_threads_racing_build_one_bundle(tmp_path: pathlib.Path) -> None:
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        built = list(pool.map(lambda _: bundle_dir(tmp_path, OWN), range(2)))
    assert built[0] == built[1]
    assert [p for p in tmp_path.iterdir() if p.is_dir()] == [built[0]]


def test_a_changed_stalwart_gives_a_new_bundle(tmp_path: pathlib.Path) -> None:
    copy = tmp_path / "src"
    shutil.copytree(pathlib.Path(stalwart.__file__).parent, copy / "stalwart",
                    ignore=shutil.ignore_patterns("__pycache__"))
    code = ("import pathlib, sys; sys.path.insert(0, sys.argv[2]); import stalwart; "
            "assert stalwart.__file__.startswith(sys.argv[2]), stalwart.__file__; "
            "from stalwart.agent.harness_bundle import bundle_dir; "
            f"print(bundle_dir(pathlib.Path(sys.argv[1]), {OWN!r}))")

    def build() -> pathlib.Path:
        res = subprocess.run([sys.executable, "-c", code, str(tmp_path / "bundles"), str(copy)], capture_output=True,
                             text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        return pathlib.Path(res.stdout.strip())

    first = build()
    (copy / "stalwart/harness/launch.py").write_text((copy / "stalwart/harness/launch.py").read_text() + "\n# new\n")
    second = build()
    assert first != second
    assert (second / "stalwart/harness/launch.py").read_text().endswith("# new\n")
    assert not (first / "stalwart/harness/launch.py").read_text().endswith("# new\n")


@pytest.mark.parametrize("version", [(3, 10), (2, 7), (3, 99)])
def test_an_unsupported_python_is_refused_naming_the_supported_ones(tmp_path: pathlib.Path,
                                                                   version: tuple[int, int]) -> None:
    with pytest.raises(BundleError) as err:
        bundle_dir(tmp_path, version)
    assert f"Python {version[0]}.{version[1]}" in str(err.value)
    assert "supported versions: 3.11, 3.12, 3.13" in str(err.value)
    assert SUPPORTED == ((3, 11), (3, 12), (3, 13))
    assert not list(tmp_path.iterdir())


def test_a_bundle_for_another_python_has_that_pythons_binaries(tmp_path: pathlib.Path) -> None:
    other = (3, 12) if OWN != (3, 12) else (3, 13)
    tag = f"cpython-{other[0]}{other[1]}"
    bundle = bundle_dir(tmp_path, other)  # from the package index: a few MB
    assert bundle.name.startswith(f"cp{other[0]}{other[1]}-")
    assert list((bundle / "pydantic_core").glob(f"_pydantic_core.{tag}-*.so"))
    assert list((bundle / "yaml").glob(f"_yaml.{tag}-*.so"))
    assert not [p for p in bundle.rglob("*.so") if tag not in p.name]
    assert (bundle / "stalwart/harness/launch.py").is_file()
    assert json.loads((bundle / MANIFEST).read_text())["python"] == f"{other[0]}.{other[1]}"


def test_an_index_out_of_reach_says_how_to_build_the_bundle_beforehand(tmp_path: pathlib.Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # none of this machine's mirrors
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")  # nothing listens on the discard port
    for name in ("PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_NO_INDEX"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(BundleError) as err:
        bundle_dir(tmp_path, (3, 13))
    message = str(err.value)
    assert "could not build Stalwart's harness for Python 3.13: pip could not fetch" in message
    assert "pydantic-core==" in message
    assert "stalwart agent harness-bundle --python 3.13 --dest DIR" in message
    assert "--harness-bundles DIR" in message
    assert [p for p in tmp_path.iterdir() if p.is_dir()] == []  # nothing half-built left behind
