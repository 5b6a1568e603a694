#!/usr/bin/python3
"""Writes tests/data/tokenizer_corpus.jsonl: a deterministic corpus for tokenizer id-equality tests.

Run: /usr/bin/python3 tests/data/make_tokenizer_corpus.py  (same output every run; seeded RNG).
Each line is {"category": ..., "text": ...}. Categories cover English prose and code, CJK, Arabic, Hindi,
emoji (ZWJ sequences, skin tones, flags), combining marks, digit runs, whitespace runs (spaces, tabs,
\\r\\n), special-token strings inside text, very long words and random mixtures of all of these.
Characters where JavaScript's \\s differs from Oniguruma's (U+0085, U+FEFF) are left out on purpose.
"""
import json
import os
import random

rng = random.Random(20261122)

WORDS = ("the of and to in is that it for was on are as with his they at be this from have or by one had not "
         "but what all were when we there can an your which their said if do will each about how up out them "
         "then she many some so these would other into has more her two like him see time could no make than "
         "first been its who now people my made over did down only way find use may water long little very "
         "after words called just where most know get through back much before go good new write our used me "
         "man too any day same right look think also around another came come work three word must because "
         "does part even place well such here take why things help put years different away again off went "
         "old number great tell men say small every found still between name should Mr home big give air line "
         "set own under read last never us left end along while might next sound below saw something thought "
         "both few those always looked show large often together asked house don't world going want school "
         "important until form food keep children feet land side without boy once animals life enough took "
         "sometimes four head above kind began almost live page got earth need far hand high year mother light "
         "parts country father let night following picture being study second eyes soon times story boys since "
         "white days ever paper hard near sentence better best across during today others however sure means "
         "knew it's try told young miles sun ways thing whole hear example heard several change answer room sea "
         "against top turned learn point city play toward five using himself usually").split()

CODE = [
    "def add(a, b):\n    return a + b\n",
    "for (int i = 0; i < n; ++i) {\n\tsum += x[i] * y[i];\n}\n",
    "#include <vector>\nint main() { std::vector<int> v{1, 2, 3}; return v.size(); }\n",
    "const f = async (url) => { const r = await fetch(url); return r.json(); };\n",
    "SELECT name, COUNT(*) FROM users WHERE age >= 21 GROUP BY name ORDER BY 2 DESC;\n",
    '{"key": "value", "list": [1, 2.5, -3e10, null, true], "nested": {"a": {}}}',
    "if __name__ == '__main__':\n    main()\r\n",
    "    x = [i**2 for i in range(10) if i % 2 == 0]  # squares\n",
    "fn main() {\n    let s: String = String::from(\"héllo\");\n    println!(\"{}\", s);\n}\n",
    "<html>\n  <body class=\"main\">\n    <p>Hello &amp; welcome</p>\n  </body>\n</html>\n",
    "$ git commit -m 'fix: handle \\r\\n in tokenizer' && git push origin HEAD:refs/for/main\n",
    "    \t  return self._cache.get(key, default) or {}\n\n\n",
    "x_1,y_2=foo(bar[::2],baz=**kwargs);;;//comment\n",
    "\\begin{equation} E = mc^2 \\quad \\forall x \\in \\mathbb{R} \\end{equation}",
]

CJK = ["你好，世界！", "我爱自然语言处理。", "今天天气很好，我们去公园散步吧。", "東京は日本の首都です。",
       "ひらがなとカタカナ、そして漢字。", "안녕하세요, 만나서 반갑습니다.", "机器学习模型的训练需要大量数据",
       "強化学習（RL）による言語モデルの微調整", "중국어와 일본어, 한국어를 섞어서 씁니다", "「引用」『二重引用』【括弧】"]
ARABIC = ["مرحبا بالعالم", "اللغة العربية جميلة جداً", "كيف حالك اليوم؟", "بِسْمِ اللَّهِ الرَّحْمَٰنِ الرَّحِيمِ",
          "هذا نص عربي مع أرقام ١٢٣٤٥٦٧٨٩٠ و 123"]
HINDI = ["नमस्ते दुनिया", "हिन्दी भाषा बहुत सुंदर है।", "मशीन लर्निंग और कृत्रिम बुद्धिमत्ता", "क्षत्रिय ज्ञान श्री",
         "संख्या १२३४५ और 678"]
EMOJI = ["😀", "👍🏽", "👩‍💻", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇫🇷🇯🇵", "❤️", "🧑🏿‍🚀", "👋🏻👋🏼👋🏽👋🏾👋🏿", "🤦‍♀️",
         "🫶🏾", "😂😂😂", "✨🔥💯", "🐈‍⬛", "👁️‍🗨️", "#️⃣", "©®™"]
COMBINING = ["e\u0301", "a\u0308o\u0308u\u0308", "n\u0303", "Z\u0351\u0352\u0357a\u0310\u0311l\u0300g\u0301o\u0302",
             "Vie\u0302\u0323t Nam", "cafe\u0301", "\u00e9", "A\u030a\u212b", "\u1e9b\u0323", "ﬁ ﬂ ＡＢＣ ①②③",
             "i\u0307", "o\u0328\u0304", "\u0915\u093c"]
SPECIAL = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|begin_of_text|>", "<|eot_id|>",
           "<|start_header_id|>", "<|end_header_id|>", "<s>", "</s>", "<unk>", "<think>", "</think>",
           "<|im_", "im_end|>", "<|reserved_special_token_5|>", "<tool_call>", "<|vision_pad|>", "<<s>>", "<|<|im_end|>|>"]
WHITESPACE = [" ", "  ", "   ", "        ", "\t", "\t\t", "\n", "\n\n", "\r\n", "\r\n\r\n", " \n ", "\t \t", "\u3000", "\u00a0",
              " \r\n\t ", "\n    ", "\r"]
PUNCT = list(".,;:!?'\"()[]{}<>-_/\\|@#$%^&*+=~`") + ["...", "--", "—", "–", "…", "«", "»", "“", "”", "‘", "’", "•", "€", "£", "¥"]
CONTRACTIONS = ["it's", "don't", "we'll", "they're", "I've", "I'm", "she'd", "IT'S", "DON'T", "We'LL", "'s", "'S"]


def prose():
    n = rng.randint(3, 40)
    words = [rng.choice(WORDS) for _ in range(n)]
    if rng.random() < 0.5:
        words[0] = words[0].capitalize()
    for i in range(len(words)):
        r = rng.random()
        if r < 0.08:
            words[i] += rng.choice([",", ";", ":", "!", "?"])
        elif r < 0.12:
            words[i] = words[i].upper()
        elif r < 0.15:
            words[i] = rng.choice(CONTRACTIONS)
    return " ".join(words) + rng.choice([".", "!", "?", "", "\n"])


def digits():
    length = rng.choice([1, 2, 3, 4, 5, 7, 10, 16, 33, 64, 100, 257])
    run = "".join(rng.choice("0123456789") for _ in range(length))
    forms = [run, f"{run} apples", f"v{run}.{rng.randint(0, 99)}", f"${run},{rng.randint(100, 999)}.00",
             f"{run[:3]}-{run[3:6]}-{run[6:]}", f"x={run};", f"3.14159{run}", f"-{run}e-{rng.randint(1, 30)}"]
    return rng.choice(forms)


def long_word():
    length = rng.choice([50, 120, 255, 256, 300, 600, 1000, 2500])
    kind = rng.randrange(6)
    if kind == 0:
        return "a" * length
    if kind == 1:
        return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(length))
    if kind == 2:
        return "Pneumonoultramicroscopicsilicovolcanoconiosis" * (length // 45 + 1)
    if kind == 3:
        return "https://example.com/" + "/".join(rng.choice(WORDS) for _ in range(length // 6)) + "?q=1&r=2"
    if kind == 4:
        return "".join(rng.choice("你好世界机器学习") for _ in range(length // 3))
    return "".join(rng.choice("ABCDEFabcdef0123456789") for _ in range(length))


def piece():
    kind = rng.randrange(12)
    if kind == 0:
        return prose()
    if kind == 1:
        return rng.choice(CODE)
    if kind == 2:
        return rng.choice(CJK)
    if kind == 3:
        return rng.choice(ARABIC)
    if kind == 4:
        return rng.choice(HINDI)
    if kind == 5:
        return "".join(rng.choice(EMOJI) for _ in range(rng.randint(1, 4)))
    if kind == 6:
        return rng.choice(COMBINING)
    if kind == 7:
        return digits()
    if kind == 8:
        return rng.choice(WHITESPACE)
    if kind == 9:
        return rng.choice(SPECIAL)
    if kind == 10:
        return rng.choice(PUNCT) * rng.randint(1, 3)
    return rng.choice(CONTRACTIONS)


def mixture():
    parts = [piece() for _ in range(rng.randint(2, 8))]
    seps = ["", " ", " ", " ", "\n", "\t", "  "]
    return "".join(p + rng.choice(seps) for p in parts)


def main():
    rows = []

    def add(category, text):
        rows.append({"category": category, "text": text})

    for _ in range(300):
        add("english", prose() + " " + prose())
    for code in CODE:
        add("code", code)
    for _ in range(150):
        add("code", "".join(rng.choice(CODE) for _ in range(rng.randint(1, 3))))
    for group, name in [(CJK, "cjk"), (ARABIC, "arabic"), (HINDI, "hindi"), (EMOJI, "emoji"),
                        (COMBINING, "combining"), (SPECIAL, "special_tokens"), (WHITESPACE, "whitespace")]:
        for item in group:
            add(name, item)
    for _ in range(120):
        add("cjk", "".join(rng.choice(CJK) for _ in range(rng.randint(1, 3))) + rng.choice(["", " ", "abc", "123"]))
    for _ in range(60):
        add("arabic", " ".join(rng.choice(ARABIC) for _ in range(rng.randint(1, 3))))
    for _ in range(60):
        add("hindi", " ".join(rng.choice(HINDI) for _ in range(rng.randint(1, 3))))
    for _ in range(120):
        add("emoji", prose() + " " + "".join(rng.choice(EMOJI) for _ in range(rng.randint(1, 6))))
    for _ in range(80):
        add("combining", " ".join(rng.choice(COMBINING) for _ in range(rng.randint(1, 4))))
    for _ in range(150):
        add("digits", digits())
    for _ in range(150):
        add("whitespace", "".join(rng.choice(WHITESPACE + ["word", "x", "Hello", "。"]) for _ in range(rng.randint(2, 10))))
    for _ in range(200):
        text = prose()
        for _ in range(rng.randint(1, 3)):
            at = rng.randint(0, len(text))
            text = text[:at] + rng.choice(SPECIAL) + text[at:]
        add("special_tokens", text)
    for _ in range(80):
        add("long_word", long_word())
    for _ in range(700):
        add("mixture", mixture())

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tokenizer_corpus.jsonl")
    with open(path, "w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"wrote {len(rows)} strings to {path}")


if __name__ == "__main__":
    main()
