"""`determined.tensorboard.util`: finding TensorBoard files and giving profiler files per-rank names."""

from __future__ import annotations

import logging
import pathlib
import re

logger = logging.getLogger("determined.tensorboard")

tb_file_types = ["*tfevents*", "*.trace.json.gz", "*.trace.json", "*.memory_profile.json.gz", "*.pb"]
profiler_file_extensions = [".input_pipeline.pb", ".memory_profile.json.gz", ".tensorflow_stats.pb", ".xplane.pb",
                            ".kernel_stats.pb", ".overview_page.pb", ".trace.json.gz", ".trace.json"]
pytorch_profiler_file_extensions = [".pt.trace.json", ".pt.trace.json.gz"]
# <worker>[.<span, digits>].pt.trace.json[.gz]
pytorch_profiler_file_pattern = re.compile(r"^(.*?)(\.\d+)?\.pt\.trace\.json(?:\.gz)?$")


def find_tb_files(base_dir: pathlib.Path) -> list[pathlib.Path]:
    """The TensorBoard files under `base_dir` (event files, traces, profiles), by the patterns of `tb_file_types`."""
    if not base_dir.exists():
        logger.warning(f"{base_dir} directory does not exist.")
        return []
    return [path for pattern in tb_file_types for path in base_dir.rglob(pattern)]


def get_pytorch_profiler_file_extension(path: pathlib.Path) -> str | None:
    return next((ext for ext in pytorch_profiler_file_extensions if path.match(f"*{ext}")), None)


def get_rank_aware_path(path: pathlib.Path, rank: int) -> pathlib.Path:
    """A profiler file's name with `#<rank>` after its host (worker) part; other paths unchanged.

    host.input_pipeline.pb -> host#3.input_pipeline.pb; worker.123.pt.trace.json -> worker#3.123.pt.trace.json."""
    torch_ext = get_pytorch_profiler_file_extension(path)
    if torch_ext:
        return _rank_aware_pytorch_path(path, torch_ext, rank)
    for ext in profiler_file_extensions:
        if path.match(f"*{ext}"):
            return path.with_name(f"{path.name[:-len(ext)]}#{rank}{ext}")
    return path


def _rank_aware_pytorch_path(path: pathlib.Path, extension: str, rank: int) -> pathlib.Path:
    match = pytorch_profiler_file_pattern.match(path.name)
    if match is None:
        raise Exception(  # noqa: TRY002 - Determined raises a bare Exception here
            (f"Path: {path} has pytorch profiler extension {extension}", "but no matching file pattern"))
    worker, span = match.groups()
    return path.with_name(f"{worker}#{rank}{span or ''}{extension}")
