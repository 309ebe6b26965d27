#!/usr/bin/env node
// Development reference from the Rust `tokenizers` library through its Node
// bindings (npm `tokenizers`, prebuilt): the same ids and plain decodes as
// gen_reference.py, which made the committed expected.json on the H200 with
// Python tokenizers and transformers 5. Its clean columns differ: with
// :clean it applies transformers 4's clean_up_tokenization, which
// transformers 5 skips for BPE models; see tests/text/README.md.
//
// node gen_reference_node.js --corpus corpus.json --out expected.json \
//     llama3=/path/tokenizer.json qwen3=... llama2=...
// Each NAME=PATH may be followed by :clean (clean_up_tokenization_spaces).
"use strict";
const fs = require("fs");
const crypto = require("crypto");
const { Tokenizer } = require("tokenizers");

function cleanUp(s) {  // transformers' clean_up_tokenization
  return s.split(" .").join(".").split(" ?").join("?").split(" !").join("!")
      .split(" ,").join(",").split(" ' ").join("'").split(" n't").join("n't")
      .split(" 'm").join("'m").split(" 's").join("'s").split(" 've").join("'ve")
      .split(" 're").join("'re");
}

function sha256(path) {
  return crypto.createHash("sha256").update(fs.readFileSync(path)).digest("hex");
}

(async () => {
  const args = process.argv.slice(2);
  let corpusPath, outPath;
  const models = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === "--corpus") corpusPath = args[++i];
    else if (args[i] === "--out") outPath = args[++i];
    else {
      const eq = args[i].indexOf("=");
      let path = args[i].slice(eq + 1);
      let clean = false;
      if (path.endsWith(":clean")) { clean = true; path = path.slice(0, -6); }
      models.push({ name: args[i].slice(0, eq), path, clean });
    }
  }
  const corpus = JSON.parse(fs.readFileSync(corpusPath, "utf8"));
  const pkg = require("tokenizers/package.json");
  const out = {
    oracle: `tokenizers (Rust) via npm tokenizers ${pkg.version} (Node bindings)`,
    corpus_sha256: sha256(corpusPath),
    models: {},
  };
  for (const m of models) {
    const tok = Tokenizer.fromFile(m.path);
    const cases = [];
    for (const text of corpus) {
      const enc = await tok.encode(text, null, { addSpecialTokens: true });
      const plain = await tok.encode(text, null, { addSpecialTokens: false });
      const ids = Array.from(enc.getIds());
      const keep = await tok.decode(ids, false);
      const skip = await tok.decode(ids, true);
      cases.push({
        ids, ids_no_special: Array.from(plain.getIds()),
        decode: keep, decode_skip: skip,
        decode_clean: m.clean ? cleanUp(keep) : keep,
        decode_skip_clean: m.clean ? cleanUp(skip) : skip,
      });
    }
    out.models[m.name] = {
      tokenizer_sha256: sha256(m.path),
      clean_up_tokenization_spaces: m.clean,
      cases,
    };
  }
  fs.writeFileSync(outPath, JSON.stringify(out) + "\n");
})();
