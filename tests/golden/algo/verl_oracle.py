"""verl's own Python as the oracle for verl.cpp's algorithm goldens. Runs under the test-only Python (.venv/test),
where scripts/install-deps.sh --test installs the pinned `verl` (scripts/requirements/test-nodeps.txt, without its
dependency tree) and the few small packages its algorithm modules import (scripts/requirements/test.txt).

    import verl_oracle
    core_algos = verl_oracle.load_verl("verl.trainer.ppo.core_algos")
    metric_utils = verl_oracle.load_verl("verl.trainer.ppo.metric_utils")
    rollout_corr_helper = verl_oracle.load_verl("verl.trainer.ppo.rollout_corr_helper")

Stubs here stand in for imports only, never for a function under test:
  ray   `verl/__init__.py` imports `verl.protocol`, which imports ray at module level and names `ray.ObjectRef` in a
        type annotation. Ray (a cluster runtime, hundreds of MB) is not used by the algorithm functions; the stub
        provides `ObjectRef` for the annotation and raises on any call, so a code path that needs Ray fails loudly.
A real installed module is always preferred to the stub.
"""

import importlib
import importlib.util
import os
import sys

VERL_VERSION = "0.9.1"


# The import stub, shared with the child Pythons of tests/oracle/test_custom_dataset_oracle.cpp.
_RAY_STUB_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "oracle", "ray_stub")


def _install_ray_stub():
    if "ray" in sys.modules or importlib.util.find_spec("ray") is not None:
        return
    sys.path.append(_RAY_STUB_DIR)  # last: a real Ray installed later on the path still wins


_ready = False


def _prepare():
    global _ready
    if _ready:
        return
    # Plugins discovered through entry points are no part of verl's algorithm code.
    os.environ.setdefault("VERL_USE_EXTERNAL_PLUGINS", "none")
    _install_ray_stub()
    import verl  # noqa: F401  (fails here, naming the missing module, if the environment is incomplete)

    if verl.__version__ != VERL_VERSION:
        raise RuntimeError(f"verl_oracle: verl {verl.__version__} installed, the goldens pin {VERL_VERSION} "
                           "(run scripts/install-deps.sh --test)")
    _ready = True


def load_verl(module_name):
    """Imports a verl module (e.g. "verl.trainer.ppo.core_algos") with the import stubs above in place."""
    _prepare()
    return importlib.import_module(module_name)


def verl_version():
    _prepare()
    import verl

    return verl.__version__
