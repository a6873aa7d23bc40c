"""TEST DOUBLE of the Kubernetes API server — not a Kubernetes implementation.

The double's object store, standing in for etcd behind the API server: objects by (resource, namespace, name),
one cluster-wide resourceVersion counter, a bounded history of watch events (ADDED/MODIFIED/DELETED with a
snapshot of the object), and compaction: a watch from a resourceVersion older than the history is refused
with 410 Gone, as the real server refuses it.
"""

from __future__ import annotations

import builtins
import copy
import threading
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from stalwart.testing.k8s_api_double.objects import (
    ApiError,
    JsonObject,
    Selector,
    already_exists,
    not_found,
    now_timestamp,
)

Key = tuple[str, str, str]  # (resource, namespace, name); namespace "" for cluster-scoped objects


@dataclass(frozen=True)
class WatchEvent:
    """One change of one object, as a watch serves it."""

    resource_version: int
    resource: str
    namespace: str
    type: str
    object: JsonObject


class ResourceVersionGone(ApiError):
    """A watch asked for events the store no longer holds (410, reason Expired)."""

    def __init__(self, requested: int, oldest: int):
        super().__init__(410, f"too old resource version: {requested} ({oldest})", "Expired")


class ObjectStore:
    """Objects, the resourceVersion counter and the event history; `changed` wakes watchers on every change."""

    def __init__(self, history_limit: int = 10_000):
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        # by resource, then (namespace, name); a stored object is never changed in place (a change stores a
        # changed copy), so the history and `list(copies=False)` may share it
        self._objects: dict[str, dict[tuple[str, str], JsonObject]] = {}
        self._revision = 1
        self._history: deque[WatchEvent] = deque()
        self._history_limit = history_limit
        self._compacted_through = 0  # events with resourceVersion <= this are gone

    @property
    def revision(self) -> int:
        with self.lock:
            return self._revision

    def find(self, resource: str, namespace: str, name: str) -> JsonObject | None:
        with self.lock:
            found = self._objects.get(resource, {}).get((namespace, name))
            return copy.deepcopy(found) if found is not None else None

    def get(self, resource: str, namespace: str, name: str, group: str = "") -> JsonObject:
        found = self.find(resource, namespace, name)
        if found is None:
            raise not_found(resource, name, group)
        return found

    def list(
        self, resource: str, namespace: str | None, selector: Selector | None = None, copies: bool = True
    ) -> tuple[builtins.list[JsonObject], int]:
        """Matching objects sorted by namespace and name, and the revision they were read at. With
        `copies=False` the stored objects themselves, which the caller must only read."""
        with self.lock:
            items = [
                copy.deepcopy(obj) if copies else obj
                for (ns, _), obj in sorted(self._objects.get(resource, {}).items())
                if (namespace is None or ns == namespace) and (selector is None or selector.matches(obj))
            ]
            return items, self._revision

    def create(self, resource: str, namespace: str, obj: JsonObject, group: str = "") -> JsonObject:
        """Store a new object, filling uid, resourceVersion and creationTimestamp; 409 if the name is taken.
        Returns the stored object (read only)."""
        with self.lock:
            metadata = obj.setdefault("metadata", {})
            key = (resource, namespace, metadata["name"])
            if (namespace, metadata["name"]) in self._objects.get(resource, {}):
                raise already_exists(resource, metadata["name"], group)
            metadata.setdefault("uid", str(uuid.uuid4()))
            metadata.setdefault("creationTimestamp", now_timestamp())
            if namespace:
                metadata["namespace"] = namespace
            self._record(key, "ADDED", obj)
            return obj

    def update(self, resource: str, namespace: str, name: str, change: Callable[[JsonObject], None]) -> JsonObject:
        """Apply `change` to a copy of the object; store it with a new resourceVersion if it changed.
        Returns the stored object (read only)."""
        with self.lock:
            current = self._objects.get(resource, {}).get((namespace, name))
            if current is None:
                raise not_found(resource, name)
            changed = copy.deepcopy(current)
            change(changed)
            if changed == current:
                return current
            self._record((resource, namespace, name), "MODIFIED", changed)
            return changed

    def remove(self, resource: str, namespace: str, name: str) -> JsonObject | None:
        """Delete the object (a DELETED event carrying its last state with a new resourceVersion)."""
        with self.lock:
            current = self._objects.get(resource, {}).get((namespace, name))
            if current is None:
                return None
            last = copy.deepcopy(current)
            self._record((resource, namespace, name), "DELETED", last)
            return last

    def _record(self, key: Key, event_type: str, obj: JsonObject) -> None:
        self._revision += 1
        obj["metadata"]["resourceVersion"] = str(self._revision)
        resource, namespace, name = key
        if event_type == "DELETED":
            del self._objects[resource][(namespace, name)]
        else:
            self._objects.setdefault(resource, {})[(namespace, name)] = obj
        self._history.append(WatchEvent(self._revision, resource, namespace, event_type, obj))
        while len(self._history) > self._history_limit:
            self._compacted_through = self._history.popleft().resource_version
        self.changed.notify_all()

    def expire_history(self) -> None:
        """Compaction: every event so far is forgotten; a watch from any earlier resourceVersion gets 410."""
        with self.lock:
            self._revision += 1
            self._history.clear()
            self._compacted_through = self._revision
            self.changed.notify_all()

    def events_after(
        self, resource_version: int, resource: str, namespace: str | None
    ) -> tuple[builtins.list[WatchEvent], int]:
        """The events of `resource` (in `namespace`, or all) after `resource_version`, oldest first, and the
        revision they run to (a watcher resumes from it)."""
        with self.lock:
            if resource_version < self._compacted_through:
                raise ResourceVersionGone(resource_version, self._compacted_through + 1)
            newer = []
            for event in reversed(self._history):
                if event.resource_version <= resource_version:
                    break
                if event.resource == resource and (namespace is None or event.namespace == namespace):
                    newer.append(event)
            newer.reverse()
            return newer, self._revision
