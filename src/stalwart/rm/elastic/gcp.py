"""The `gcp` provider: Compute Engine instances through the Compute API v1's REST calls (`instances.insert`,
`instances.list` filtered by this pool's labels, `instances.delete`), over httpx.

Three calls do not need `google-cloud-compute` and its protobuf layers: they are made as plain REST (the same
requests that client's REST transport sends). Against Google the bearer token comes from `google.auth`'s default
credentials, against `endpoint_url` (an emulator or the
tests' labelled double, `testing/gce_api_double.py`) none is sent. Each instance carries the pool's
`label_key`/`label_value` and `stalwart-pool: <pool>`. GCE stops a preemptible instance it takes back (status
TERMINATED; the provisioner deletes instances, never stops them), so a preemptible instance found TERMINATED is
reported as `spot_interrupted`."""

from __future__ import annotations

import datetime
import importlib
import secrets
import time
from collections.abc import Sequence
from typing import Any

import httpx

from stalwart.rm.elastic.provider import Instance, InstanceState, Provider, ProviderError, UserDataFor

GOOGLE_API = "https://compute.googleapis.com"
POOL_LABEL = "stalwart-pool"
_STATES = {"PROVISIONING": InstanceState.STARTING, "STAGING": InstanceState.STARTING,
           "RUNNING": InstanceState.RUNNING, "STOPPING": InstanceState.TERMINATING,
           "SUSPENDING": InstanceState.TERMINATING, "REPAIRING": InstanceState.RUNNING}


def _label(value: str) -> str:
    """A GCE label value: lower case letters, digits, `-` and `_`, at most 63 characters."""
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in value.lower())[:63]


def insert_body(settings: dict[str, Any], name: str, pool: str, label_value: str, user_data: str) -> dict[str, Any]:
    """The `instances.insert` body of one instance from the pool's checked `provider` keys."""
    zone, kind = settings["zone"], settings["instance_type"]
    nic = settings.get("network_interface") or {"network": "global/networks/default", "external_ip": False}
    interface: dict[str, Any] = {"network": nic["network"]}
    if nic.get("subnetwork"):
        interface["subnetwork"] = nic["subnetwork"]
    if nic.get("external_ip"):
        interface["accessConfigs"] = [{"type": "ONE_TO_ONE_NAT", "name": "External NAT"}]
    body: dict[str, Any] = {
        **(settings.get("base_config") or {}),
        "name": name,
        "machineType": f"zones/{zone}/machineTypes/{kind['machine_type']}",
        "labels": {settings["label_key"]: _label(label_value), POOL_LABEL: _label(pool)},
        "disks": [{"boot": True, "autoDelete": True,
                   "initializeParams": {"sourceImage": settings["boot_disk_source_image"],
                                        "diskSizeGb": str(settings["boot_disk_size"])}}],
        "networkInterfaces": [interface],
        "metadata": {"items": [{"key": "startup-script", "value": user_data}]},
        "scheduling": {"preemptible": bool(kind.get("preemptible")),
                       "onHostMaintenance": "TERMINATE" if kind.get("gpu_num") else "MIGRATE",
                       "automaticRestart": not kind.get("preemptible")},
        "tags": {"items": list(settings.get("network_tags") or [])},
    }
    if kind.get("gpu_num"):
        body["guestAccelerators"] = [{"acceleratorType": f"zones/{zone}/acceleratorTypes/{kind['gpu_type']}",
                                      "acceleratorCount": kind["gpu_num"]}]
    account = settings.get("service_account")
    if account and account.get("email"):
        body["serviceAccounts"] = [{"email": account["email"], "scopes": account.get("scopes") or []}]
    return body


def instance_of(raw: dict[str, Any]) -> Instance:
    """One `instances.list` item as the provider interface's value."""
    created = raw.get("creationTimestamp")
    launched = datetime.datetime.fromisoformat(created).timestamp() if created else 0.0
    state = _STATES.get(raw.get("status", ""), InstanceState.TERMINATED)
    preemptible = bool((raw.get("scheduling") or {}).get("preemptible"))
    nics = raw.get("networkInterfaces") or [{}]
    return Instance(raw["name"], state, launched,
                    spot_interrupted=preemptible and raw.get("status") == "TERMINATED",
                    address=nics[0].get("networkIP"))


class GcpProvider(Provider):
    """Compute Engine for one pool: `settings` are its checked `provider` keys, `label_value` the default of
    `label_value` (the master's cluster id)."""

    type = "gcp"

    def __init__(self, settings: dict[str, Any], pool: str, label_value: str) -> None:
        self.settings, self.pool = settings, pool
        self.label_value = settings.get("label_value") or label_value
        base = (settings.get("endpoint_url") or GOOGLE_API).rstrip("/")
        self.url = f"{base}/compute/v1/projects/{settings['project']}/zones/{settings['zone']}/instances"
        self.http = httpx.Client(timeout=30.0)
        self._google: Any = None  # google.auth's credentials, once asked for

    def launch(self, count: int, user_data_for: UserDataFor) -> list[Instance]:
        out: list[Instance] = []
        for i in range(count):
            name = f"{self.settings['name_prefix']}{secrets.token_hex(4)}"
            body = insert_body(self.settings, name, self.pool, self.label_value, user_data_for(i))
            self._call("POST", self.url, json=body)
            out.append(Instance(name, InstanceState.STARTING, time.time()))
        return out

    def list(self) -> list[Instance]:
        labels = (f'labels.{self.settings["label_key"]}="{_label(self.label_value)}" AND '
                  f'labels.{POOL_LABEL}="{_label(self.pool)}"')
        out: list[Instance] = []
        token: str | None = None
        while True:
            params = {"filter": labels, **({"pageToken": token} if token else {})}
            page = self._call("GET", self.url, params=params)
            out.extend(instance_of(raw) for raw in page.get("items") or [])
            token = page.get("nextPageToken")
            if not token:
                return out

    def terminate(self, ids: Sequence[str]) -> None:
        for name in ids:
            self._call("DELETE", f"{self.url}/{name}", missing_ok=True)

    def _call(self, method: str, url: str, *, missing_ok: bool = False, **kwargs: Any) -> dict[str, Any]:
        try:
            reply = self.http.request(method, url, headers=self._auth(), **kwargs)
        except httpx.HTTPError as err:
            raise ProviderError(f"Compute API {method} {url}: {err}") from None
        if missing_ok and reply.status_code == 404:
            return {}
        if reply.status_code >= 400:
            raise ProviderError(f"Compute API {method} {url} answered {reply.status_code}: {reply.text[:300]}")
        answer: dict[str, Any] = reply.json() if reply.content else {}
        return answer

    def _auth(self) -> dict[str, str]:
        """Google's bearer token from the default credentials, refreshed when it runs out; none against
        `endpoint_url`."""
        if self.settings.get("endpoint_url"):
            return {}
        try:
            auth = importlib.import_module("google.auth")
            transport = importlib.import_module("google.auth.transport.requests")
        except ImportError as err:
            raise ProviderError("provider.type: gcp needs the 'google-auth' package for Google's API: "
                                "pip install google-auth") from err
        if self._google is None:
            self._google, _ = auth.default(scopes=["https://www.googleapis.com/auth/compute"])
        if not self._google.valid:
            self._google.refresh(transport.Request())
        return {"Authorization": f"Bearer {self._google.token}"}
