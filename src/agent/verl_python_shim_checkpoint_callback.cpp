// verl.trainer.ppo.checkpoint_callback of the built-in `verl` package (agent/verl_python_shim.h): the base class a
// trainer.checkpoint_callback_class subclasses (trainer/checkpoint_callback.h loads and calls it).
#include "verl_python_shim_sources.h"

namespace verl::agent::shim_sources {

const char* const kCheckpointCallback = R"PY(
"""verl.trainer.ppo.checkpoint_callback: CheckpointCallback, a no-op base for trainer.checkpoint_callback_class.

The trainer constructs the named class once, on the controller, as cls(config=<the run's resolved config>), and after
each complete checkpoint calls on_save(trainer=..., global_step=N, checkpoint_dir="<default_local_dir>/global_step_N",
async_save=False) with keyword arguments. An exception from on_save stops training; catch inside it for
best-effort work.
"""


class CheckpointCallback:
    """Subclass and override on_save; take **kwargs there, as later versions may pass more."""

    def __init__(self, config=None):
        self.config = config

    def on_save(self, trainer, global_step, checkpoint_dir, async_save=False, **kwargs):
        """Called after the checkpoint of `global_step` is saved in `checkpoint_dir`."""
)PY";

}  // namespace verl::agent::shim_sources
