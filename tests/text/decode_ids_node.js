#!/usr/bin/env node
// Decodes of arbitrary id sequences (fuzz_ids.py) by the Rust `tokenizers`
// library through its Node bindings (npm tokenizers@0.23.2): the local
// oracle of tools/fuzz/fuzz_tokenizer.sh --ids. The Node bindings have no
// DecodeStream, so the stream columns come only from gen_decode_ids.py
// (Python tokenizers, run on the H200 for the committed decode_ids.json).
//
// node decode_ids_node.js --ids IDS.json --out OUT.json NAME=PATH ...
"use strict";
const fs = require("fs");
const crypto = require("crypto");
const { Tokenizer } = require("tokenizers");

(async () => {
  const args = process.argv.slice(2);
  let idsPath, outPath;
  const models = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === "--ids") idsPath = args[++i];
    else if (args[i] === "--out") outPath = args[++i];
    else models.push(args[i].split(/=(.*)/s).slice(0, 2));
  }
  const sequences = JSON.parse(fs.readFileSync(idsPath, "utf8"));
  const pkg = require("tokenizers/package.json");
  const out = { oracle: `tokenizers (Rust) via npm tokenizers ${pkg.version}`, models: {} };
  for (const [name, path] of models) {
    const tok = Tokenizer.fromFile(path);
    const cases = [];
    for (const ids of sequences[name]) {
      cases.push({ ids, decode: await tok.decode(ids, false), decode_skip: await tok.decode(ids, true) });
    }
    out.models[name] = {
      tokenizer_sha256: crypto.createHash("sha256").update(fs.readFileSync(path)).digest("hex"),
      cases,
    };
  }
  fs.writeFileSync(outPath, JSON.stringify(out) + "\n");
})();
