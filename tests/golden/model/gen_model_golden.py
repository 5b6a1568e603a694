#!/usr/bin/python3
"""Reference logits for tiny Llama / Qwen2 / Qwen3 models made by `verl model init`.

usage: gen_model_golden.py MODEL_DIR INPUT_JSON OUTPUT.safetensors

An independent plain-PyTorch implementation of the Hugging Face forward of LlamaForCausalLM,
Qwen2ForCausalLM and Qwen3ForCausalLM (transformers is not packaged by Debian), written from the HF
architecture definitions: RMSNorm (fp32 variance), rotary embeddings with rotate_half (default, linear and
llama3 rope scaling), grouped-query attention via repeat of K/V heads, causal softmax attention, SwiGLU MLP,
Qwen2 q/k/v biases, Qwen3 q_norm/k_norm before rotary, Llama attention_bias/mlp_bias, tied embeddings.
Each row runs alone, unpadded, in float64: the C++ side runs the rows as one left-padded fp32 batch, so the
comparison also checks padding and masking. Output: logits_<i> [len_i, V] float64.
"""
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import st_format  # noqa: E402


def rms_norm(x, w, eps):
    var = x.pow(2).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(var + eps))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def inv_freq(cfg, head_dim):
    base = cfg.get("rope_theta", 10000.0)
    inv = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    rs = cfg.get("rope_scaling")
    if rs:
        kind = rs.get("rope_type", rs.get("type"))
        if kind == "linear":
            inv = inv / rs["factor"]
        elif kind == "llama3":
            factor, lo, hi = rs["factor"], rs.get("low_freq_factor", 1.0), rs.get("high_freq_factor", 4.0)
            old = rs.get("original_max_position_embeddings", 8192)
            out = []
            for f in inv.tolist():
                wavelen = 2 * math.pi / f
                if wavelen < old / hi:
                    out.append(f)
                elif wavelen > old / lo:
                    out.append(f / factor)
                else:
                    s = (old / wavelen - lo) / (hi - lo)
                    out.append((1 - s) * f / factor + s * f)
            inv = torch.tensor(out, dtype=torch.float64)
        elif kind != "default":
            raise SystemExit("unsupported rope_scaling " + str(rs))
    return inv


def linear(W, prefix, x):
    y = x @ W[prefix + ".weight"].T
    if prefix + ".bias" in W:
        y = y + W[prefix + ".bias"]
    return y


def forward(cfg, W, ids):
    arch = cfg["architectures"][0]
    H, Hkv = cfg["num_attention_heads"], cfg.get("num_key_value_heads", cfg["num_attention_heads"])
    D = cfg.get("head_dim") or cfg["hidden_size"] // H
    eps = cfg["rms_norm_eps"]
    T = len(ids)
    x = W["model.embed_tokens.weight"][torch.tensor(ids)]
    freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq(cfg, D))
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    causal = torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)
    for l in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % l
        h = rms_norm(x, W[p + "input_layernorm.weight"], eps)
        q = linear(W, p + "self_attn.q_proj", h).view(T, H, D)
        k = linear(W, p + "self_attn.k_proj", h).view(T, Hkv, D)
        v = linear(W, p + "self_attn.v_proj", h).view(T, Hkv, D)
        if arch.startswith("Qwen3"):
            q = rms_norm(q, W[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, W[p + "self_attn.k_norm.weight"], eps)
        q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(H // Hkv, dim=0)
        v = v.repeat_interleave(H // Hkv, dim=0)
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(D) + causal, dim=-1)
        o = (att @ v).transpose(0, 1).reshape(T, H * D)
        x = x + linear(W, p + "self_attn.o_proj", o)
        h = rms_norm(x, W[p + "post_attention_layernorm.weight"], eps)
        g = linear(W, p + "mlp.gate_proj", h)
        u = linear(W, p + "mlp.up_proj", h)
        x = x + linear(W, p + "mlp.down_proj", torch.nn.functional.silu(g) * u)
    x = rms_norm(x, W["model.norm.weight"], eps)
    head = W["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings") else W["lm_head.weight"]
    return x @ head.T


def main():
    model_dir, input_json, output = sys.argv[1:4]
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    W = {k: v.to(torch.float64) for k, v in st_format.read_checkpoint(model_dir).items()}
    with open(input_json) as f:
        rows = json.load(f)["input_ids"]
    out = {"logits_%d" % i: forward(cfg, W, ids) for i, ids in enumerate(rows)}
    st_format.write(output, out)


if __name__ == "__main__":
    main()
