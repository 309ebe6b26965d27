// Atlas: the public C API (atlas/atlas.h, Bazel target @atlas//:atlas).
//
// Everything an embedder needs: open a Hugging Face checkpoint on a backend,
// generate, read logits, hot-swap to another checkpoint, report memory by
// call site, close. Nothing else in the tree is public.
//
// Conventions
// - Errors: every fallible call returns an `atlas_status` (atlas/runtime/
//   status.h): NULL (ATLAS_OK) on success, else an object with a code and a
//   message a user can act on. The caller owns it: read it with
//   atlas_status_message / atlas_status_code_of, release it with
//   atlas_status_free. Dropping one is a compiler warning, an error under
//   -Werror (ATLAS_MUST_USE: warn_unused_result with gcc and clang).
// - Ownership: handles are opaque; strings and buffers an API returns are the
//   caller's to release with atlas_free. Pointers passed in are copied unless
//   a comment says they must outlive the call.
// - Options structs start with `struct_size`: fill them with the matching
//   *_init function, then set what you need. New fields are appended, so a
//   caller built against an older header keeps working.
// - Threads: one model is used by one thread at a time (generate, swap,
//   report and close on the same model must not overlap). Different models
//   may run on different threads at once: they share no state (no globals;
//   each model owns its backend). Log callbacks run on the calling thread.
// - Logging: each model logs through the sink in its options (a callback
//   and a level); a zeroed sink writes "atlas: ..." lines to stderr.
// - Environment: debugging switches, read when a model's backend is made
//   (atlas_open, atlas_swap), never on a hot path; unset (or empty) leaves
//   the default. ATLAS_REDZONE=BYTES guard bands after (and, rounded up to
//   256, before) every device allocation (default 0: none);
//   ATLAS_DEBUG_SYNC=1 a synchronize after every launch (default 0);
//   ATLAS_FAULT=kind:n fails the n-th operation of a kind (tests; docs/CLI.md,
//   "Fault sweep"). CUDA only: ATLAS_CUBLASLT=0
//   keeps cuBLASLt out (default 1; a path names the library),
//   ATLAS_LAUNCH_OVERLAP=0 launch overlap off (default 1). A malformed
//   value (a switch other than 0 or 1) fails the open, naming the variable.
#ifndef ATLAS_ATLAS_H_
#define ATLAS_ATLAS_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/base/log_sink.h"
#include "atlas/runtime/base/status.h"
#include "atlas/runtime/base/version.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- models ----------------------------------------------------------------

typedef struct atlas_model atlas_model;

typedef struct atlas_open_options {
  size_t struct_size;
  // "auto" (or NULL): CUDA when a device is there, else the host; "host";
  // "cuda". atlas_backend_names lists what this build has.
  const char *backend;
  int device;  // CUDA device ordinal (default 0)
  // Most device bytes this model (and a swap's successor) may hold; 0: all
  // the device has. A swap checks against it.
  uint64_t device_budget_bytes;
  int64_t max_seq;     // KV cache positions; 0: min(config, 2048)
  atlas_log_sink log;  // zeroed: stderr
  // Called as weight bytes land on the device (may be NULL), on the calling
  // thread: done_bytes climbs to total_bytes (what the weights take there,
  // norms as f32), and the last call has done_bytes == total_bytes.
  void (*progress)(void *ctx, uint64_t done_bytes, uint64_t total_bytes);
  void *progress_ctx;
  // Positions the caller will use (prompt + tokens to generate - 1); 0: no
  // check. When set, atlas_open and atlas_swap refuse (INVALID_ARGUMENT,
  // before allocating anything) a checkpoint whose context, config.json's
  // max_position_embeddings, is shorter. max_seq alone may exceed it, except
  // past a model_type llama config's sliding_window, which bounds both (that
  // model attends to every position, as transformers' forward does; past the
  // window transformers' generate parts from it).
  int64_t context_needed;
  // The KV cache's element type: "auto" (or NULL: the weights' type for F16
  // and BF16 models, else f32), "f32", "f16" or "bf16" (any case). A 16-bit
  // cache halves its memory and the bytes attention reads, and is the fast
  // mode: prompts multiply 16-bit activations (docs/CLI.md). "f32" is
  // the faithful mode: CUDA matches the host reference to 1e-5.
  const char *kv_cache_type;
  // One more than the largest token id the caller will feed (its prompt's
  // largest id + 1); 0: no check. When set, atlas_open and atlas_swap refuse
  // (INVALID_ARGUMENT naming the id and the vocabulary size, before
  // allocating anything; a swap's outcome is REFUSED and the old model
  // serves) a checkpoint whose config.json vocab_size is smaller.
  int64_t vocab_needed;
  // Devices to split the model over (tensor parallelism, docs/PARALLELISM.md;
  // 0 or 1: one device). Over 1: a decoder family's checkpoint directory on
  // backend "host" (that many devices simulated in one process) or "cuda"
  // (through NCCL: libnccl.so.2, refused by name where it does not open),
  // on CUDA devices devices[0..tensor_parallel) (NULL: 0, 1, ...). A split
  // that does not divide the heads, KV heads, intermediate size or
  // vocabulary is refused naming the field; device_budget_bytes is then
  // each device's (checked against the busiest device's share). A split
  // model generates,
  // swaps (to the split the swap's options ask for) and reports each
  // device's ledger, and runs the step API (atlas_kv_open: a pool on every
  // device); JSON or SVG reports refuse it (not built yet).
  int tensor_parallel;
  const int *devices;
} atlas_open_options;

// Fills `options` with the defaults above.
void atlas_open_options_init(atlas_open_options *options);

// Comma-separated backend names this build can create ("cuda,host,auto").
const char *atlas_backend_names(void);

// Opens the checkpoint directory `dir` (config.json, model.safetensors or
// model.safetensors.index.json and its shards, as Hugging Face writes them)
// and loads it onto a backend of its own. `options` may be NULL (defaults).
// Errors name the file and key: NOT_FOUND / IO for a file that cannot be
// read; DATA_LOSS for broken weights (a safetensors header or tensor);
// INVALID_ARGUMENT for a config.json that is not valid JSON or holds a bad
// value; UNIMPLEMENTED for an architecture or config feature Atlas does
// not run; RESOURCE_EXHAUSTED (the device budget, named) / OUT_OF_MEMORY
// with the figures. On failure nothing stays allocated and *out_model is
// NULL.
ATLAS_MUST_USE atlas_status atlas_open(const char *dir,
                                       const atlas_open_options *options,
                                       atlas_model **out_model);

// The same from a checkpoint held in memory (config.json text and one
// safetensors file). `name` names it in messages. All three buffers must
// outlive the model.
ATLAS_MUST_USE atlas_status
atlas_open_memory(const char *name, const char *config_json, size_t config_size,
                  const void *safetensors, size_t safetensors_size,
                  const atlas_open_options *options, atlas_model **out_model);

// What close found when it swept the model's backend after the ordered
// teardown: anything in leaked_* was leaked by Atlas (a bug worth
// reporting). refused_* counts what the sweep released after the device had
// refused its free (the status, or an earlier call's, names each refusal):
// held until now, but not leaked.
typedef struct atlas_close_report {
  uint64_t leaked_bytes;
  size_t leaked_allocations;
  size_t released;  // resources the ordered teardown released
  size_t failed;    // ... and those whose release failed (in the status)
  uint64_t refused_bytes;
  size_t refused_allocations;
} atlas_close_report;

// Tears the model down in order and destroys its backend. `model` may be
// NULL. `out_report` may be NULL. Every release failure is reported in the
// status; the model is gone either way.
ATLAS_MUST_USE atlas_status atlas_close(atlas_model *model,
                                        atlas_close_report *out_report);

typedef struct atlas_model_info {
  size_t struct_size;
  const char *name;          // the directory or the in-memory name
  const char *architecture;  // e.g. "llama", "qwen2"
  const char *backend;       // e.g. "host", "cuda:0"
  size_t vocab_size;
  int64_t max_seq;      // positions the KV cache holds
  uint64_t live_bytes;  // bytes the model holds on its backend now
} atlas_model_info;

// Strings in `out_info` live as long as the model (until close or swap).
ATLAS_MUST_USE atlas_status atlas_model_info_get(const atlas_model *model,
                                                 atlas_model_info *out_info);

// ---- text: tokenizer -----------------------------------------------------------
//
// A Hugging Face tokenizer.json (BPE, byte-level or SentencePiece-style),
// encoding and decoding exactly like the Rust `tokenizers` library; anything
// it does not implement is refused by name when loading. A tokenizer is
// independent of any model. Threads: a handle may be shared; encode takes a
// lock on the handle's cache, decode is read-only.
// (These declarations are those of runtime/text/tokenizer.h, repeated.)

typedef struct atlas_tokenizer atlas_tokenizer;

// Loads tokenizer.json from `path` (a regular file: a FIFO, device or folder
// is refused by kind, never waited on). Errors: NOT_FOUND/IO naming the file;
// INVALID_ARGUMENT / DATA_LOSS naming the key of what is malformed or not
// supported. Release with atlas_tokenizer_free.
ATLAS_MUST_USE atlas_status
atlas_tokenizer_load(const char *path, atlas_tokenizer **out_tokenizer);
void atlas_tokenizer_free(atlas_tokenizer *tokenizer);

// The tokenizer a GGUF file (llama.cpp's format) carries in its
// tokenizer.ggml.* metadata: byte-level BPE ("gpt2" with pre-tokenizer
// "llama-bpe" or "qwen2") or SentencePiece BPE ("llama"), its added tokens
// and whether it adds BOS/EOS. Another model or pre-tokenizer is refused
// naming the key. Release with atlas_tokenizer_free.
ATLAS_MUST_USE atlas_status atlas_tokenizer_load_gguf(
    const char *gguf_path, atlas_tokenizer **out_tokenizer);

// Encodes `len` bytes of UTF-8 `text` (invalid UTF-8 is refused with its
// byte offset). `add_special` applies the tokenizer's post-processor (BOS and
// the like), as tokenizers' add_special_tokens. *out_ids (possibly empty) is
// the caller's: release it with atlas_free.
ATLAS_MUST_USE atlas_status atlas_tokenizer_encode(atlas_tokenizer *tokenizer,
                                                   const char *text, size_t len,
                                                   bool add_special,
                                                   uint32_t **out_ids,
                                                   size_t *out_count);

// Decodes ids to UTF-8 text as tokenizers' decode does (unknown ids are
// skipped; `skip_special` drops added tokens marked special). *out_text is
// NUL-terminated and the caller's (atlas_free); *out_len its length.
// This is transformers 5's tokenizer.decode(ids, skip_special_tokens=...)
// whatever tokenizer_config.json's clean_up_tokenization_spaces says:
// transformers 5 ignores that flag for BPE models, which every tokenizer
// Atlas loads is. For transformers 4's decode of a model whose config sets
// it (Llama 3 does), pass the text through atlas_tokenizer_clean_up.
ATLAS_MUST_USE atlas_status atlas_tokenizer_decode(
    const atlas_tokenizer *tokenizer, const uint32_t *ids, size_t count,
    bool skip_special, char **out_text, size_t *out_len);

// transformers' clean_up_tokenization, what clean_up_tokenization_spaces
// asked transformers 4 to do to every decode (transformers 5 does it for BPE
// only with clean_up_tokenization_spaces_for_bpe_even_though_it_will_
// corrupt_output): " ." -> ".", " ?" -> "?", " !" -> "!", " ," -> ",",
// " ' " -> "'", " n't" -> "n't", " 'm" -> "'m", " 's" -> "'s",
// " 've" -> "'ve", " 're" -> "'re", each over the whole text, in that order.
// It removes spaces the text really had ("a ." -> "a."). *out_text is
// NUL-terminated and the caller's (atlas_free).
ATLAS_MUST_USE atlas_status atlas_tokenizer_clean_up(const char *text,
                                                     size_t len,
                                                     char **out_text,
                                                     size_t *out_len);

// One more than the largest id the tokenizer knows.
size_t atlas_tokenizer_vocab_size(const atlas_tokenizer *tokenizer);

// What one encode may spend. Text or a tokenizer.json asking for more is
// refused with RESOURCE_EXHAUSTED naming the limit: never a hang or
// gigabytes of memory. The defaults (atlas_tokenizer_limits_init) suit a
// server; raise them for a trusted tokenizer and text.
typedef struct atlas_tokenizer_limits {
  size_t struct_size;
  uint64_t max_input_bytes;       // text one encode takes; default 256 MiB
  uint64_t max_word_bytes;        // one word after pre-tokenization (BPE merges
                                  // it whole: about 30 bytes of memory a byte,
                                  // time above linear); default 1 MiB
  uint32_t regex_match_limit;     // PCRE2's match limit per search of a
                                  // tokenizer.json regex; default 1000000
  uint32_t regex_depth_limit;     // PCRE2's depth limit; default 10000
  uint32_t max_normalize_growth;  // the normalizer may make this times the
                                  // input plus 64 KiB; default 16
} atlas_tokenizer_limits;

void atlas_tokenizer_limits_init(atlas_tokenizer_limits *limits);

// Sets the limits of every later encode with `tokenizer` (not while another
// thread encodes with it). INVALID_ARGUMENT for a 0 or a torn struct_size.
ATLAS_MUST_USE atlas_status atlas_tokenizer_set_limits(
    atlas_tokenizer *tokenizer, const atlas_tokenizer_limits *limits);

// ---- text: chat templates -----------------------------------------------------
//
// The Jinja chat template of a model's tokenizer_config.json, rendered as
// transformers' apply_chat_template(tokenize=False) does; a template
// construct Atlas does not implement is refused by name, line and column.
// A template is read-only after loading: threads may share it.
// (atlas_chat_template_load/free are those of runtime/chat/chat_template.h.)

typedef struct atlas_chat_template atlas_chat_template;

// Reads tokenizer_config.json's chat_template (a string, or the "default"
// of a list) and its bos_token/eos_token. Errors name the file and key; a
// FIFO, device or folder is refused by kind, never waited on.
ATLAS_MUST_USE atlas_status atlas_chat_template_load(
    const char *tokenizer_config_path, atlas_chat_template **out_template);
// A GGUF file's tokenizer.chat_template, with its BOS and EOS token texts.
ATLAS_MUST_USE atlas_status atlas_chat_template_load_gguf(
    const char *gguf_path, atlas_chat_template **out_template);
void atlas_chat_template_free(atlas_chat_template *tmpl);

typedef struct atlas_chat_message {
  const char *role;     // "system", "user", "assistant", ...
  const char *content;  // UTF-8
} atlas_chat_message;

// Renders `messages` into prompt text (encode it without special tokens:
// the template writes them). `add_generation_prompt` appends the start of
// the assistant's turn. *out_text is NUL-terminated, the caller's
// (atlas_free). A template's raise_exception comes back as INVALID_ARGUMENT.
ATLAS_MUST_USE atlas_status atlas_chat_template_apply(
    const atlas_chat_template *tmpl, const atlas_chat_message *messages,
    size_t count, bool add_generation_prompt, char **out_text);

// What one render of a template may spend. A template (or messages) asking
// for more is refused with RESOURCE_EXHAUSTED naming the limit and the
// template's line and column: never a hang, an exhausted stack or gigabytes
// of memory. The defaults (atlas_chat_limits_init) suit a server and are far
// above what real templates use.
typedef struct atlas_chat_limits {
  size_t struct_size;
  uint64_t max_steps;         // evaluations (plus one per item or 64 bytes a
                              // filter walks or builds); default 4000000
  uint64_t max_output_bytes;  // rendered text; default 16 MiB, at most 64 MiB
  uint64_t max_string_bytes;  // any one string built; default 16 MiB, <= 64 MiB
  uint32_t max_depth;  // nesting of evaluation and of values; default 256,
                       // at most 4096
} atlas_chat_limits;

void atlas_chat_limits_init(atlas_chat_limits *limits);

// Sets the limits every later render of `tmpl` uses (not while another thread
// renders it). INVALID_ARGUMENT for a 0 or a value above its ceiling.
ATLAS_MUST_USE atlas_status atlas_chat_template_set_limits(
    atlas_chat_template *tmpl, const atlas_chat_limits *limits);

// ---- generation --------------------------------------------------------------

typedef struct atlas_generate_options {
  size_t struct_size;
  size_t max_new_tokens;  // default 16
  // Default false: stop after an EOS id (generation_config.json's
  // eos_token_id where that file exists, none if it names none; else
  // config.json's), as transformers' generate() does.
  bool ignore_eos;
  // Called with the logits of every forward step (prompt tokens included;
  // the last generated token is never fed back). May be NULL. A non-OK
  // status stops generation and is returned.
  atlas_status (*on_logits)(void *ctx, const float *logits, size_t vocab_size);
  // Called with each token written to out_tokens as it is chosen (the EOS
  // and the stop string's tokens that end generation included). May be
  // NULL. Return false to stop after this token.
  bool (*on_token)(void *ctx, uint32_t token);
  void *ctx;
  // Sampling, as transformers defines each option and in its order
  // (repetition penalty, temperature, top-k, top-p, min-p), drawn with a
  // PRNG of this call's own: the same seed gives the same tokens.
  float temperature;         // default 0: greedy (the first largest logit)
  int32_t top_k;             // default 0: off
  float top_p;               // default 1: off; in (0, 1]
  float min_p;               // default 0: off; in [0, 1]
  float repetition_penalty;  // default 1: off; > 0; applies to greedy too
  uint64_t seed;             // default 0
  // Text. With a tokenizer, on_text (may be NULL) receives the generated
  // text as it grows: whole UTF-8 characters only, special tokens left out.
  // A stop string ends generation; it and anything after it are never
  // passed on, and text that might begin one is held back until known.
  // A character still incomplete when generation ends (the model stopped
  // inside a multi-byte sequence) is not passed on. Where a byte-fallback
  // model's stray byte turns text already passed on into U+FFFD, the text
  // goes on past as many characters (vLLM's rule) instead of failing, as
  // tokenizers' DecodeStream would. Return false from on_text to stop. The
  // tokenizer must outlive the call.
  const atlas_tokenizer *tokenizer;
  bool (*on_text)(void *ctx, const char *text, size_t len);
  const char *const *stop_strings;  // non-empty UTF-8; NULL if stop_count 0
  size_t stop_count;
} atlas_generate_options;

void atlas_generate_options_init(atlas_generate_options *options);

// Generation: runs the prompt, then up to max_new_tokens new tokens (greedy
// unless the options sample), written to `out_tokens` (room for
// max_new_tokens); *out_count says how many (a stop string's tokens
// included; on failure, those chosen before it, which on_token saw).
// Errors: INVALID_ARGUMENT for an empty prompt, an id outside the
// vocabulary, a sequence longer than max_seq, a sampling option out of range
// (named) or stop strings without a tokenizer (checked before any work).
ATLAS_MUST_USE atlas_status
atlas_generate(atlas_model *model, const uint32_t *prompt, size_t prompt_len,
               const atlas_generate_options *options, uint32_t *out_tokens,
               size_t *out_count);

// ---- sequences and the batch step ------------------------------------------------
//
// Many sequences on one model (llama.h's context and batch split, as one
// model handle): each sequence owns its KV blocks, from one pool of
// fixed-size blocks per model, and its position. One call runs ONE forward
// over any mix of sequences, each with a chunk of new tokens (a prompt
// chunk or the token it generated last), and returns each one's last row's
// logits and/or the argmax computed on the device. Sampling, stop strings
// and text stay with the caller (atlas_generate does them for one
// sequence; runtime/serve's scheduler for many).
//
// Threads: as the model (one thread at a time). The pool and every sequence
// go when the model closes; atlas_swap is refused while the pool exists
// (free it with atlas_kv_close).

typedef struct atlas_seq atlas_seq;

typedef struct atlas_kv_options {
  size_t struct_size;
  // Bytes of the pool; 0: what fits beside the weights (CUDA: the free
  // device memory within the model's device budget, less a margin; host:
  // 8 sequences of max_seq positions).
  uint64_t budget_bytes;
  uint32_t block_tokens;  // positions a block (default 16)
  // Full blocks of a prompt stay keyed by their tokens and everything
  // before them, for atlas_seq_reuse_prefix (default true).
  bool prefix_cache;
} atlas_kv_options;

void atlas_kv_options_init(atlas_kv_options *options);

// Makes the model's pool (one ledgered allocation, shown by atlas_report).
// FAILED_PRECONDITION when it exists already; RESOURCE_EXHAUSTED when the
// budget holds less than one sequence of max_seq positions; UNIMPLEMENTED
// for a model without a batch step. atlas_seq_create makes it with the
// defaults when none exists.
ATLAS_MUST_USE atlas_status atlas_kv_open(atlas_model *model,
                                          const atlas_kv_options *options);
// Frees the pool and every sequence still alive (their handles go).
ATLAS_MUST_USE atlas_status atlas_kv_close(atlas_model *model);

typedef struct atlas_kv_stats {
  size_t struct_size;
  size_t blocks_total, blocks_used, blocks_cached, blocks_free;
  size_t block_tokens;
  uint64_t bytes;
  size_t sequences;  // alive
} atlas_kv_stats;

ATLAS_MUST_USE atlas_status atlas_kv_stats_get(atlas_model *model,
                                               atlas_kv_stats *out_stats);

ATLAS_MUST_USE atlas_status atlas_seq_create(atlas_model *model,
                                             atlas_seq **out_seq);
// A new sequence with the parent's tokens, sharing its blocks (a block is
// copied when either writes into it).
ATLAS_MUST_USE atlas_status atlas_seq_fork(atlas_model *model,
                                           const atlas_seq *parent,
                                           atlas_seq **out_seq);
// Gives its blocks back (NULL: no-op); others keep running.
void atlas_seq_free(atlas_model *model, atlas_seq *seq);
// Positions computed so far.
size_t atlas_seq_length(const atlas_seq *seq);
// For an empty sequence about to take `prompt`: the longest run of its
// full blocks the prefix cache holds becomes the sequence's (at least one
// token is left to run). *out_reused: positions now computed; feed
// prompt + *out_reused next.
ATLAS_MUST_USE atlas_status atlas_seq_reuse_prefix(atlas_model *model,
                                                   atlas_seq *seq,
                                                   const uint32_t *prompt,
                                                   size_t prompt_len,
                                                   size_t *out_reused);

typedef struct atlas_batch_entry {
  atlas_seq *seq;
  const uint32_t *tokens;  // positions length .. length + count - 1
  size_t count;            // > 0
  float *logits;           // vocab_size floats of its last row (or NULL)
  uint32_t *argmax;        // its last row's first largest logit (or NULL)
} atlas_batch_entry;

// One forward over the entries (distinct sequences). Errors:
// INVALID_ARGUMENT (an id outside the vocabulary, past max_seq positions,
// more tokens or sequences than one step takes, a sequence twice);
// RESOURCE_EXHAUSTED when the pool cannot hold the new positions (nothing
// runs, no block is taken: free or wait for a sequence and call again).
// When the forward fails, no sequence grows.
ATLAS_MUST_USE atlas_status atlas_decode(atlas_model *model,
                                         atlas_batch_entry *entries,
                                         size_t count);

// ---- hot swap ----------------------------------------------------------------

typedef enum atlas_swap_outcome {
  ATLAS_SWAP_OUTCOME_SWAPPED = 0,  // the new model is serving
  ATLAS_SWAP_OUTCOME_REFUSED,      // refused up front; the old model serves
  ATLAS_SWAP_OUTCOME_RESTORED,     // the new one failed; the old one serves
  ATLAS_SWAP_OUTCOME_LOST,         // the new one failed and so did the restore
  // The new one failed while loading beside the old one (side_by_side),
  // which was never unloaded and serves.
  ATLAS_SWAP_OUTCOME_KEPT,
} atlas_swap_outcome;

typedef struct atlas_swap_info {
  atlas_swap_outcome outcome;
  bool side_by_side;          // both fitted: the old one stayed until the end
  uint64_t needed_bytes;      // what the new model needs
  uint64_t free_bytes;        // free on the device before the swap
  uint64_t releasable_bytes;  // what the old model held
  double teardown_ms, load_ms, total_ms;
} atlas_swap_info;

// Replaces *model with a model opened from `dir` (options as for
// atlas_open; NULL: the current model's). On success *model is the new
// model and the old handle is gone. On failure the status says what failed
// and `out_info->outcome` which model serves: *model is then the old model
// (REFUSED, RESTORED, KEPT) or NULL (LOST). REFUSED with needed_bytes 0
// means the new checkpoint could not be read or sized. `out_info` may be
// NULL.
ATLAS_MUST_USE atlas_status atlas_swap(atlas_model **model, const char *dir,
                                       const atlas_open_options *options,
                                       atlas_swap_info *out_info);

// The same to a checkpoint held in memory (as atlas_open_memory: the
// buffers must outlive the new model).
ATLAS_MUST_USE atlas_status atlas_swap_memory(
    atlas_model **model, const char *name, const char *config_json,
    size_t config_size, const void *safetensors, size_t safetensors_size,
    const atlas_open_options *options, atlas_swap_info *out_info);

// ---- memory report -------------------------------------------------------------

typedef enum atlas_report_format {
  ATLAS_REPORT_TEXT = 0,
  ATLAS_REPORT_JSON,
  ATLAS_REPORT_SVG,
} atlas_report_format;

typedef struct atlas_report_options {
  size_t struct_size;
  size_t top;     // at most this many call sites (0: all)
  double min_mb;  // only sites holding at least this many MB (1e6 bytes;
                  // >= 0, finite); the rest fold into one row
} atlas_report_options;

void atlas_report_options_init(atlas_report_options *options);

// The model's live device (or host) memory grouped by allocation call site,
// largest first, as text, JSON or an SVG chart. With a KV pool
// (atlas_kv_open), the text ends with a line counting its blocks used,
// cached and free. *out_text is NUL-terminated;
// release it with atlas_free.
ATLAS_MUST_USE atlas_status atlas_report(const atlas_model *model,
                                         atlas_report_format format,
                                         const atlas_report_options *options,
                                         char **out_text);

// Releases memory the API returned: report text, token ids, decoded and
// rendered text. NULL is a no-op.
void atlas_free(void *ptr);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_ATLAS_H_
