// Reference token ids from @lenml/tokenizers (a port of transformers.js, i.e. of HF tokenizers' pipeline).
//
//   node tokenize_reference.mjs MODEL_DIR CORPUS.jsonl OUT.jsonl
//
// MODEL_DIR holds tokenizer.json and tokenizer_config.json. CORPUS.jsonl has one {"text": ...} per line.
// OUT.jsonl gets one {"with_special": [ids], "without_special": [ids]} per corpus line, in order.
import fs from "node:fs";
import path from "node:path";
import { TokenizerLoader } from "@lenml/tokenizers";

const [modelDir, corpusPath, outPath] = process.argv.slice(2);
if (!modelDir || !corpusPath || !outPath) {
  console.error("usage: node tokenize_reference.mjs MODEL_DIR CORPUS.jsonl OUT.jsonl");
  process.exit(2);
}
const readJson = (name) => JSON.parse(fs.readFileSync(path.join(modelDir, name), "utf8"));
const tokenizer = TokenizerLoader.fromPreTrained({
  tokenizerJSON: readJson("tokenizer.json"),
  tokenizerConfig: readJson("tokenizer_config.json"),
});

const lines = fs.readFileSync(corpusPath, "utf8").split("\n").filter((line) => line.length > 0);
const out = [];
for (const line of lines) {
  const { text } = JSON.parse(line);
  out.push(
    JSON.stringify({
      with_special: tokenizer.encode(text, { add_special_tokens: true }),
      without_special: tokenizer.encode(text, { add_special_tokens: false }),
    })
  );
}
fs.writeFileSync(outPath, out.join("\n") + "\n");
