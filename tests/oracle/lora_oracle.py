"""LoRA oracle: Hugging Face PEFT on transformers' Llama / Qwen2 / Qwen3 / Qwen3-MoE, for tests/oracle/test_lora_oracle.cpp.
Runs under the test-only Python (.venv/test, peft pinned in scripts/requirements/test.txt).

  make DIR      for each model below: DIR/models/NAME (a random-weight transformers model, save_pretrained),
                DIR/adapters/NAME (get_peft_model with the model's LoraConfig, then lora_A / lora_B set to random
                non-zero values, save_pretrained), DIR/merged/NAME (merge_and_unload of it, save_pretrained) and
                DIR/refs/NAME.safetensors: input_ids, attention_mask, position_ids [B, L] (one left-padded batch of
                ragged rows) and the PeftModel's logits [B, L, V] on them, float32 eager attention
  logits OUT MODEL_DIR ADAPTER_DIR
                PeftModel.from_pretrained(AutoModelForCausalLM(MODEL_DIR), ADAPTER_DIR) on the same batch; writes
                OUT (logits); exits 1 naming the problem on any warning (missing or unexpected adapter keys)
"""

import json
import os
import sys
import warnings

import torch
import transformers
from peft import LoraConfig, PeftModel, get_peft_model
from safetensors.torch import save_file

ROW_LENGTHS = [9, 4, 7]
COMMON = dict(vocab_size=200, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, initializer_range=0.2, max_position_embeddings=128, bos_token_id=197,
              eos_token_id=198, pad_token_id=199)
# name: (class, config kwargs, LoraConfig kwargs)
MODELS = {
    "llama_all_linear": ("LlamaForCausalLM", dict(), dict(r=4, lora_alpha=8, target_modules="all-linear")),
    "qwen2_qv": ("Qwen2ForCausalLM", dict(), dict(r=2, lora_alpha=16, target_modules=["q_proj", "v_proj"])),
    "qwen3_exclude_rslora": ("Qwen3ForCausalLM", dict(head_dim=16),
                             dict(r=8, lora_alpha=4, target_modules="all-linear", exclude_modules=["o_proj"],
                                  use_rslora=True)),
    "qwen2_regex": ("Qwen2ForCausalLM", dict(num_key_value_heads=1),
                    dict(r=3, lora_alpha=6, target_modules=r".*layers\.1\.mlp\.(up|down)_proj")),
    # A mixture of experts (layer 0 dense, layer 1 routed) adapted on its attention.
    "qwen3_moe_attention": ("Qwen3MoeForCausalLM", dict(head_dim=16, num_experts=4, num_experts_per_tok=2,
                                                        moe_intermediate_size=16, mlp_only_layers=[0],
                                                        norm_topk_prob=True),
                            dict(r=4, lora_alpha=8, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"])),
}


def batch(vocab, pad_id):
    g = torch.Generator().manual_seed(5)
    width = max(ROW_LENGTHS)
    ids = torch.full((len(ROW_LENGTHS), width), pad_id, dtype=torch.int64)
    mask = torch.zeros((len(ROW_LENGTHS), width), dtype=torch.int64)
    for r, n in enumerate(ROW_LENGTHS):
        ids[r, width - n:] = torch.randint(0, vocab - 3, (n,), generator=g)
        mask[r, width - n:] = 1
    return ids, mask, (mask.cumsum(-1) - 1).clamp_min(0)


def logits_of(model, ids, mask, pos):
    with torch.no_grad():
        return model(input_ids=ids, attention_mask=mask, position_ids=pos).logits.float().contiguous()


def make(out):
    for sub in ("models", "adapters", "merged", "refs"):
        os.makedirs(os.path.join(out, sub), exist_ok=True)
    for i, (name, (cls, kwargs, lora_kwargs)) in enumerate(MODELS.items()):
        torch.manual_seed(100 + i)
        config = getattr(transformers, cls.replace("ForCausalLM", "Config"))(**{**COMMON, **kwargs})
        config.architectures = [cls]
        model = getattr(transformers, cls)(config).eval()
        model.config._attn_implementation = "eager"
        base_dir = os.path.join(out, "models", name)
        model.save_pretrained(base_dir)
        peft_model = get_peft_model(model, LoraConfig(task_type="CAUSAL_LM", **lora_kwargs))
        g = torch.Generator().manual_seed(200 + i)
        with torch.no_grad():
            for pname, p in peft_model.named_parameters():
                if "lora_A" in pname or "lora_B" in pname:
                    p.copy_(0.3 * torch.randn(p.shape, generator=g))
        peft_model.eval()
        peft_model.save_pretrained(os.path.join(out, "adapters", name))
        # The adapter's base as verl.cpp should find it (save_pretrained wrote the in-memory one's None or path).
        cfg_path = os.path.join(out, "adapters", name, "adapter_config.json")
        with open(cfg_path) as f:
            cfg = json.load(f)
        cfg["base_model_name_or_path"] = base_dir
        with open(cfg_path, "w") as f:
            json.dump(cfg, f, indent=2)
        ids, mask, pos = batch(config.vocab_size, config.pad_token_id)
        refs = {"input_ids": ids, "attention_mask": mask, "position_ids": pos,
                "logits": logits_of(peft_model, ids, mask, pos)}
        save_file(refs, os.path.join(out, "refs", name + ".safetensors"))
        merged = peft_model.merge_and_unload()
        merged.save_pretrained(os.path.join(out, "merged", name))
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump({"models": list(MODELS)}, f)


def logits(out_path, model_dir, adapter_dir):
    warnings.simplefilter("error")  # peft warns on missing / unexpected adapter keys: fail instead
    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32,
                                                              attn_implementation="eager").eval()
    peft_model = PeftModel.from_pretrained(model, adapter_dir).eval()
    cfg = model.config
    ids, mask, pos = batch(cfg.vocab_size, cfg.pad_token_id)
    save_file({"logits": logits_of(peft_model, ids, mask, pos)}, out_path)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "make":
        make(sys.argv[2])
    elif len(sys.argv) == 5 and sys.argv[1] == "logits":
        logits(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit(__doc__)
