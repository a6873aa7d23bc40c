"""TEST DOUBLE of the Kubernetes API server — not a Kubernetes implementation.

A real HTTP server on 127.0.0.1 that serves only the endpoints Stalwart's Kubernetes resource manager uses, with
the real API's semantics (resourceVersions, watches with 410 Gone, Status errors, bearer-token auth), a small
scheduler, a Job controller, and pods run as real local processes (images are recorded, never pulled).
Use it through the official `kubernetes` client with `KubeApiDouble.kubeconfig`.
"""

from stalwart.testing.k8s_api_double.calls import RecordedCall
from stalwart.testing.k8s_api_double.double import KubeApiDouble
from stalwart.testing.k8s_api_double.scheduler import NodeSpec

__all__ = ["KubeApiDouble", "NodeSpec", "RecordedCall"]
