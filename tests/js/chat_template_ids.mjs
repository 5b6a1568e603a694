// Reference prompt ids for Qwen3 chat prompts, independent of verl.cpp: the ChatML text Qwen3's template
// produces for plain system / user turns with add_generation_prompt=True is written out here by hand
// ("<|im_start|>{role}\n{content}<|im_end|>\n" per turn, then "<|im_start|>assistant\n", plus the empty think
// block when enable_thinking is false), and encoded without special tokens by @lenml/tokenizers (a port of
// transformers.js). (@lenml's bundled Jinja cannot parse Qwen3's template, so the text is not rendered by it.)
//
//   node chat_template_ids.mjs MODEL_DIR IN.jsonl OUT.jsonl
//
// IN.jsonl has one {"messages": [...], "enable_thinking": bool?} per line; OUT.jsonl gets {"text", "ids"}.
import fs from "node:fs";
import path from "node:path";
import { TokenizerLoader } from "@lenml/tokenizers";

const [modelDir, inPath, outPath] = process.argv.slice(2);
if (!modelDir || !inPath || !outPath) {
  console.error("usage: node chat_template_ids.mjs MODEL_DIR IN.jsonl OUT.jsonl");
  process.exit(2);
}
const readJson = (name) => JSON.parse(fs.readFileSync(path.join(modelDir, name), "utf8"));
const tokenizer = TokenizerLoader.fromPreTrained({
  tokenizerJSON: readJson("tokenizer.json"),
  tokenizerConfig: readJson("tokenizer_config.json"),
});

const out = [];
for (const line of fs.readFileSync(inPath, "utf8").split("\n")) {
  if (line.length === 0) continue;
  const { messages, enable_thinking } = JSON.parse(line);
  let text = "";
  for (const m of messages) {
    if (m.role !== "system" && m.role !== "user") throw new Error(`only system/user turns are supported, got ${m.role}`);
    text += `<|im_start|>${m.role}\n${m.content}<|im_end|>\n`;
  }
  text += "<|im_start|>assistant\n";
  if (enable_thinking === false) text += "<think>\n\n</think>\n\n";
  out.push(JSON.stringify({ text, ids: tokenizer.encode(text, { add_special_tokens: false }) }));
}
fs.writeFileSync(outPath, out.join("\n") + "\n");
