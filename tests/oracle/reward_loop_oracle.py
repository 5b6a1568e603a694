"""verl 0.9.1's reward-loop managers in .venv/test, for test_reward_loop_oracle.cpp.

  reward_loop_oracle.py CASE.json   prints {"rm_scores": [[...]], "reward_extra_info": {key: [...]}}

CASE.json: {"tokenizer": folder, "manager": naive | dapo | gdpo | limited | remote, "config": verl's config as a dict (the
reward section after verl's legacy-key migration, trainer.experiment_name), "custom_reward_function": {"path",
"name"} or null, "prompt_length": P, "response_length": R, "rows": [{"prompt_ids", "response_ids", "non_tensor":
{column: value}}]}.

Each row is scored as verl's RewardLoopWorker.compute_score_batch does (one single-row DataProto per sample,
run_single awaited for all of them at once), and the batch assembled as RewardLoopManager.compute_rm_score does
(assemble_rm_scores; reward_extra_info keys from the first row). The custom function is loaded by verl's own
get_custom_reward_fn; without one the manager uses verl's default_compute_score.

verl's modules are loaded from its installed files without running the __init__ of verl and verl.experimental
(which need Ray and aiohttp); `ray` is a module that runs the remote manager's actors in this process.
"""
import asyncio
import contextlib
import importlib.util
import json
import os
import sys
import types


def in_process_ray():
    """A `ray` that runs actors in this process: what verl's remote manager needs (ray.remote classes, .options,
    .remote calls awaited, the node id), each call made at once and its result awaited as Ray's ObjectRef is."""
    ray = types.ModuleType("ray")
    ray.ObjectRef = object

    class Method:
        def __init__(self, function):
            self.function = function

        def remote(self, *args, **kwargs):
            future = asyncio.get_event_loop().create_future()
            future.set_result(self.function(*args, **kwargs))
            return future

    class Actor:
        def __init__(self, instance):
            self.instance = instance

        def __getattr__(self, name):
            return Method(getattr(self.instance, name))

    class ActorClass:
        def __init__(self, cls):
            self.cls = cls

        def options(self, **kwargs):
            return self

        def remote(self, *args, **kwargs):
            return Actor(self.cls(*args, **kwargs))

    def remote(*args, **kwargs):
        if len(args) == 1 and isinstance(args[0], type):
            return ActorClass(args[0])
        if len(args) == 1 and callable(args[0]):
            return args[0]
        return ActorClass

    ray.remote = remote
    strategies = types.ModuleType("ray.util.scheduling_strategies")
    strategies.NodeAffinitySchedulingStrategy = lambda **kwargs: kwargs
    ray.util = types.ModuleType("ray.util")
    ray.util.scheduling_strategies = strategies
    ray.get_runtime_context = lambda: types.SimpleNamespace(get_node_id=lambda: "node")
    sys.modules["ray.util"] = ray.util
    sys.modules["ray.util.scheduling_strategies"] = strategies
    return ray


def verl_packages_without_init():
    spec = importlib.util.find_spec("verl")
    assert spec is not None, "verl is not installed in " + sys.executable
    root = list(spec.submodule_search_locations)[0]
    for name, folder in (("verl", root), ("verl.experimental", os.path.join(root, "experimental")),
                         ("verl.experimental.reward_loop", os.path.join(root, "experimental", "reward_loop"))):
        module = types.ModuleType(name)
        module.__path__ = [folder]
        sys.modules[name] = module
    sys.modules.setdefault("ray", in_process_ray())
    from verl.protocol import DataProto

    sys.modules["verl"].DataProto = DataProto  # what `from verl import DataProto` finds


def jsonable(value):
    if hasattr(value, "tolist"):
        return jsonable(value.tolist())
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


@contextlib.contextmanager
def stdout_to_stderr():
    """verl's scorers print to stdout at random (search_r1_like_qa_em: one call in 64 prints the solution), in this
    process or a worker it starts: the file descriptor goes to stderr while they run, so stdout holds only the
    result's JSON."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def main(case_path):
    with stdout_to_stderr():
        result = score(case_path)
    print(json.dumps(result, ensure_ascii=False))


def score(case_path):
    verl_packages_without_init()
    import numpy as np
    import torch
    from omegaconf import OmegaConf
    from transformers import AutoTokenizer

    from verl import DataProto
    from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls
    from verl.trainer.ppo.reward import get_custom_reward_fn

    case = json.load(open(case_path))
    tokenizer = AutoTokenizer.from_pretrained(case["tokenizer"])
    config = OmegaConf.create(case["config"])
    compute_score = None
    if case.get("custom_reward_function"):
        fn = case["custom_reward_function"]
        compute_score = get_custom_reward_fn(OmegaConf.create(
            {"reward": {"custom_reward_function": {"path": fn["path"], "name": fn["name"], "reward_kwargs": {}}}}))
    manager = get_reward_manager_cls(case["manager"])(config, tokenizer, compute_score)

    P, R = case["prompt_length"], case["response_length"]
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    prompts = torch.full((len(case["rows"]), P), pad, dtype=torch.int64)
    responses = torch.full((len(case["rows"]), R), pad, dtype=torch.int64)
    attention_mask = torch.zeros((len(case["rows"]), P + R), dtype=torch.int64)
    for i, row in enumerate(case["rows"]):
        p, r = row["prompt_ids"], row["response_ids"]
        if p:
            prompts[i, P - len(p):] = torch.tensor(p)
            attention_mask[i, P - len(p):P] = 1
        if r:
            responses[i, :len(r)] = torch.tensor(r)
            attention_mask[i, P:P + len(r)] = 1

    def one_row(i):
        non_tensor = {}
        for key, value in case["rows"][i]["non_tensor"].items():
            column = np.empty(1, dtype=object)
            column[0] = value
            non_tensor[key] = column
        return DataProto.from_dict(
            tensors={"prompts": prompts[i:i + 1], "responses": responses[i:i + 1],
                     "attention_mask": attention_mask[i:i + 1]},
            non_tensors=non_tensor)

    async def score_all():
        return await asyncio.gather(*(manager.run_single(one_row(i)) for i in range(len(case["rows"]))))

    outputs = manager.loop.run_until_complete(score_all())
    data = DataProto.from_dict(tensors={"prompts": prompts, "responses": responses, "attention_mask": attention_mask})
    rm_scores = type(manager).assemble_rm_scores(data, [o["reward_score"] for o in outputs])
    infos = [o.get("reward_extra_info", {}) for o in outputs]
    extra = {key: [jsonable(info[key]) for info in infos] for key in infos[0]}
    return {"rm_scores": rm_scores.tolist(), "reward_extra_info": extra}


if __name__ == "__main__":
    main(sys.argv[1])
