"""The `s3`, `gcs` and `azure` backends: an fsspec file system (s3fs, gcsfs, adlfs) made from Determined's keys.

s3: `bucket`, `prefix`, `endpoint_url`, `access_key`/`secret_key` (without them: the environment's AWS credentials).
gcs: `bucket`, `prefix`; credentials from the environment (GOOGLE_APPLICATION_CREDENTIALS or the machine's account);
with `STORAGE_EMULATOR_HOST` set, that server without credentials. azure: `container` and either
`connection_string` or `account_url` (+ `credential`: a SAS token or account key; without it, Azure's default
credential chain).
"""

from __future__ import annotations

import importlib
import os
import posixpath
import urllib.parse
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from stalwart.api.errors import ConfigError
from stalwart.storage.errors import Location
from stalwart.storage.object_store import ObjectStoreStorage

# Every file system gets its own instance (no cache shared between configs) and lists the store afresh each time.
_FRESH = {"skip_instance_cache": True, "use_listings_cache": False}
ATTEMPTS_IN_LIBRARY = 3  # botocore's tries of one request (ObjectStoreStorage retries each file on top)
# Files over two parts go up in parts of PART_BYTES (multipart on S3, resumable on GCS), at most S3_PARTS_AT_ONCE
# at a time: a file's bytes in memory stay under ~64 MiB however large it is. A smaller file goes up in one request.
PART_BYTES = 8 * 2**20  # a multiple of GCS's 256 KiB, over S3's 5 MiB minimum
S3_PARTS_AT_ONCE = 8
# An object comes down as one streamed GET, written to disk 64 KiB at a time (s3fs resumes a broken stream where it
# stopped). s3fs's default, ranged GETs of 50 MiB, S3_PARTS_AT_ONCE at a time, each read whole into memory, held
# up to 400 MiB of a file in memory, and made servers that read a whole object for each range (moto) 10x slower.
S3_GET = {"max_concurrency": 1}


def _library(module: str, backend: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ConfigError(f"checkpoint_storage.type: {backend} needs the '{module.split('.')[0]}' package: "
                          "pip install 'stalwart[cloud]'") from err


def _connected(location: Location, make: Callable[[], Any], get_options: dict[str, Any] | None = None,
               make_put: Callable[[], Callable[[str, str], None]] | None = None,
               **put_options: Any) -> ObjectStoreStorage:
    """The backend over the file system `make()` builds (and the uploader `make_put()` builds, where the library's
    own is not used); a failure to build either (credentials the library cannot find or parse) said as a
    StorageError that names what to check."""
    try:
        fs, put = make(), make_put() if make_put is not None else None
    except Exception as err:
        raise location.error(err, "connecting") from None  # the cause may carry secrets: not chained
    return ObjectStoreStorage(fs, location, put_options, get_options, put)


def _s3_transfers(key: str | None, secret: str | None, endpoint: str | None) -> Callable[[str, str], None]:
    """`put(local, "<bucket>/<key>")` through boto3's transfer manager: a file over two parts goes up in parts of
    PART_BYTES, S3_PARTS_AT_ONCE at a time from as many threads (each part read, checksummed, signed and sent on
    its own thread), so its bytes in memory stay bounded; a failed upload is aborted, leaving no part behind.
    s3fs sends a file's parts from its one event-loop thread, where hashing them (SigV4 and the checksum) ran one
    part at a time: 0.73x of this on the same server (bench/RESULTS.md, B11)."""
    boto3, transfer = _library("boto3", "s3"), _library("boto3.s3.transfer", "s3")
    botocore_config = _library("botocore.config", "s3")
    client = boto3.session.Session().client(
        "s3", aws_access_key_id=key, aws_secret_access_key=secret, endpoint_url=endpoint,
        config=botocore_config.Config(retries={"max_attempts": ATTEMPTS_IN_LIBRARY, "mode": "standard"}))
    config = transfer.TransferConfig(multipart_threshold=2 * PART_BYTES, multipart_chunksize=PART_BYTES,
                                     max_concurrency=S3_PARTS_AT_ONCE)

    def put(local: str, remote: str) -> None:
        bucket, _, object_key = remote.partition("/")
        client.upload_file(local, bucket, object_key, Config=config)

    return put


def _prefix(cfg: Mapping[str, Any]) -> str:
    """The key prefix, normalised as Determined does ('a//b/' -> 'a/b', '/a' -> 'a'); none is ''."""
    raw = str(cfg.get("prefix") or "")
    return posixpath.normpath(raw).strip("/") if raw.strip("/") else ""


def s3_storage(cfg: Mapping[str, Any]) -> ObjectStoreStorage:
    s3fs = _library("s3fs", "s3")
    key, secret, endpoint = cfg.get("access_key") or None, cfg.get("secret_key") or None, cfg.get("endpoint_url")
    where = f"endpoint_url ({endpoint})" if endpoint else "the AWS region (AWS_DEFAULT_REGION) and network access"
    location = Location("s3", str(cfg["bucket"]), _prefix(cfg), checks={
        "missing": "that checkpoint_storage.bucket exists (Stalwart does not create buckets)"
                   + (f" at endpoint_url ({endpoint})" if endpoint else ""),
        "denied": "checkpoint_storage.access_key and secret_key, or the environment's AWS credentials "
                  "(AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, an instance role)",
        "unreachable": f"checkpoint_storage.{where} and that the server answers from this machine",
        "failed": f"checkpoint_storage.bucket, the credentials and {where}",
    }, secrets=tuple(s for s in (secret,) if s))
    retries = {"retries": {"max_attempts": ATTEMPTS_IN_LIBRARY, "mode": "standard"}}
    return _connected(location, lambda: s3fs.S3FileSystem(key=key, secret=secret, endpoint_url=endpoint or None,
                                                          config_kwargs=retries, **_FRESH),
                      get_options=S3_GET, make_put=lambda: _s3_transfers(key, secret, endpoint or None))


def gcs_storage(cfg: Mapping[str, Any]) -> ObjectStoreStorage:
    core = _library("gcsfs.core", "gcs")  # the plain file system: not the experimental zonal/HNS one
    emulator = os.environ.get("STORAGE_EMULATOR_HOST")
    where = f"the emulator at STORAGE_EMULATOR_HOST ({emulator})" if emulator else "network access to Google Cloud"
    location = Location("gcs", str(cfg["bucket"]), _prefix(cfg), checks={
        "missing": "that checkpoint_storage.bucket exists (Stalwart does not create buckets)",
        "denied": "the environment's Google credentials (GOOGLE_APPLICATION_CREDENTIALS, or the machine's "
                  "service account) and their access to the bucket",
        "unreachable": where,
        "failed": f"checkpoint_storage.bucket, the credentials and {where}",
    })
    return _connected(location, lambda: core.GCSFileSystem(token="anon" if emulator else None, **_FRESH),
                      chunksize=PART_BYTES)


def azure_storage(cfg: Mapping[str, Any]) -> ObjectStoreStorage:
    adlfs = _library("adlfs", "azure")
    conn, url, credential = cfg.get("connection_string"), cfg.get("account_url"), cfg.get("credential")
    secrets = tuple(str(s) for s in (conn, credential) if s)
    where = "the BlobEndpoint of connection_string" if conn else f"account_url ({url})"
    location = Location("azure", str(cfg["container"]), "", checks={
        "missing": "that checkpoint_storage.container exists (Stalwart does not create containers)",
        "denied": "checkpoint_storage.connection_string, or account_url and credential (a SAS token or account "
                  "key; without one, Azure's default credentials of the environment)",
        "unreachable": f"checkpoint_storage.{where} and that it answers from this machine",
        "failed": f"checkpoint_storage.container, the credentials and {where}",
    }, secrets=secrets)
    if conn:
        return _connected(location, lambda: adlfs.AzureBlobFileSystem(connection_string=conn, **_FRESH),
                          overwrite=True)
    host = urllib.parse.urlsplit(str(url or "")).netloc
    if not host:
        raise ConfigError("checkpoint_storage: azure needs connection_string, or account_url as "
                          f"https://ACCOUNT.blob.core.windows.net (got {url!r})")
    return _connected(location, lambda: adlfs.AzureBlobFileSystem(
        account_name=host.split(".")[0], account_host=host, credential=credential or None, **_FRESH), overwrite=True)
