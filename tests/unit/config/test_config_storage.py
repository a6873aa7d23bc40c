"""checkpoint_storage: every backend type, GC fields and the master default."""

from __future__ import annotations

import pytest


def test_shared_fs(minimal, expand):
    minimal["checkpoint_storage"] = {
        "type": "shared_fs",
        "host_path": "/mnt/shared",
        "storage_path": "ckpts",
        "save_trial_best": 2,
    }
    assert expand(minimal)["checkpoint_storage"] == {
        "type": "shared_fs",
        "host_path": "/mnt/shared",
        "storage_path": "ckpts",
        "propagation": "rprivate",
        "container_path": None,
        "checkpoint_path": None,
        "tensorboard_path": None,
        "save_experiment_best": 0,
        "save_trial_best": 2,
        "save_trial_latest": 1,
    }


@pytest.mark.parametrize(
    ("storage", "details"),
    [
        ({"type": "shared_fs"}, ["checkpoint_storage.host_path: required"]),
        ({"type": "shared_fs", "host_path": "rel/dir"},
         ["checkpoint_storage.host_path: must be an absolute path, got 'rel/dir'"]),
        ({"type": "shared_fs", "host_path": "/a", "storage_path": "/b/c"},
         ["checkpoint_storage.storage_path: must be inside host_path '/a', got '/b/c'"]),
        ({"type": "shared_fs", "host_path": "/a", "storage_path": "../x"},
         ["checkpoint_storage.storage_path: must be inside host_path '/a', got '../x'"]),
        ({"type": "directory"}, ["checkpoint_storage.container_path: required"]),
        ({"type": "s3"}, ["checkpoint_storage.bucket: required"]),
        ({"type": "s3", "bucket": "b", "prefix": "a/../b"},
         ["checkpoint_storage.prefix: must not contain '..', got 'a/../b'"]),
        ({"type": "s3", "bucket": "b", "bukcet": "c"},
         ["checkpoint_storage.bukcet: unknown key; did you mean 'bucket'?"]),
        ({"type": "gcs", "bucket": 3}, ["checkpoint_storage.bucket: expected a string, got 3"]),
        ({"type": "azure", "container": "c"},
         ["checkpoint_storage: azure needs exactly one of connection_string and account_url"]),
        ({"type": "azure", "container": "c", "connection_string": "x", "account_url": "y"},
         ["checkpoint_storage: azure needs exactly one of connection_string and account_url"]),
        ({"type": "azure", "container": "c", "connection_string": "x", "credential": "k"},
         ["checkpoint_storage.credential: cannot be used with connection_string"]),
        ({"type": "hdfs", "hdfs_url": "x"},
         ["checkpoint_storage.type: expected one of shared_fs, directory, s3, gcs, azure, got 'hdfs'"]),
        ({"host_path": "/x"}, ["checkpoint_storage.type: required (one of shared_fs, directory, s3, gcs, azure)"]),
        ({"type": "gcs", "bucket": "b", "save_trial_latest": -1},
         ["checkpoint_storage.save_trial_latest: expected an integer >= 0, got -1"]),
    ],
)  # fmt: skip
def test_storage_errors(minimal, problems, storage, details):
    minimal["checkpoint_storage"] = storage
    assert problems(minimal) == details


@pytest.mark.parametrize(
    "storage",
    [
        {"type": "directory", "container_path": "/ckpt"},
        {"type": "s3", "bucket": "b", "endpoint_url": "http://minio:9000", "prefix": "exp/"},
        {"type": "gcs", "bucket": "b", "prefix": "p"},
        {"type": "azure", "container": "c", "account_url": "https://a", "credential": "k"},
        {"type": "azure", "container": "c", "connection_string": "x"},
        {"type": "shared_fs", "host_path": "/a", "storage_path": "/a/b"},
    ],
)
def test_storage_variants_accepted(minimal, expand, storage):
    cfg = expand(minimal | {"checkpoint_storage": storage})["checkpoint_storage"]
    assert {k: cfg[k] for k in storage} == storage
    assert (cfg["save_experiment_best"], cfg["save_trial_best"], cfg["save_trial_latest"]) == (0, 1, 1)


def test_master_default_storage_used_when_absent(minimal, expand):
    del minimal["checkpoint_storage"]
    master = {"checkpoint_storage": {"type": "shared_fs", "host_path": "/var/stalwart"}}
    assert expand(minimal, master_defaults=master)["checkpoint_storage"]["host_path"] == "/var/stalwart"


def test_user_storage_fields_merge_with_same_type_master_default(minimal, expand):
    minimal["checkpoint_storage"] = {"type": "s3", "prefix": "mine"}
    master = {"checkpoint_storage": {"type": "s3", "bucket": "team", "prefix": "theirs"}}
    storage = expand(minimal, master_defaults=master)["checkpoint_storage"]
    assert (storage["bucket"], storage["prefix"]) == ("team", "mine")
