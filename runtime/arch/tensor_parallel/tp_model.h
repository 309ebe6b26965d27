// A decoder split over N devices (tensor parallelism): N backends, each with
// its own ledger, one decoder rank on each (tp_split.h, decoder_shard.h),
// and one communicator, all owned by the model and released by its unload.
// A step runs every rank on its worker thread, one a rank, started with
// the model (docs/PARALLELISM.md says why); a rank that fails aborts the
// communicator, so the others return instead of waiting, and the model then
// only unloads.
//
// On host backends the N devices are simulated in one process (the
// in-process communicator), which is how CI tests the split; on CUDA the
// communicator is NCCL, and where libnccl.so.2 does not open, N > 1 is
// refused naming it. N = 1 is the plain decoder, with no communicator.
#ifndef ATLAS_RUNTIME_ARCH_TENSOR_PARALLEL_TP_MODEL_H_
#define ATLAS_RUNTIME_ARCH_TENSOR_PARALLEL_TP_MODEL_H_

#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/arch/arch.h"
#include "atlas/runtime/arch/decoder/decoder.h"
#include "atlas/runtime/base/teardown.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct atlas_tp_model atlas_tp_model;

typedef struct atlas_tp_options {
  int ranks;            // N >= 1
  const char *backend;  // "host", "cuda" or "auto" (NULL: "host")
  // N device ordinals (NULL: 0 .. N-1); CUDA only.
  const int *devices;
  // The NCCL library to open (NULL: libnccl.so.2); CUDA with N > 1 only.
  const char *nccl_library;
  // Testing: the fault_at-th operation of fault_kind on rank fault_rank's
  // backend fails (0: none); ignore_env_fault: no backend takes
  // ATLAS_FAULT (a swap's restore).
  int fault_rank;
  atlas_fault_kind fault_kind;
  uint64_t fault_at;
  bool ignore_env_fault;
  // Per rank; `shard` is the model's to set (and a shard never captures
  // its decode step).
  atlas_decoder_load_options load;
} atlas_tp_options;

// Opens the checkpoint directory `dir` (a decoder family's config.json and
// weights) split over options->ranks devices. Refuses a split that does
// not divide, naming the field (tp_split.h). On failure nothing stays
// allocated on any device.
ATLAS_MUST_USE atlas_status atlas_tp_model_open(const char *dir,
                                                const atlas_tp_options *options,
                                                atlas_tp_model **out_model);

// The same from an open checkpoint (read only while this runs: a swap's
// host snapshot) and the config `arch` (a decoder family's row) parsed.
ATLAS_MUST_USE atlas_status atlas_tp_model_open_checkpoint(
    const atlas_checkpoint *ck, const atlas_arch *arch, const void *config,
    const atlas_tp_options *options, atlas_tp_model **out_model);

// The bytes the busiest device of a split over `ranks` will hold (every
// rank's share: weights, KV cache, scratch), as atlas_decoder_required_bytes
// counts one device's: what a budget per device is checked against.
ATLAS_MUST_USE atlas_status atlas_tp_required_bytes(const atlas_checkpoint *ck,
                                                    const atlas_arch *arch,
                                                    const void *config,
                                                    int ranks, int64_t max_seq,
                                                    uint64_t *out_bytes);

int atlas_tp_model_ranks(const atlas_tp_model *m);
// The whole model's config (not a rank's share).
const atlas_decoder_config *atlas_tp_model_config(const atlas_tp_model *m);
// Rank r's backend (for reports and fault injection).
atlas_backend *atlas_tp_model_backend(atlas_tp_model *m, int rank);

// One token at `pos` through every rank, as atlas_decoder_decode_step:
// `out_logits` (may be NULL) receives all vocab_size logits (each rank
// writes its vocabulary rows); `out_token` (may be NULL) the argmax,
// reduced over the ranks (a tie: the lowest id).
ATLAS_MUST_USE atlas_status atlas_tp_model_step(atlas_tp_model *m,
                                                uint32_t token, uint32_t pos,
                                                int64_t seq_len,
                                                float *out_logits,
                                                uint32_t *out_token);

// The batch step over paged KV pools (arch.h's kv_shape, batch_limits and
// forward_batch): one pool per rank, of the rank's KV heads (kv_shape is a
// rank's), every rank's holding a sequence's positions in the same blocks
// (one block table). `pages` holds each rank's pool (b->kv is not read);
// the logits are the whole vocabulary's and the ids the argmax of them.
void atlas_tp_model_kv_shape(const atlas_tp_model *m,
                             atlas_arch_kv_shape *out_shape);
void atlas_tp_model_batch_limits(const atlas_tp_model *m, uint32_t block_tokens,
                                 atlas_arch_batch_limits *out_limits);
ATLAS_MUST_USE atlas_status atlas_tp_model_forward_batch(
    atlas_tp_model *m, const atlas_arch_batch *b,
    const atlas_arch_kv_pages *pages, float *out_logits, uint32_t *out_ids);

// Positions each rank's KV cache holds.
int64_t atlas_tp_model_max_seq(const atlas_tp_model *m);

// Greedy decoding: the prompt in a batched prefill on every rank (token by
// token where the ranks have no prefill scratch: load.prefill_rows < 0),
// then `steps` tokens into out_tokens, each fed back. `sink` (may be NULL) gets
// every step's logits, as atlas_decoder_generate gives them.
ATLAS_MUST_USE atlas_status atlas_tp_model_generate(
    atlas_tp_model *m, const uint32_t *prompt, size_t prompt_len, size_t steps,
    uint32_t *out_tokens, atlas_logits_sink sink, void *sink_ctx);

// As the architecture rows generate (arch.h): `options` (may be NULL:
// greedy, no EOS) may choose each token from its logits, stop at an EOS and
// see each token; *out_count (may be NULL) says how many were written.
ATLAS_MUST_USE atlas_status atlas_tp_model_generate_ex(
    atlas_tp_model *m, const uint32_t *prompt, size_t prompt_len, size_t steps,
    const atlas_arch_generate_options *options, uint32_t *out_tokens,
    size_t *out_count, atlas_logits_sink sink, void *sink_ctx);

// What an unload found on each device.
typedef struct atlas_tp_unload_report {
  int ranks;
  atlas_teardown_report rank[64];
  size_t leaked[64];  // allocations nobody released, by rank
} atlas_tp_unload_report;

// Releases the communicator, then each rank's decoder in rank order (each
// ending with its backend's sweep), then the backends; keeps going past a
// failure and reports every one, naming the rank. `out_report` may be
// NULL; otherwise free it with atlas_tp_unload_report_free.
ATLAS_MUST_USE atlas_status
atlas_tp_model_unload(atlas_tp_model *m, atlas_tp_unload_report *out_report);
void atlas_tp_unload_report_free(atlas_tp_unload_report *report);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_ARCH_TENSOR_PARALLEL_TP_MODEL_H_
