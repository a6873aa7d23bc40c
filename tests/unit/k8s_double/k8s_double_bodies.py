"""Request bodies for the Kubernetes API double's tests: pods and Jobs whose one container runs a line of Python
with this interpreter (the double runs the command as a local process; the image is only recorded)."""

from __future__ import annotations

import sys


def python_pod(name: str, code: str, **extra: object) -> dict:
    container = {"name": "main", "image": "python:3.11", "command": [sys.executable, "-c", code]}
    spec = {"restartPolicy": "Never", "containers": [container], **extra}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"suite": "double"}}, "spec": spec}


def python_job(name: str, code: str) -> dict:
    template = python_pod("unused", code)
    del template["metadata"]["name"]
    template["metadata"]["labels"]["role"] = "trial"
    spec = {"backoffLimit": 0, "template": {"metadata": template["metadata"], "spec": template["spec"]}}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "labels": {"owner": "t"}}, "spec": spec}
