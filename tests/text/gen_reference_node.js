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
//
// The output is written case by case, never built as one string: its size is
// bounded by the disk, not by the longest string V8 makes (about 512 MB;
// past it JSON.stringify of the whole reference threw "RangeError: Invalid
// string length"). The bytes are those JSON.stringify(whole) + "\n" gave.
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

// Appends to a file through a small buffer; every write is synchronous and
// complete (a partial write is continued, EAGAIN from a non-blocking pipe
// waited out), so memory stays bounded whatever the output's size.
class Output {
  constructor(path) {
    this.fd = fs.openSync(path, "w");
    this.parts = [];
    this.chars = 0;
  }
  write(s) {
    this.parts.push(s);
    this.chars += s.length;
    if (this.chars >= 1 << 20) this.flush();
  }
  flush() {
    const buf = Buffer.from(this.parts.join(""), "utf8");
    this.parts = [];
    this.chars = 0;
    for (let off = 0; off < buf.length;) {
      try {
        off += fs.writeSync(this.fd, buf, off, buf.length - off);
      } catch (e) {
        if (e.code !== "EAGAIN") throw e;
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
      }
    }
  }
  close() {
    this.flush();
    fs.closeSync(this.fd);
  }
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
  const names = new Set();
  for (const m of models) {
    if (names.has(m.name)) throw new Error(`model ${m.name} named twice`);
    names.add(m.name);
  }
  const corpus = JSON.parse(fs.readFileSync(corpusPath, "utf8"));
  const pkg = require("tokenizers/package.json");
  const out = new Output(outPath);
  // {"oracle":..., "corpus_sha256":..., "models":{NAME:{..., "cases":[...]}}}
  out.write(`{"oracle":${JSON.stringify(
      `tokenizers (Rust) via npm tokenizers ${pkg.version} (Node bindings)`)}`);
  out.write(`,"corpus_sha256":${JSON.stringify(sha256(corpusPath))},"models":{`);
  for (let i = 0; i < models.length; i++) {
    const m = models[i];
    const tok = Tokenizer.fromFile(m.path);
    out.write(`${i ? "," : ""}${JSON.stringify(m.name)}:{"tokenizer_sha256":` +
              `${JSON.stringify(sha256(m.path))},"clean_up_tokenization_spaces":` +
              `${JSON.stringify(m.clean)},"cases":[`);
    for (let c = 0; c < corpus.length; c++) {
      const text = corpus[c];
      const enc = await tok.encode(text, null, { addSpecialTokens: true });
      const plain = await tok.encode(text, null, { addSpecialTokens: false });
      const ids = Array.from(enc.getIds());
      const keep = await tok.decode(ids, false);
      const skip = await tok.decode(ids, true);
      out.write((c ? "," : "") + JSON.stringify({
        ids, ids_no_special: Array.from(plain.getIds()),
        decode: keep, decode_skip: skip,
        decode_clean: m.clean ? cleanUp(keep) : keep,
        decode_skip_clean: m.clean ? cleanUp(skip) : skip,
      }));
    }
    out.write("]}");
  }
  out.write("}}\n");
  out.close();
})();
