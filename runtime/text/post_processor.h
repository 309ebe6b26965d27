// Post-processors of tokenizer.json for one sequence: TemplateProcessing
// (how BOS/EOS are added), ByteLevel (ids unchanged), BertProcessing,
// RobertaProcessing, and Sequence of them. Anything else is refused by name.
#ifndef ATLAS_RUNTIME_TEXT_POST_PROCESSOR_H_
#define ATLAS_RUNTIME_TEXT_POST_PROCESSOR_H_

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/text/bpe.h"
#include "atlas/runtime/text/json_util.h"

typedef enum atlas_post_processor_kind {
  ATLAS_POST_TEMPLATE,
  ATLAS_POST_BYTE_LEVEL,
  ATLAS_POST_SEQUENCE,
} atlas_post_processor_kind;

// One item of the "single" template: the input sequence (ids == NULL) or a
// special token's ids.
typedef struct atlas_template_item {
  uint32_t *ids;
  size_t count;
} atlas_template_item;

typedef struct atlas_post_processor {
  atlas_post_processor_kind kind;
  atlas_template_item *items;
  size_t item_count;
  struct atlas_post_processor **children;
  size_t child_count;
} atlas_post_processor;

ATLAS_MUST_USE atlas_status atlas_post_processor_load(
    json_t *v, const atlas_tj_at *at, atlas_post_processor **out);
// Rewrites ids[first..] in place: with add_special, per the processor.
ATLAS_MUST_USE atlas_status
atlas_post_processor_run(const atlas_post_processor *p, bool add_special,
                         atlas_id_buf *ids, size_t first);
void atlas_post_processor_free(atlas_post_processor *p);

#endif  // ATLAS_RUNTIME_TEXT_POST_PROCESSOR_H_
