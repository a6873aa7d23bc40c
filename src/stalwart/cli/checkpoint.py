"""`stalwart checkpoint|c ...`: describe, download and delete checkpoints; `fetch_checkpoint` for the other nouns."""

from __future__ import annotations

import pathlib
import shutil
from typing import Any, Literal

import click

from stalwart.api.errors import InvalidRequest
from stalwart.api.models.checkpoints import Checkpoint
from stalwart.cli import output
from stalwart.cli.base import AliasedGroup, client_of, format_options
from stalwart.client import Client
from stalwart.context.stream_unpack import extract_stream

DownloadMode = Literal["auto", "direct", "master"]
MODES: tuple[DownloadMode, ...] = ("auto", "direct", "master")
MAX_DOWNLOAD = 10 * 1024**4

mode_option = click.option(
    "--mode", type=click.Choice(MODES), default="auto", show_default=True,
    help="direct: copy from the storage this machine sees; master: through the master; auto: direct when it can.")


@click.group("checkpoint", cls=AliasedGroup, aliases={"rm": "delete"})
def checkpoint() -> None:
    """Inspect, download and delete checkpoints.

    A checkpoint is the saved state of a trial at one step, named by its UUID (`e list-checkpoints` and
    `trial describe` show them); its files are in the experiment's checkpoint storage. `c` is short for
    `checkpoint`."""


@checkpoint.command("describe")
@click.argument("uuid")
@format_options
@click.pass_context
def describe(ctx: click.Context, uuid: str, fmt: output.Format) -> None:
    """Show a checkpoint's trial, steps, files and metadata.

    Its trial, steps completed, state, when it was reported, the storage it is in, its files, and the metadata
    the trial saved with it. `download` copies its files."""
    c = client_of(ctx).get_checkpoint(uuid).checkpoint
    storage = c.storage or {}
    if fmt is not output.Format.TABLE:
        return output.emit(fmt, ["UUID", "Trial", "Steps", "State", "Reported", "Storage", "Files"],
                           [(c.uuid, c.trial_id, c.steps_completed, c.state, output.when(c.report_time),
                             storage.get("type"), " ".join(sorted(c.resources or {})))], json_data=c)
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


def fetch_checkpoint(client: Client, ckpt: Checkpoint, dest: pathlib.Path, mode: DownloadMode = "auto") -> None:
    """Copy the checkpoint's files into `dest`: straight from storage when this machine sees it, else through the
    master."""
    local = _local_dir(ckpt.storage, ckpt.uuid) if mode in ("auto", "direct") else None
    if mode == "direct" and local is None:
        raise InvalidRequest(f"checkpoint {ckpt.uuid} is not on a file system this machine can see; use --mode master")
    if local is not None:
        shutil.copytree(local, dest, dirs_exist_ok=True)
    else:
        with client.open_checkpoint_download(ckpt.uuid) as archive:  # extracted as it arrives, never held whole
            extract_stream(archive, dest, max_size=MAX_DOWNLOAD, what=f"the archive of checkpoint {ckpt.uuid}")


@checkpoint.command("download")
@click.argument("uuid")
@click.option("-o", "--output-dir", default=None, help="Where to put the files (default: checkpoints/UUID).")
@mode_option
@click.pass_context
def download(ctx: click.Context, uuid: str, output_dir: str | None, mode: DownloadMode) -> None:
    """Copy a checkpoint's files to a local directory.

    Into --output-dir (default checkpoints/UUID): straight from its storage when this machine sees it, else
    through the master (--mode picks). Nothing changes on the cluster. `e download` and `trial download` pick
    checkpoints by metric or age instead of by uuid."""
    client = client_of(ctx)
    dest = pathlib.Path(output_dir or pathlib.Path("checkpoints") / uuid)
    fetch_checkpoint(client, client.get_checkpoint(uuid).checkpoint, dest, mode)
    output.console.print(f"Downloaded checkpoint {uuid} to {dest}")


def split_uuids(values: tuple[str, ...]) -> list[str]:
    """UUIDs given as separate arguments, comma-separated (Determined's form), or both; each once, in order."""
    uuids = [u.strip() for value in values for u in value.split(",") if u.strip()]
    return list(dict.fromkeys(uuids))


@checkpoint.command("delete")
@click.argument("uuids", nargs=-1, required=True)
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
def delete(ctx: click.Context, uuids: tuple[str, ...], yes: bool) -> None:
    """Delete checkpoints' files from storage, for good.

    Each UUID's files are removed from storage, then it is marked DELETED (its metrics stay). UUIDs may be given
    as separate arguments or comma-separated; every one must exist, else nothing is deleted. It asks first unless
    --yes. `e delete` removes a whole experiment with its checkpoints."""
    wanted = split_uuids(uuids)
    if not wanted:
        raise InvalidRequest("give at least one checkpoint uuid")
    question = f"Delete the files of {len(wanted)} checkpoint(s) from storage, for good?"
    if not yes and not click.confirm(question, default=False, err=True):
        output.console.print("Deleted nothing.")
        return
    client_of(ctx).delete_checkpoints(wanted)
    for uuid in wanted:
        output.console.print(f"Deleted checkpoint {uuid}")
