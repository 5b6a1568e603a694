"""Model oracle: Hugging Face transformers' own Llama / Qwen2 / Qwen3 / Mistral / Qwen2-MoE / Qwen3-MoE models, for
tests/oracle/test_model_oracle.cpp. Runs under the test-only Python (.venv/test).

  make-models DIR          random-weight models that transformers creates (from_config with a fixed torch seed) and
                           saves (save_pretrained): DIR/models/NAME/, with DIR/refs/NAME.safetensors (the reference
                           outputs below) and DIR/manifest.json; also DIR/unsupported/NAME/: folders transformers
                           accepts but verl.cpp must refuse, listed in the manifest with the config key the error names
  reference OUT_DIR MODEL_DIR...
                           loads folders written by verl.cpp (`verl model init`, `verl model export`) in transformers,
                           strictly: exits 1 naming the problem on a missing / unexpected / mismatched key or any Python
                           or transformers warning; writes OUT_DIR/<basename of MODEL_DIR>.safetensors

What is compared (every model runs in float32 eager attention: fp32 folders as saved, bf16 folders upcast to fp32
when loaded, so verl.cpp, which also loads weights into fp32, sees the very same numbers):
  input_ids, attention_mask, position_ids [B, L]   one left-padded batch of ragged rows; position_ids =
                                                   clip(cumsum(mask) - 1, 0), verl's (transformers needs them given)
  logits [B, L, V]                                 the CausalLM's logits (meaningful where attention_mask is 1)
  log_probs, entropy [B, R]                        verl's log-prob pass over the last R tokens of each row:
                                                   log_softmax(logits / 0.7) at positions L-R-1 .. L-2, in float64
  values [B, L]                                    ForTokenClassification (num_labels 1) models: verl's critic
  gen_prompts, gen_prompt_mask [B, P]              left-padded prompts for greedy decoding
  gen_tokens [B, 64]                               model.generate(do_sample=False, max_new_tokens=64), no eos
  gen_margin [B, 64]                               top-1 minus top-2 logit at each generated step (near ties)
  gen_log_probs [B, 64]                            log_softmax of each step's logits at the generated token: the
                                                   decode path's numbers, which argmax alone hardly sees
"""

import json
import logging
import os
import sys
import warnings

import torch
import transformers
from safetensors.torch import save_file

TEMPERATURE = 0.7
RESPONSE_LENGTH = 3
ROW_LENGTHS = [11, 4, 7]
PROMPT_LENGTHS = [5, 2, 8]
NEW_TOKENS = 64
INIT_STD = 0.2  # logits well apart, so greedy decoding has no near ties

# name: (class, config kwargs, save options). Tiny: hidden 32-64, 2 layers, vocab 300.
COMMON = dict(vocab_size=300, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, initializer_range=INIT_STD, max_position_embeddings=256, bos_token_id=297, eos_token_id=298,
              pad_token_id=299)
MODELS = {
    "llama_gqa": ("LlamaForCausalLM", dict(num_key_value_heads=2), {}),
    "llama_mqa_tied_linear_rope": ("LlamaForCausalLM", dict(num_key_value_heads=1, tie_word_embeddings=True,
                                                            rope_parameters={"rope_type": "linear", "factor": 2.0,
                                                                             "rope_theta": 10000.0}), {}),
    "llama_mha_llama3_rope": ("LlamaForCausalLM", dict(num_key_value_heads=4, rope_parameters={
        "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 16, "rope_theta": 500000.0}), {}),
    "llama_head_dim_biases": ("LlamaForCausalLM", dict(num_key_value_heads=2, head_dim=16, attention_bias=True,
                                                       mlp_bias=True, rms_norm_eps=1e-5), {}),
    "llama_bf16": ("LlamaForCausalLM", dict(num_key_value_heads=2, hidden_size=64, intermediate_size=96),
                   {"dtype": torch.bfloat16}),
    # yarn: its attention factor from `factor` alone; then from mscale / mscale_all_dim, with other betas and the
    # correction range not truncated. Positions run past original_max_position_embeddings.
    "qwen2_yarn_rope": ("Qwen2ForCausalLM", dict(num_key_value_heads=2, rope_parameters={
        "rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64, "rope_theta": 10000.0}), {}),
    # (head_dim 16: the untruncated range, 0.21 to 1.41, ramps dimension 1 otherwise than the truncated 0 to 2.)
    "llama_yarn_mscale_rope": ("LlamaForCausalLM", dict(num_key_value_heads=2, head_dim=16, rope_parameters={
        "rope_type": "yarn", "factor": 4.0, "mscale": 1.0, "mscale_all_dim": 0.5, "beta_fast": 8.0,
        "beta_slow": 2.0, "truncate": False, "original_max_position_embeddings": 64, "rope_theta": 10000.0}), {}),
    "qwen2_gqa_theta1e6": ("Qwen2ForCausalLM", dict(num_key_value_heads=2, rope_parameters={
        "rope_type": "default", "rope_theta": 1000000.0}), {}),
    "qwen2_mqa_tied": ("Qwen2ForCausalLM", dict(num_key_value_heads=1, tie_word_embeddings=True,
                                                intermediate_size=44), {}),
    "qwen2_sharded": ("Qwen2ForCausalLM", dict(num_key_value_heads=2, hidden_size=64, intermediate_size=128),
                      {"max_shard_size": "60KB"}),
    "qwen3_gqa_head_dim": ("Qwen3ForCausalLM", dict(num_key_value_heads=2, head_dim=16), {}),
    "qwen3_mha_tied_bias": ("Qwen3ForCausalLM", dict(num_key_value_heads=4, head_dim=8, tie_word_embeddings=True,
                                                     attention_bias=True), {}),
    "qwen3_bf16_sharded": ("Qwen3ForCausalLM", dict(num_key_value_heads=2, head_dim=16, hidden_size=64,
                                                    intermediate_size=96),
                           {"dtype": torch.bfloat16, "max_shard_size": "40KB"}),
    # Mistral 7B v0.2 / v0.3 style: no window (null).
    "mistral_gqa": ("MistralForCausalLM", dict(num_key_value_heads=2, sliding_window=None, rope_parameters={
        "rope_type": "default", "rope_theta": 1000000.0}), {}),
    "llama_critic": ("LlamaForTokenClassification", dict(num_key_value_heads=2, num_labels=1), {}),
    "qwen2_critic": ("Qwen2ForTokenClassification", dict(num_key_value_heads=1, num_labels=1), {}),
    "mistral_critic": ("MistralForTokenClassification", dict(num_key_value_heads=1, sliding_window=None,
                                                            num_labels=1), {}),
    "qwen3_critic_bf16": ("Qwen3ForTokenClassification", dict(num_key_value_heads=2, head_dim=16, num_labels=1),
                          {"dtype": torch.bfloat16}),
    # Sliding-window attention, the windows shorter than the rows (11 tokens; 8 + 64 in generation): Mistral 7B
    # v0.1 style on every layer; Qwen2's from max_window_layers on; Qwen3's as layer_types lists them.
    "mistral_sliding_window": ("MistralForCausalLM", dict(num_key_value_heads=2, sliding_window=4), {}),
    "qwen2_sliding_window": ("Qwen2ForCausalLM", dict(num_key_value_heads=2, use_sliding_window=True,
                                                      sliding_window=4, max_window_layers=1), {}),
    "qwen3_sliding_layer_types": ("Qwen3ForCausalLM", dict(num_key_value_heads=2, head_dim=16,
                                                           use_sliding_window=True, sliding_window=5,
                                                           layer_types=["sliding_attention", "full_attention"]), {}),
    "qwen2_critic_sliding_window": ("Qwen2ForTokenClassification", dict(num_key_value_heads=2, num_labels=1,
                                                                        use_sliding_window=True, sliding_window=3,
                                                                        max_window_layers=0), {}),
    # Mixtures of experts: every layer sparse, the kept weights renormalised (Qwen3-30B-A3B's norm_topk_prob); a
    # dense layer 0 and a sparse layer 1 with the shared expert (decoder_sparse_step 2, Qwen2-MoE's raw top-k
    # weights), bf16; a critic whose layer 0 is dense by mlp_only_layers.
    "qwen3_moe_norm_topk": ("Qwen3MoeForCausalLM", dict(num_key_value_heads=2, head_dim=16, num_experts=4,
                                                        num_experts_per_tok=2, moe_intermediate_size=32,
                                                        norm_topk_prob=True), {}),
    "qwen2_moe_shared_expert_bf16": ("Qwen2MoeForCausalLM", dict(num_key_value_heads=2, num_experts=6,
                                                                 num_experts_per_tok=3, moe_intermediate_size=16,
                                                                 shared_expert_intermediate_size=40,
                                                                 decoder_sparse_step=2), {"dtype": torch.bfloat16}),
    "qwen3_moe_critic": ("Qwen3MoeForTokenClassification", dict(num_key_value_heads=2, head_dim=16, num_labels=1,
                                                                num_experts=4, num_experts_per_tok=1,
                                                                moe_intermediate_size=24, mlp_only_layers=[0]), {}),
}

# Configs transformers accepts and runs, which verl.cpp does not implement: name -> (class, kwargs, what the error
# must name). Each is a folder saved by transformers, weights included.
UNSUPPORTED = {
    "llama_rope_dynamic": ("LlamaForCausalLM", dict(rope_parameters={"rope_type": "dynamic", "factor": 2.0,
                                                                     "rope_theta": 10000.0}),
                           ["rope_parameters", "dynamic"]),
    "llama_gelu": ("LlamaForCausalLM", dict(hidden_act="gelu"), ["hidden_act"]),
    "llama_rope_longrope": ("LlamaForCausalLM", dict(rope_parameters={
        "rope_type": "longrope", "short_factor": [1.0] * 4, "long_factor": [2.0] * 4,
        "original_max_position_embeddings": 64, "rope_theta": 10000.0}), ["rope_parameters", "longrope"]),
    "gemma": ("GemmaForCausalLM", dict(), ["architecture", "GemmaForCausalLM"]),
    "qwen2_moe_no_qkv_bias": ("Qwen2MoeForCausalLM", dict(num_experts=4, num_experts_per_tok=2,
                                                           moe_intermediate_size=16, shared_expert_intermediate_size=16,
                                                           qkv_bias=False), ["qkv_bias"]),
    "gemma2": ("Gemma2ForCausalLM", dict(), ["architecture", "Gemma2ForCausalLM"]),
}


def perturb_norms_and_biases(model, generator):
    """transformers initialises norms to 1 and biases to 0; randomise them so every parameter counts."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=generator))
            elif name.endswith(".bias"):
                p.copy_(INIT_STD * torch.randn(p.shape, generator=generator))


def left_padded(lengths, vocab, pad_id, seed):
    g = torch.Generator().manual_seed(seed)
    width = max(lengths)
    ids = torch.full((len(lengths), width), pad_id, dtype=torch.int64)
    mask = torch.zeros((len(lengths), width), dtype=torch.int64)
    for r, n in enumerate(lengths):
        ids[r, width - n:] = torch.randint(0, vocab - 3, (n,), generator=g)  # no special ids
        mask[r, width - n:] = 1
    return ids, mask


def position_ids(mask):
    return (mask.cumsum(-1) - 1).clamp_min(0)


def reference_outputs(model, pad_id, with_generation):
    config = model.config
    ids, mask = left_padded(ROW_LENGTHS, config.vocab_size, pad_id, seed=11)
    out = {"input_ids": ids, "attention_mask": mask, "position_ids": position_ids(mask)}
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask, position_ids=position_ids(mask)).logits.float()
    if config.architectures[0].endswith("ForTokenClassification"):
        out["values"] = logits[..., 0].contiguous()
        return out
    out["logits"] = logits.contiguous()
    L, R = ids.shape[1], RESPONSE_LENGTH
    scaled = logits[:, L - R - 1:L - 1].double() / TEMPERATURE
    log_p = torch.log_softmax(scaled, -1)
    out["log_probs"] = log_p.gather(-1, ids[:, L - R:].unsqueeze(-1)).squeeze(-1).float()
    out["entropy"] = (-(log_p.exp() * log_p).sum(-1)).float()
    if with_generation:
        prompts, prompt_mask = left_padded(PROMPT_LENGTHS, config.vocab_size, pad_id, seed=12)
        # Replaces the folder's generation_config.json, whose eos id generate would otherwise merge in.
        model.generation_config = transformers.GenerationConfig(
            do_sample=False, max_new_tokens=NEW_TOKENS, eos_token_id=None, pad_token_id=pad_id, bos_token_id=None,
            return_dict_in_generate=True, output_logits=True)
        with torch.no_grad():
            result = model.generate(input_ids=prompts, attention_mask=prompt_mask)
        assert result.sequences.shape[1] == prompts.shape[1] + NEW_TOKENS, "generate stopped early"
        step_logits = torch.stack(result.logits, 1).float()  # [B, 64, V]
        top2 = step_logits.topk(2, -1).values
        out["gen_prompts"] = prompts
        out["gen_prompt_mask"] = prompt_mask
        out["gen_tokens"] = result.sequences[:, prompts.shape[1]:].contiguous()
        out["gen_margin"] = (top2[..., 0] - top2[..., 1]).contiguous()
        chosen = out["gen_tokens"].unsqueeze(-1)
        out["gen_log_probs"] = torch.log_softmax(step_logits.double(), -1).gather(-1, chosen).squeeze(-1).float()
    return out


def build(class_name, kwargs, seed):
    config_class = getattr(transformers, class_name).config_class
    config = config_class(**{**COMMON, **kwargs})
    config._attn_implementation = "eager"
    config.architectures = [class_name]
    torch.manual_seed(seed)
    model = getattr(transformers, class_name)(config)
    perturb_norms_and_biases(model, torch.Generator().manual_seed(seed + 1000))
    return model.eval()


def make_models(out_dir):
    manifest = {"models": [], "unsupported": []}
    os.makedirs(os.path.join(out_dir, "refs"), exist_ok=True)
    for i, (name, (class_name, kwargs, save)) in enumerate(MODELS.items()):
        model = build(class_name, kwargs, seed=300 + i)
        folder = os.path.join(out_dir, "models", name)
        dtype = save.get("dtype", torch.float32)
        model.to(dtype).save_pretrained(folder, max_shard_size=save.get("max_shard_size", "5GB"))
        # The reference runs the saved folder, read back in fp32 (bf16 weights upcast).
        problems = []
        loaded = load_strict(folder, problems)
        assert not problems, "%s: %s" % (name, problems)
        critic = class_name.endswith("ForTokenClassification")
        refs = reference_outputs(loaded, COMMON["pad_token_id"], with_generation=not critic)
        save_file(refs, os.path.join(out_dir, "refs", name + ".safetensors"))
        manifest["models"].append({"name": name, "critic": critic, "dtype": str(dtype).replace("torch.", "")})
    for i, (name, (class_name, kwargs, keys)) in enumerate(UNSUPPORTED.items()):
        model = build(class_name, kwargs, seed=200 + i)
        folder = os.path.join(out_dir, "unsupported", name)
        model.save_pretrained(folder)
        ids, mask = left_padded(ROW_LENGTHS, COMMON["vocab_size"], COMMON["pad_token_id"], seed=11)
        with torch.no_grad():  # transformers does run it
            model(input_ids=ids, attention_mask=mask, position_ids=position_ids(mask))
        manifest["unsupported"].append({"name": name, "keys": keys})
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


class _Collect(logging.Handler):
    def __init__(self, problems):
        super().__init__(logging.WARNING)
        self.problems = problems

    def emit(self, record):
        self.problems.append("transformers log: " + record.getMessage())


def load_strict(folder, problems):
    """The folder's architecture class, loaded in fp32 eager attention; appends every loading problem and warning."""
    with open(os.path.join(folder, "config.json")) as f:
        class_name = json.load(f)["architectures"][0]
    handler = _Collect(problems)
    logger = logging.getLogger("transformers")
    logger.addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model, info = getattr(transformers, class_name).from_pretrained(
                folder, dtype=torch.float32, attn_implementation="eager", output_loading_info=True)
    finally:
        logger.removeHandler(handler)
    problems.extend("warning: %s" % w.message for w in caught)
    for key, value in info.items():
        if value:
            problems.append("%s: %s" % (key, sorted(str(v) for v in value)))
    return model.eval()


def reference(out_dir, folders):
    os.makedirs(out_dir, exist_ok=True)
    failed = False
    for folder in folders:
        problems = []
        model = load_strict(folder, problems)
        name = os.path.basename(os.path.normpath(folder))
        if problems:
            print("%s: %s" % (folder, "; ".join(problems)), file=sys.stderr)
            failed = True
            continue
        pad_id = model.config.pad_token_id if model.config.pad_token_id is not None else 0
        critic = model.config.architectures[0].endswith("ForTokenClassification")
        save_file(reference_outputs(model, pad_id, with_generation=not critic),
                  os.path.join(out_dir, name + ".safetensors"))
    sys.exit(1 if failed else 0)


def main(argv):
    torch.set_num_threads(1)
    if len(argv) == 3 and argv[1] == "make-models":
        make_models(argv[2])
    elif len(argv) >= 4 and argv[1] == "reference":
        reference(argv[2], argv[3:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
