"""data.custom_cls: verl's custom dataset class, run in a child process of verl.cpp (data/custom_dataset.cpp).

usage: python -c <this file> REQUEST.json OUT_DIR

As verl's create_rl_dataset: the class is loaded as verl's load_extern_object loads it (a file path, `file://` or
`pkg://module.path`), must subclass torch.utils.data.Dataset (when torch imports; else it needs __len__ and
__getitem__), and is constructed with data_files, tokenizer (the model's, as verl's hf_tokenizer loads it), processor
(None: text models), config (the resolved `data` section) and max_samples. Every row dataset[0..len-1] is then written
to OUT_DIR/rows.jsonl as a JSON object: top-level tensors are what verl's collate_fn stacks into the batch (only
verl's dummy_tensor in verl 0.9.1; its agent loop reads the non-tensor columns) and are left out; numpy and nested
tensor values become lists and numbers. OUT_DIR/summary.json is written last, so its presence means every row is
there. A failure writes OUT_DIR/error.txt (one line) and exits 1.
"""
import collections.abc
import importlib
import importlib.util
import json
import math
import os
import sys
import traceback


class ConfigView(collections.abc.Mapping):
    """The data config when omegaconf does not import: config.max_prompt_length, config["prompt_key"], .get()."""

    def __init__(self, data):
        object.__setattr__(self, "_data", data)

    def __getitem__(self, key):
        value = self._data[key]
        return ConfigView(value) if isinstance(value, dict) else value

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)

    def __getattr__(self, key):
        if key == "_data" or (key.startswith("__") and key.endswith("__")):
            raise AttributeError(key)
        try:
            return self[key]
        except KeyError:
            raise AttributeError(f"the data config has no key '{key}'") from None


class Failure(Exception):
    """A problem reported in one line, without a traceback."""


def make_config(data):
    try:
        from omegaconf import OmegaConf
    except ImportError:
        return ConfigView(data)
    return OmegaConf.create(data)


def load_class(path, name):
    """verl.utils.import_utils.load_extern_object(path, name)."""
    if path.startswith("pkg://"):
        module = importlib.import_module(path[len("pkg://"):].replace("/", "."))
    else:
        if path.startswith("file://"):
            path = path[len("file://"):]
        if not os.path.exists(path):
            raise Failure(f"file '{path}' does not exist")
        spec = importlib.util.spec_from_file_location(f"custom_module_{hash(os.path.abspath(path))}", path)
        if spec is None or spec.loader is None:
            raise Failure(f"'{path}' is not a Python source file")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    if not hasattr(module, name):
        raise Failure(f"'{path}' has no '{name}'")
    return getattr(module, name)


def check_dataset_class(cls, name):
    if not isinstance(cls, type):
        raise Failure(f"'{name}' is a {type(cls).__name__}, expected a class")
    try:
        from torch.utils.data import Dataset
    except ImportError:
        Dataset = None
    if Dataset is not None and not issubclass(cls, Dataset):
        raise Failure(f"the custom dataset class '{name}' must inherit from torch.utils.data.Dataset (as in verl)")
    for method in ("__len__", "__getitem__"):
        if not callable(getattr(cls, method, None)):
            raise Failure(f"the custom dataset class '{name}' has no {method}")
    if hasattr(cls, "on_batch_end"):
        # verl's trainer calls it after each step (its experimental DynamicGenDataset); the rows here are read once.
        raise Failure(f"the custom dataset class '{name}' defines on_batch_end (a dataset that changes after each "
                      "training batch, verl's experimental dynamic datasets): not implemented in verl.cpp, which "
                      "reads a custom dataset's rows once at start-up")


class MissingTransformers:
    """Stands in for the tokenizer when transformers does not import: any use says why."""

    def __init__(self, path):
        object.__setattr__(self, "_path", path)

    def __getattr__(self, key):
        raise RuntimeError(f"the tokenizer of '{self._path}' needs the transformers package, which this Python "
                           "cannot import (install it, or name its site-packages in VERL_PYTHON_SITE_PACKAGES)")


def load_tokenizer(path, trust_remote_code):
    """verl's hf_tokenizer: AutoTokenizer, with the eos token as the pad token when there is none."""
    try:
        from transformers import AutoTokenizer
    except ImportError:
        return MissingTransformers(path)
    tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)
    if tokenizer.pad_token_id is None and tokenizer.eos_token is not None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def is_tensor(value):
    return type(value).__module__.startswith("torch") and hasattr(value, "tolist") and hasattr(value, "dim")


def to_json(value, where):
    """A JSON value for a row field; Failure naming `where` for what JSON cannot hold."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise Failure(f"{where} is {value}, which JSON cannot hold")
        return float(value)
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise Failure(f"{where} has a key {key!r} of type {type(key).__name__}, expected strings")
            out[key] = to_json(item, f"{where}['{key}']")
        return out
    if isinstance(value, (list, tuple)):
        return [to_json(item, f"{where}[{i}]") for i, item in enumerate(value)]
    module = type(value).__module__
    if module == "numpy" or is_tensor(value):
        return to_json(value.tolist(), where)  # arrays to lists, numpy scalars to Python numbers
    raise Failure(f"{where} is a {module}.{type(value).__qualname__}, expected JSON-like values "
                  "(dict, list, str, number, bool, None, numpy arrays)")


def apply_site_packages():
    """VERL_PYTHON_SITE_PACKAGES as the embedded interpreter applies it (python/interpreter.cpp): each folder put in
    front of sys.path with site.addsitedir, so that its .pth files apply too."""
    import site

    before = list(sys.path)
    for d in os.environ.get("VERL_PYTHON_SITE_PACKAGES", "").split(":"):
        if d:
            site.addsitedir(os.path.expanduser(d))
    sys.path[:] = [p for p in sys.path if p not in before] + before


def die_with_parent(parent_pid):
    """This process has a process group of its own, which a Ctrl-C or a kill of the run does not reach: it ends when
    the verl.cpp thread that started it does (Linux's PR_SET_PDEATHSIG) instead of loading on as an orphan."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent_pid:  # the run ended before the line above took effect
        os._exit(1)


def main():
    request_path, out_dir = sys.argv[1], sys.argv[2]
    with open(request_path) as f:
        request = json.load(f)
    die_with_parent(request["parent_pid"])
    apply_site_packages()
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # where `python -m verl.trainer.main_ppo` finds the user's modules
    name = request["name"]
    try:
        cls = load_class(request["path"], name)
        check_dataset_class(cls, name)
        dataset = cls(data_files=request["data_files"],
                      tokenizer=load_tokenizer(request["tokenizer_path"], request["trust_remote_code"]),
                      processor=None, config=make_config(request["config"]), max_samples=request["max_samples"])
        total = len(dataset)
        dropped = []
        with open(os.path.join(out_dir, "rows.jsonl"), "w") as rows:
            for i in range(total):
                row = dataset[i]
                if not isinstance(row, dict):
                    raise Failure(f"row {i} is a {type(row).__name__}, expected a dict (verl's row_dict)")
                fields = {}
                for key, value in row.items():
                    if is_tensor(value):
                        if key not in dropped:
                            dropped.append(key)
                        continue
                    fields[key] = value
                rows.write(json.dumps(to_json(fields, f"row {i}"), ensure_ascii=False, allow_nan=False) + "\n")
        with open(os.path.join(out_dir, "summary.json"), "w") as f:
            json.dump({"rows": total, "class": cls.__qualname__, "dropped_tensors": dropped},
                      f)
    except Failure as failure:
        report(out_dir, str(failure))
    except BaseException as exc:  # user code: SystemExit and KeyboardInterrupt too
        traceback.print_exc()
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith("<")]
        at = f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""
        report(out_dir, f"{type(exc).__name__}: {exc}{at}")


def report(out_dir, text):
    with open(os.path.join(out_dir, "error.txt"), "w") as f:
        f.write(" ".join(text.split()))
    sys.stdout.flush()
    os._exit(1)


main()
