"""`stalwart checkpoint|c ...`: describe and download checkpoints."""

from __future__ import annotations

import pathlib
import shutil
from typing import Any

import click

from stalwart.cli import output
from stalwart.cli.base import AliasedGroup, client_of, json_option
from stalwart.context import safe_extract


@click.group("checkpoint", cls=AliasedGroup)
def checkpoint() -> None:
    """Inspect and download checkpoints."""


@checkpoint.command("describe")
@click.argument("uuid")
@json_option
@click.pass_context
def describe(ctx, uuid, as_json) -> None:
    """Show a checkpoint's trial, steps, files and metadata."""
    c = client_of(ctx).get_checkpoint(uuid).checkpoint
    if as_json:
        return output.print_json(c)
    storage = c.storage or {}
    output.table(["Field", "Value"], [
        ("UUID", c.uuid), ("Trial", c.trial_id), ("Steps completed", c.steps_completed),
        ("State", c.state), ("Reported", output.when(c.report_time)),
        ("Storage", f"{storage.get('type')} {storage.get('host_path', '')}"),
        ("Files", ", ".join(sorted(c.resources or {}))), ("Metadata", c.metadata),
    ])


def _local_dir(storage: dict[str, Any] | None, uuid: str) -> pathlib.Path | None:
    if storage is None or storage.get("type") != "shared_fs":
        return None
    base = pathlib.Path(storage["host_path"])
    if storage.get("storage_path"):
        base = base / storage["storage_path"]
    path = base / uuid
    return path if path.is_dir() else None


@checkpoint.command("download")
@click.argument("uuid")
@click.option("-o", "--output-dir", default=None, help="Where to put the files (default: checkpoints/UUID).")
@click.option("--mode", type=click.Choice(["auto", "direct", "master"]), default="auto", show_default=True)
@click.pass_context
def download(ctx, uuid, output_dir, mode) -> None:
    """Copy a checkpoint's files to a local directory."""
    client = client_of(ctx)
    c = client.get_checkpoint(uuid).checkpoint
    dest = pathlib.Path(output_dir or pathlib.Path("checkpoints") / uuid)
    local = _local_dir(c.storage, uuid) if mode in ("auto", "direct") else None
    if mode == "direct" and local is None:
        raise click.ClickException(f"checkpoint {uuid} is not on a file system this machine can see; use --mode master")
    if local is not None:
        shutil.copytree(local, dest, dirs_exist_ok=True)
    else:
        safe_extract(client.download_checkpoint(uuid), dest, max_size=10 * 1024**4)
    output.console.print(f"Downloaded checkpoint {uuid} to {dest}")
