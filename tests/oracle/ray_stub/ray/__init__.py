"""An import stub for ray, put on the path by tests/golden/algo/verl_oracle.py (when no real Ray imports) and by
tests/oracle/test_custom_dataset_oracle.cpp for its child Python (VERL_PYTHON_SITE_PACKAGES).
verl/__init__.py imports verl.protocol, which imports ray at module level and names ray.ObjectRef in an annotation;
the dataset code under test never calls ray, and any call here raises."""


class ObjectRef:  # only named in annotations by verl.protocol
    pass


def _no_ray(*_args, **_kwargs):
    raise RuntimeError("ray is an import stub in verl.cpp's tests; this code path needs a real Ray")


get = put = init = remote = get_runtime_context = wait = kill = shutdown = _no_ray


def is_initialized():
    return False
