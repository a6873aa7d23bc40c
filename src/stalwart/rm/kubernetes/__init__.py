"""The Kubernetes engine's side of the Kubernetes resource manager (docs/kubernetes.md): the API calls it makes
(`client`), a run's Jobs, pods and join Secret as manifests (`pods`), and the pod informer (`informer`). The master's
side, which decides, is `master/scheduling/k8s_manager.py`."""

from stalwart.rm.kubernetes.client import KubeApi, KubeError
from stalwart.rm.kubernetes.informer import PodInformer
from stalwart.rm.kubernetes.pods import PodSpecError, RunPods

__all__ = ["KubeApi", "KubeError", "PodInformer", "PodSpecError", "RunPods"]
