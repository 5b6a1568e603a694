"""Tokenizer oracle: HF `tokenizers` (the Rust library) and `transformers`, for tests/oracle/test_tokenizer_oracle.cpp.
Runs under the test-only Python (.venv/test), offline (nothing is fetched from a hub).

  train OUT_DIR CORPUS      trains BPE tokenizers with tokenizers' own trainer on the corpus, one folder each
                            (tokenizer.json, tokenizer_config.json): byte-level (GPT-2 style), a split regex then
                            byte-level (Llama 3 / Qwen style), SentencePiece-style byte fallback (Llama 2 / Mistral),
                            a Metaspace pre-tokenizer, and lower-casing + accent stripping with whitespace / digit
                            splits; plus `unsupported/` with a pre-tokenizer verl.cpp does not implement
  adversarial OUT           extra strings as corpus lines: a 100 KB line, a character of every Unicode general
                            category, special tokens glued to text, leading / trailing / only spaces, ...
  encode DIR CORPUS OUT     per corpus line, transformers' AutoTokenizer from DIR (what verl's Python uses):
                            {"with_special", "without_special", "decoded", "decoded_skip"}, where "decoded" is
                            decode(without_special) and "decoded_skip" decode(with_special, skip_special_tokens)
  split-decode DIR OUT      decodes every prefix of the ids of strings whose characters span several tokens, so
                            the byte-level pieces of a character are cut (invalid UTF-8): one {"ids", "text"} each
  chat DIR CASES OUT        apply_chat_template(tokenize=False) for each {"messages", "kwargs"} case line:
                            {"text", "ids"} (ids: the text tokenized without special tokens, as verl's
                            RLHFDataset does) or {"error"}
"""

import json
import os
import sys
import unicodedata

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers  # noqa: E402

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def read_corpus(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f if line.strip()]


def _save(tokenizer, out_dir, config):
    os.makedirs(out_dir, exist_ok=True)
    tokenizer.save(os.path.join(out_dir, "tokenizer.json"))
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(dict({"tokenizer_class": "PreTrainedTokenizerFast", "clean_up_tokenization_spaces": False}, **config), f)


def train(out_dir, corpus_path):
    texts = read_corpus(corpus_path)
    byte_alphabet = pre_tokenizers.ByteLevel.alphabet()

    def bpe_trainer(**extra):
        return trainers.BpeTrainer(vocab_size=800, min_frequency=2, special_tokens=SPECIAL, show_progress=False, **extra)

    # GPT-2: byte-level pre-tokenizer with its own regex, NFC.
    t = Tokenizer(models.BPE())
    t.normalizer = normalizers.NFC()
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.decoder = decoders.ByteLevel()
    t.train_from_iterator(texts, bpe_trainer(initial_alphabet=byte_alphabet))
    _save(t, os.path.join(out_dir, "bytelevel"), {"eos_token": "<|endoftext|>"})

    # Llama 3 / Qwen: a Split regex, then byte-level without its regex; a BOS template.
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_SPLIT), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    t.decoder = decoders.ByteLevel()
    t.train_from_iterator(texts, bpe_trainer(initial_alphabet=byte_alphabet))
    t.post_processor = processors.TemplateProcessing(single="<|endoftext|> $A", pair="<|endoftext|> $A $B",
                                                     special_tokens=[("<|endoftext|>", t.token_to_id("<|endoftext|>"))])
    _save(t, os.path.join(out_dir, "split_bytelevel"), {"bos_token": "<|endoftext|>"})

    # Llama 2 / Mistral: SentencePiece-style normalizer, BPE with byte fallback, the matching decoder.
    t = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    t.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    t.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                   decoders.Strip(" ", 1, 0)])
    byte_tokens = [f"<0x{b:02X}>" for b in range(256)]
    t.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=900, min_frequency=2, show_progress=False,
                                                     special_tokens=["<unk>", "<s>", "</s>"] + byte_tokens))
    t.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A $B",
                                                     special_tokens=[("<s>", t.token_to_id("<s>"))])
    _save(t, os.path.join(out_dir, "byte_fallback"), {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"})

    # A Metaspace pre-tokenizer and decoder (prepend "▁" to the first word only).
    t = Tokenizer(models.BPE(unk_token="<unk>"))
    t.normalizer = normalizers.NFKC()
    t.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first")
    t.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="first")
    t.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=800, show_progress=False,
                                                     special_tokens=["<unk>"] + SPECIAL))
    _save(t, os.path.join(out_dir, "metaspace"), {"unk_token": "<unk>"})

    # Lower-casing and accent stripping, whitespace and single-digit splits (no decoder: tokens joined by spaces).
    t = Tokenizer(models.BPE(unk_token="<unk>"))
    t.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.Lowercase(), normalizers.StripAccents()])
    t.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Whitespace(), pre_tokenizers.Digits(individual_digits=True)])
    t.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=700, show_progress=False,
                                                     special_tokens=["<unk>"] + SPECIAL))
    _save(t, os.path.join(out_dir, "lowercase_digits"), {"unk_token": "<unk>"})

    # A pre-tokenizer verl.cpp does not implement: loading it must be a one-line error naming it.
    t = Tokenizer(models.BPE(unk_token="<unk>"))
    t.pre_tokenizer = pre_tokenizers.Punctuation()
    t.train_from_iterator(texts[:50], trainers.BpeTrainer(vocab_size=300, show_progress=False, special_tokens=["<unk>"]))
    _save(t, os.path.join(out_dir, "unsupported"), {"unk_token": "<unk>"})
    print("\n".join(sorted(os.listdir(out_dir))))


def adversarial(out_path):
    lines = []
    # One character of every Unicode general category that UTF-8 can carry as text (no surrogates).
    by_category = {}
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        cat = unicodedata.category(chr(cp))
        if cat not in by_category or len(by_category[cat]) < 4:
            by_category.setdefault(cat, []).append(chr(cp))
    for cat, chars in sorted(by_category.items()):
        lines.append(("category_" + cat, "x" + "y".join(chars) + "z"))
    lines += [
        ("long_line", ("The quick brown fox 123 jumps; 日本語 émoji 🎉\t" * 2300)[:100_000]),
        ("special_glued", "hello<|im_start|>world<|im_end|>again<|endoftext|>"),
        ("special_spaced", " <|im_start|> user\n<|im_end|> "),
        ("special_only", "<|im_start|><|im_end|>"),
        ("leading_spaces", "   leading spaces"),
        ("trailing_spaces", "trailing spaces   "),
        ("only_spaces", "     "),
        ("empty", ""),
        ("newlines", "\n\n\r\n \n"),
        ("tabs_mixed", "\t a\t\tb \t"),
        ("numbers", "1234567890 3.14159 -42 1e10 0x1F"),
        ("zero_width", "a\u200bb\u200cc\u200dd\ufeffe"),
        ("combining_stack", "e\u0301\u0302\u0303 o\u0308"),
        ("rtl", "مرحبا بالعالم שלום"),
        ("emoji_sequences", "👨‍👩‍👧‍👦 🏳️‍🌈 👍🏽"),
    ]
    with open(out_path, "w", encoding="utf-8") as f:
        for category, text in lines:
            f.write(json.dumps({"category": category, "text": text}, ensure_ascii=False) + "\n")


def _auto(model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model_dir, local_files_only=True)


def encode(model_dir, corpus_path, out_path):
    tok = _auto(model_dir)
    with open(out_path, "w", encoding="utf-8") as out:
        for text in read_corpus(corpus_path):
            with_special = tok(text, add_special_tokens=True)["input_ids"]
            without = tok(text, add_special_tokens=False)["input_ids"]
            out.write(json.dumps({"with_special": with_special, "without_special": without,
                                  "decoded": tok.decode(without),
                                  "decoded_skip": tok.decode(with_special, skip_special_tokens=True)},
                                 ensure_ascii=False) + "\n")


def split_decode(model_dir, out_path):
    tok = _auto(model_dir)
    with open(out_path, "w", encoding="utf-8") as out:
        for text in ["日本語の文章", "émoji 🎉👨‍👩‍👧 done", "Ελληνικά и русский", "\u0915\u094d\u0937 ok"]:
            ids = tok(text, add_special_tokens=False)["input_ids"]
            for k in range(1, len(ids) + 1):
                out.write(json.dumps({"ids": ids[:k], "text": tok.decode(ids[:k])}, ensure_ascii=False) + "\n")


def chat(model_dir, cases_path, out_path):
    tok = _auto(model_dir)
    with open(cases_path, encoding="utf-8") as f, open(out_path, "w", encoding="utf-8") as out:
        for line in f:
            if not line.strip():
                continue
            case = json.loads(line)
            try:
                text = tok.apply_chat_template(case["messages"], tokenize=False, **case.get("kwargs", {}))
                # verl's RLHFDataset renders the text, then tokenizes it without adding special tokens.
                ids = tok(text, add_special_tokens=False)["input_ids"]
                out.write(json.dumps({"text": text, "ids": ids}, ensure_ascii=False) + "\n")
            except Exception as e:  # noqa: BLE001 - the template's own error is the expected output
                out.write(json.dumps({"error": f"{type(e).__name__}: {e}"}, ensure_ascii=False) + "\n")


def main(argv):
    commands = {"train": (train, 2), "adversarial": (adversarial, 1), "encode": (encode, 3),
                "split-decode": (split_decode, 2), "chat": (chat, 3)}
    if len(argv) < 2 or argv[1] not in commands or len(argv) - 2 != commands[argv[1]][1]:
        sys.exit(__doc__)
    commands[argv[1]][0](*argv[2:])


if __name__ == "__main__":
    main(sys.argv)
