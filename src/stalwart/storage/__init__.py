"""Checkpoint storage behind one small interface: upload, download, delete, list."""

from stalwart.storage.base import StorageManager, directory_resources
from stalwart.storage.factory import make_storage
from stalwart.storage.shared_fs import SharedFSStorage

__all__ = ["SharedFSStorage", "StorageManager", "directory_resources", "make_storage"]
