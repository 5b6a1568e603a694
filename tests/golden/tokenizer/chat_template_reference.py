#!/usr/bin/python3
"""Expected chat-template text, rendered with Jinja2 configured as Hugging Face transformers configures it.

Run by the golden test (Debian's /usr/bin/python3 with python3-jinja2):
    chat_template_reference.py CASES.json OUT.json NAME=MODEL_DIR [NAME=MODEL_DIR ...]
MODEL_DIR's template is chat_template.jinja when present, else tokenizer_config.json's "chat_template"; the
special-token variables (bos_token, eos_token, unk_token, pad_token, additional_special_tokens) come from
tokenizer_config.json, as transformers' special_tokens_map. OUT.json maps "case/model/gen0|gen1" to
{"text": ...} or {"error": ...}.

Environment as in transformers.utils.chat_template_utils._compile_jinja_template: ImmutableSandboxedEnvironment
with trim_blocks and lstrip_blocks, the loopcontrols extension and a {% generation %} block, a tojson filter
calling json.dumps(ensure_ascii=False, indent, separators, sort_keys), raise_exception raising
TemplateError, strftime_now; render(messages=, tools=, documents=, add_generation_prompt=, **special_tokens,
**kwargs).
"""
import json
import os
import sys
from datetime import datetime

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment


class GenerationTracker(Extension):
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(format):
    return datetime.now().strftime(format)


def make_environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def token_text(value):
    if isinstance(value, dict):
        return value.get("content")
    return value


def load_model(model_dir):
    with open(os.path.join(model_dir, "tokenizer_config.json"), encoding="utf-8") as f:
        config = json.load(f)
    template_path = os.path.join(model_dir, "chat_template.jinja")
    if os.path.exists(template_path):
        with open(template_path, encoding="utf-8") as f:
            template = f.read()
    else:
        template = config["chat_template"]
    special = {}
    for key in ("bos_token", "eos_token", "unk_token", "pad_token"):
        value = token_text(config.get(key))
        if value is not None:
            special[key] = value
    extra = [token_text(t) for t in config.get("additional_special_tokens") or []]
    if extra:
        special["additional_special_tokens"] = extra
    return template, special


def main():
    cases_path, out_path = sys.argv[1], sys.argv[2]
    models = dict(arg.split("=", 1) for arg in sys.argv[3:])
    with open(cases_path, encoding="utf-8") as f:
        cases = json.load(f)["cases"]
    env = make_environment()
    loaded = {name: load_model(path) for name, path in models.items()}
    out = {}
    for case in cases:
        for model in case["models"]:
            template, special = loaded[model]
            compiled = env.from_string(template)
            for generation in (False, True):
                key = f"{case['name']}/{model}/gen{int(generation)}"
                try:
                    text = compiled.render(messages=case["messages"], tools=case.get("tools"), documents=None,
                                           add_generation_prompt=generation, **special, **case.get("kwargs", {}))
                    out[key] = {"text": text}
                except jinja2.exceptions.TemplateError as error:
                    out[key] = {"error": str(error)}
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
