"""Experiment contexts: pack a directory for upload, validate and safely extract the archive."""

from stalwart.context.archive_members import ArchiveLimits
from stalwart.context.entrypoint import check_entrypoint
from stalwart.context.ignore import BUILTIN_IGNORES, IGNORE_FILE
from stalwart.context.pack import (
    MAX_CONTEXT_BYTES,
    ContextFile,
    PackResult,
    check_context_size,
    collect_files,
    pack_context,
)
from stalwart.context.unpack import safe_extract, validate_archive

__all__ = [
    "ArchiveLimits",
    "BUILTIN_IGNORES",
    "IGNORE_FILE",
    "MAX_CONTEXT_BYTES",
    "ContextFile",
    "PackResult",
    "check_context_size",
    "check_entrypoint",
    "collect_files",
    "pack_context",
    "safe_extract",
    "validate_archive",
]
