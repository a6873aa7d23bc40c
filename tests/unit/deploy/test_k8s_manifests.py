"""The Kubernetes manifests in deploy/kubernetes: every document is a valid object of its kind as the official
`kubernetes` client's models read it (no key of ours dropped as unknown), and they fit together and with the master:
the ConfigMap holds a master config that parses (Kubernetes manager, in-cluster), the init container's script
renders it with the Secret's password, the master's command is one `stalwart master run` accepts, the probes ask a
route the master serves to anyone, the Deployment runs as the ServiceAccount the bindings name, and every Secret a
pod reads exists with that key."""

from __future__ import annotations

import functools
import json
import os
import pathlib
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import yaml
from kubernetes.client import ApiClient
from psycopg import pq

from stalwart.api.auth_kinds import AuthKind
from stalwart.api.routes_table import ROUTES
from stalwart.cli.cluster import master_run
from stalwart.config.master import load_master_config, parse_master_config

DEPLOY = pathlib.Path(__file__).resolve().parents[3] / "deploy" / "kubernetes"
FILES = ("master.yaml", "role.yaml", "postgres.yaml")
MODELS = {"Deployment": "V1Deployment", "Service": "V1Service", "ServiceAccount": "V1ServiceAccount",
          "ConfigMap": "V1ConfigMap", "Role": "V1Role", "RoleBinding": "V1RoleBinding",
          "ClusterRole": "V1ClusterRole", "ClusterRoleBinding": "V1ClusterRoleBinding",
          "StatefulSet": "V1StatefulSet", "Secret": "V1Secret"}


@dataclass(frozen=True)
class _Body:
    """What `ApiClient.deserialize` reads: an answer's `.data` (JSON text)."""

    data: str


@functools.cache
def _documents(name: str) -> list[dict[str, Any]]:
    """The file's documents, parsed once (no test changes them)."""
    return [d for d in yaml.safe_load_all((DEPLOY / name).read_text()) if d is not None]


def _all() -> list[dict[str, Any]]:
    return [d for name in FILES for d in _documents(name)]


def _one(kind: str, name: str | None = None) -> dict[str, Any]:
    found = [d for d in _all() if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    assert len(found) == 1, f"expected one {kind} {name or ''} in {DEPLOY}, found {len(found)}"
    return found[0]


def _lost_keys(given: Any, kept: Any, path: str = "") -> Iterator[str]:
    """The dotted paths of keys in `given` that `kept` (the model written back out) does not have."""
    if isinstance(given, dict):
        for key, value in given.items():
            if not isinstance(kept, dict) or key not in kept:
                yield f"{path}.{key}".lstrip(".")
            else:
                yield from _lost_keys(value, kept[key], f"{path}.{key}")
    elif isinstance(given, list):
        if not isinstance(kept, list) or len(kept) != len(given):
            yield f"{path}[]"
            return
        for i, (a, b) in enumerate(zip(given, kept, strict=True)):
            yield from _lost_keys(a, b, f"{path}[{i}]")


def _pod_spec(kind: str, name: str) -> dict[str, Any]:
    spec: dict[str, Any] = _one(kind, name)["spec"]["template"]["spec"]
    return spec


def _containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [*(spec.get("initContainers") or []), *spec["containers"]]


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env") or []}


@pytest.mark.parametrize("name", FILES)
def test_every_document_loads_into_the_kubernetes_models_with_no_key_lost(name):
    api = ApiClient()
    docs = _documents(name)
    assert docs, f"{name} holds no document"
    for doc in docs:
        assert doc["kind"] in MODELS, f"{name}: no model named for kind {doc['kind']}"
        model = api.deserialize(_Body(json.dumps(doc)), MODELS[doc["kind"]])
        kept = api.sanitize_for_serialization(model)
        where = f"{name}: {doc['kind']} {doc['metadata']['name']}"
        assert list(_lost_keys(doc, kept)) == [], f"{where}: keys the {MODELS[doc['kind']]} model does not know"


def test_the_configmap_holds_a_master_config_for_the_kubernetes_manager_inside_the_cluster():
    data = _one("ConfigMap", "stalwart-master-config")["data"]
    cfg = parse_master_config(yaml.safe_load(data["master.yaml"]), "the ConfigMap's master.yaml")
    k8s = cfg.kubernetes
    assert cfg.resource_manager == "kubernetes"
    assert k8s.kubeconfig is None and k8s.kube_context is None, "in the cluster: the pod's service account"
    assert k8s.master_service_name == _one("Service", "stalwart-master")["metadata"]["name"]
    assert k8s.default_namespace == _one("Role")["metadata"]["namespace"], "the Role is where the trials run"
    db = _pod_spec("StatefulSet", "stalwart-db")["containers"][0]
    env = _env(db)
    assert cfg.db_url == f"postgresql://{env['POSTGRES_USER']}@stalwart-db:5432/{env['POSTGRES_DB']}", cfg.db_url
    assert _one("Service", "stalwart-db")["spec"]["ports"][0]["port"] == 5432


def test_the_init_container_renders_the_config_with_the_secrets_password(tmp_path):
    data = _one("ConfigMap", "stalwart-master-config")["data"]
    init = _pod_spec("Deployment", "stalwart-master")["initContainers"][0]
    assert init["command"] == ["python", "/etc/stalwart/render-config.py"]
    (tmp_path / "master.yaml").write_text(data["master.yaml"])
    (tmp_path / "render-config.py").write_text(data["render-config.py"])
    rendered = tmp_path / "rendered.yaml"
    env = {**os.environ, "STALWART_CONFIG_TEMPLATE": str(tmp_path / "master.yaml"), "STALWART_CONFIG": str(rendered),
           "STALWART_INITIAL_USER_PASSWORD": "pa'ss: #word"}
    subprocess.run([sys.executable, str(tmp_path / "render-config.py")], env=env, check=True, timeout=60)
    assert rendered.stat().st_mode & 0o777 == 0o600
    cfg = load_master_config(rendered)
    assert cfg.security.initial_user_password == "pa'ss: #word"
    assert cfg.resource_manager == "kubernetes"
    assert _env(init)["STALWART_INITIAL_USER_PASSWORD"] == {
        "secretKeyRef": {"name": "stalwart-master", "key": "initial-user-password"}}


def test_the_master_runs_with_the_rendered_config_on_the_port_the_service_and_probes_use():
    spec = _pod_spec("Deployment", "stalwart-master")
    master, init = spec["containers"][0], spec["initContainers"][0]
    assert master["command"][:3] == ["stalwart", "master", "run"]
    params = master_run.make_context("stalwart master run", master["command"][3:]).params
    assert params["config_file"] == _env(init)["STALWART_CONFIG"]
    port = yaml.safe_load(_one("ConfigMap")["data"]["master.yaml"])["port"]
    named = {p["name"]: p["containerPort"] for p in master["ports"]}
    assert named["http"] == port == 8080
    service = _one("Service", "stalwart-master")["spec"]
    assert service["ports"] == [{"name": "http", "port": 8080, "targetPort": "http"}]
    assert service["selector"].items() <= _one("Deployment")["spec"]["template"]["metadata"]["labels"].items()
    assert _one("Deployment")["spec"]["replicas"] == 1
    assert master["image"] == "stalwart/stalwart:latest"


def test_the_probes_ask_a_route_the_master_serves_to_anyone():
    master = _pod_spec("Deployment", "stalwart-master")["containers"][0]
    open_gets = {r.path for r in ROUTES if r.method == "GET" and r.auth is AuthKind.OPEN and "{" not in r.path}
    for probe in ("readinessProbe", "livenessProbe"):
        get = master[probe]["httpGet"]
        assert get["path"] in open_gets, f"{probe}: {get['path']} is not an open GET route of the master"
        assert get["port"] == "http"


def test_the_deployment_runs_as_the_service_account_the_bindings_name():
    account = _one("ServiceAccount")["metadata"]
    assert _pod_spec("Deployment", "stalwart-master")["serviceAccountName"] == account["name"]
    for kind, role_kind in (("RoleBinding", "Role"), ("ClusterRoleBinding", "ClusterRole")):
        binding = _one(kind)
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account["name"],
                                        "namespace": account["namespace"]}], kind
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind,
                                      "name": _one(role_kind)["metadata"]["name"]}, kind
    assert _one("RoleBinding")["metadata"]["namespace"] == _one("Role")["metadata"]["namespace"]


def test_every_secret_a_pod_reads_exists_with_that_key_and_no_password_is_in_the_clear():
    secrets = {d["metadata"]["name"]: d.get("stringData") or d.get("data") or {} for d in _all()
               if d["kind"] == "Secret"}
    pods = (_pod_spec("Deployment", "stalwart-master"), _pod_spec("StatefulSet", "stalwart-db"))
    refs = [(c["name"], v["secretKeyRef"]) for spec in pods for c in _containers(spec) for v in _env(c).values()
            if isinstance(v, dict)]
    assert len(refs) == 3, refs
    for container, ref in refs:
        assert ref["key"] in secrets.get(ref["name"], {}), f"{container}: no Secret {ref['name']} with {ref['key']}"
    master = _pod_spec("Deployment", "stalwart-master")["containers"][0]
    assert _env(master)["PGPASSWORD"] == {"secretKeyRef": {"name": "stalwart-db", "key": "password"}}
    assert "password" not in yaml.safe_load(_one("ConfigMap")["data"]["master.yaml"])["db"]


def test_pgpassword_is_the_variable_libpq_reads_the_password_from():
    assert [d.envvar for d in pq.Conninfo.get_defaults() if d.keyword == b"password"] == [b"PGPASSWORD"]
