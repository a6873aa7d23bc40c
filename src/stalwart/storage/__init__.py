"""Checkpoint storage behind one small interface: upload, download, delete, list (shared_fs, s3, gcs, azure)."""

from stalwart.storage.base import StorageManager, directory_resources
from stalwart.storage.errors import StorageError
from stalwart.storage.factory import make_storage
from stalwart.storage.object_store import ObjectStoreStorage
from stalwart.storage.shared_fs import SharedFSStorage

__all__ = ["ObjectStoreStorage", "SharedFSStorage", "StorageError", "StorageManager", "directory_resources",
           "make_storage"]
