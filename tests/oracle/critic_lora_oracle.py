"""Critic LoRA oracle: a PEFT TOKEN_CLS adapter on transformers' Qwen2ForTokenClassification (num_labels 1), the
value model verl's critic is, wrapped as verl's CriticWorker wraps it (get_peft_model(LoraConfig(task_type=TOKEN_CLS,
r, lora_alpha, target_modules, bias="none"))), for tests/oracle/test_critic_lora_oracle.cpp. Runs under .venv/test.

  make DIR   DIR/model (the random-weight value model, save_pretrained), DIR/adapter (the PeftModel with lora_A /
             lora_B and the value head's modules_to_save copy set to random non-zero values, save_pretrained) and
             DIR/refs.safetensors: input_ids, attention_mask, position_ids [B, L] (left-padded ragged rows) and the
             PeftModel's values [B, L] (its logits[..., 0]), float32 eager attention
"""

import os
import sys

import torch
import transformers
from peft import LoraConfig, TaskType, get_peft_model
from safetensors.torch import save_file

from lora_oracle import COMMON, batch  # the actor oracle's model shape and ragged rows

CONFIG = dict(COMMON, num_labels=1)
# verl's critic default is all-linear, which PEFT 0.21 refuses on a TOKEN_CLS model (score would be a LoRA target
# and a modules_to_save copy at once): the seven names are what a verl critic LoRA run must list.
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def make(out):
    torch.manual_seed(300)
    config = transformers.Qwen2Config(**CONFIG)
    config.architectures = ["Qwen2ForTokenClassification"]
    model = transformers.Qwen2ForTokenClassification(config).eval()
    model.config._attn_implementation = "eager"
    model.save_pretrained(os.path.join(out, "model"))
    peft_model = get_peft_model(model, LoraConfig(task_type=TaskType.TOKEN_CLS, r=4, lora_alpha=8,
                                                  target_modules=TARGETS, bias="none"))
    g = torch.Generator().manual_seed(301)
    with torch.no_grad():
        for name, p in peft_model.named_parameters():
            if p.requires_grad:  # lora_A, lora_B and the trainable copy of score
                p.copy_(0.3 * torch.randn(p.shape, generator=g))
    peft_model.eval()
    peft_model.save_pretrained(os.path.join(out, "adapter"))
    ids, mask, pos = batch(config.vocab_size, config.pad_token_id)
    with torch.no_grad():
        values = peft_model(input_ids=ids, attention_mask=mask, position_ids=pos).logits[..., 0].float().contiguous()
    save_file({"input_ids": ids, "attention_mask": mask, "position_ids": pos, "values": values},
              os.path.join(out, "refs.safetensors"))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "make":
        make(sys.argv[2])
    else:
        sys.exit(__doc__)
