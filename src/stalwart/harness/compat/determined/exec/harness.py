"""`python3 -m determined.exec.harness model_def:MyTrial`: run a Trial class (Determined 0.37/0.38's exec/harness.py).

A PyTorchTrial runs through Stalwart's legacy PyTorchTrial harness. Any other `det.LegacyTrial` runs through its
own `trial_controller_class`, as Determined's harness ran it: the controller's `pre_execute_hook`, then the
distributed context of the launcher (`determined.launch.torch_distributed`), `core.init()`, the Trial's
`trial_context_class` and the Trial, `from_trial(trial_inst=, context=, env=)` and `run()`. Trials only: the
entrypoint of a trial (`model_def:MyTrial`) is started this way by the launcher.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from stalwart.harness.core import DistributedContext, PreemptMode, TensorboardMode, init
from stalwart.harness.info import ClusterInfo, get_cluster_info

from .._env_context import env_from_cluster_info
from .._trial_layer import LegacyTrial, TrialController, _DistributedBackend

log = logging.getLogger("determined")


def controller_class_of(trial_class: Any) -> type[TrialController]:
    """The TrialController subclass a LegacyTrial subclass names in `trial_controller_class`."""
    if not (isinstance(trial_class, type) and issubclass(trial_class, LegacyTrial)):
        raise TypeError(f"{trial_class!r} is not a det.LegacyTrial subclass (nor a det.pytorch.PyTorchTrial)")
    controller = trial_class.trial_controller_class
    if controller is None:
        raise ValueError(f"The class attribute `trial_controller_class` of {trial_class.__name__} is None; please "
                         "set it the correct subclass of `det.TrialController`")
    if not (isinstance(controller, type) and issubclass(controller, TrialController)):
        raise ValueError(f"The class attribute `trial_controller_class` of {trial_class.__name__} is not a valid "
                         "subclass of `det.TrialController`")
    return controller


def _distributed(backend: _DistributedBackend, info: ClusterInfo) -> DistributedContext | None:
    if backend.use_torch():
        return DistributedContext.from_torch_distributed()
    if backend.use_horovod() or backend.use_deepspeed():
        raise RuntimeError("a TrialController on Horovod or DeepSpeed is not supported by Stalwart: start the "
                           "trial through determined.launch.torch_distributed (the `model_def:Trial` entrypoint)")
    if len(info.container_addrs) > 1 or len(info.slot_ids) > 1:
        raise ValueError("In multi-slot tasks, the determined.exec.harness module must not be invoked directly: "
                         "wrap it in determined.launch.torch_distributed")
    return None


def run_legacy_trial(trial_class: type[LegacyTrial]) -> None:
    """Train this trial with `trial_class`'s own TrialController."""
    info = get_cluster_info()
    if info is None or info.trial is None:
        raise RuntimeError(f"{trial_class.__name__} names its own trial_controller_class, which runs only inside a "
                           "trial on a cluster (`stalwart experiment create`)")
    env = env_from_cluster_info(info)
    controller_class = controller_class_of(trial_class)
    backend = _DistributedBackend()
    controller_class.pre_execute_hook(env, backend)
    distributed = _distributed(backend, info)
    with init(distributed=distributed, preempt_mode=PreemptMode.ChiefOnly,
              tensorboard_mode=TensorboardMode.MANUAL) as core_context:
        trial_context = trial_class.trial_context_class(core_context, env)
        trial_inst = trial_class(trial_context)
        log.info("Creating %s with %s.", controller_class.__name__, trial_class.__name__)
        controller = controller_class.from_trial(trial_inst=trial_inst, context=trial_context, env=env)
        controller.run()


def main(argv: list[str] | None = None) -> int:
    from stalwart.harness.pytorch import legacy

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python3 -m determined.exec.harness module:TrialClass", file=sys.stderr)
        return 2
    return legacy.main(args)


if __name__ == "__main__":
    sys.exit(main())
