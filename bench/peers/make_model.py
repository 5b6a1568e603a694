#!/usr/bin/env python3
"""One Hugging Face model folder that verl.cpp and every peer load: a random-weight Qwen2 model (transformers' own
init) with a byte-level BPE tokenizer of exactly the model's vocabulary and a ChatML chat template, plus the prompt
set every side of `bench/compare.py` uses.

The tokenizer is trained by HF `tokenizers` on the GSM8K questions given (--corpus), then padded to the vocabulary
size with extra merges of existing tokens (valid BPE merges that real text rarely triggers), so that every id a
random model samples decodes, in verl.cpp and in transformers alike.

usage: make_model.py --shape compare-512x8 --out DIR --corpus test.jsonl [--seed 0] [--dtype fp32]
"""
import argparse
import json
import os
import sys

# Shapes (Qwen2 architecture). compare-512x8: issue 24's "hidden 512 / 8 layers / vocab 32k"; qwen2.5-0.5b and
# tiny: `verl bench`'s presets (bench/hf_generate.py), tiny with a vocabulary large enough to train a tokenizer.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hf_generate import PRESETS  # noqa: E402

SHAPES = {
    "compare-512x8": dict(hidden_size=512, num_hidden_layers=8, num_attention_heads=8, num_key_value_heads=2,
                          intermediate_size=1408, vocab_size=32000, tie_word_embeddings=False, rope_theta=10000.0),
    "qwen2.5-0.5b": PRESETS["qwen2.5-0.5b"],
    "tiny": dict(PRESETS["tiny"], vocab_size=1024),
}
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHATML = ("{%- for message in messages %}"
          "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
          "{%- endfor %}"
          "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}")


def questions(corpus):
    with open(corpus) as f:
        return [json.loads(line)["question"] for line in f if line.strip()]


def build_tokenizer(texts, vocab_size):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from tokenizers.pre_tokenizers import ByteLevel
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    regular = vocab_size - len(SPECIALS)
    trainer = trainers.BpeTrainer(vocab_size=regular, initial_alphabet=ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer)
    model = json.loads(tok.to_str())["model"]
    vocab, merges = model["vocab"], [m if isinstance(m, list) else m.split(" ") for m in model["merges"]]
    # Pad with merges of the existing tokens, shortest first, until the vocabulary is full.
    tokens = sorted(vocab, key=lambda t: (len(t), vocab[t]))
    i = 0
    while len(vocab) < regular:
        a = tokens[i % len(tokens)]
        for b in tokens[:64]:
            if len(vocab) >= regular:
                break
            if a + b not in vocab:
                vocab[a + b] = len(vocab)
                merges.append([a, b])
        i += 1
    spec = json.loads(tok.to_str())
    spec["model"]["vocab"], spec["model"]["merges"] = vocab, merges
    spec["added_tokens"] = [dict(id=regular + k, content=s, single_word=False, lstrip=False, rstrip=False,
                                 normalized=False, special=True) for k, s in enumerate(SPECIALS)]
    return spec


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", required=True, choices=sorted(SHAPES))
    parser.add_argument("--out", required=True)
    parser.add_argument("--corpus", required=True, help="GSM8K-style JSONL with a 'question' field")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dtype", default="fp32", choices=["fp32", "bf16"])
    args = parser.parse_args()

    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM
    shape = dict(SHAPES[args.shape])
    V = shape["vocab_size"]
    os.makedirs(args.out, exist_ok=True)
    texts = questions(args.corpus)
    with open(os.path.join(args.out, "tokenizer.json"), "w") as f:
        json.dump(build_tokenizer(texts, V), f, ensure_ascii=False)
    pad, bos, eos = V - 3, V - 2, V - 1  # <|endoftext|>, <|im_start|>, <|im_end|>
    with open(os.path.join(args.out, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|im_end|>",
                   "pad_token": "<|endoftext|>", "bos_token": None, "chat_template": CHATML,
                   "model_max_length": 32768, "clean_up_tokenization_spaces": False}, f, indent=1)
    config = Qwen2Config(**shape, rms_norm_eps=1e-6, max_position_embeddings=32768, bos_token_id=bos,
                         eos_token_id=eos, pad_token_id=pad, hidden_act="silu")
    torch.manual_seed(args.seed)
    model = Qwen2ForCausalLM(config).to({"fp32": torch.float32, "bf16": torch.bfloat16}[args.dtype])
    model.generation_config.eos_token_id = eos
    model.generation_config.pad_token_id = pad
    model.save_pretrained(args.out)
    print(f"make_model: {args.shape} ({sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters, "
          f"vocabulary {V}) in {args.out}")


if __name__ == "__main__":
    main()
