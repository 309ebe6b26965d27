// Checking the struct_size of a versioned options struct the caller passed
// (atlas/atlas.h's convention: fields are only ever appended).
//
// A caller built against an older header passes a shorter struct, one built
// against a newer header a longer one; a wrong or torn struct_size (memory
// overwritten, a struct never initialised) must be refused as
// INVALID_ARGUMENT, never read as half a pointer.
#ifndef ATLAS_RUNTIME_API_STRUCT_SIZE_H_
#define ATLAS_RUNTIME_API_STRUCT_SIZE_H_

#include <stddef.h>

#include "atlas/runtime/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

// One field of a struct, in declaration order.
typedef struct atlas_struct_field {
  size_t offset;
  size_t size;
} atlas_struct_field;

#define ATLAS_STRUCT_FIELD(type, member) \
  { offsetof(type, member), sizeof(((type *)0)->member) }

// The layout of one public struct: its fields in order, and how many of them
// its first version had.
typedef struct atlas_struct_layout {
  const char *name;  // "atlas_open_options"
  const atlas_struct_field *fields;
  size_t field_count;
  size_t first_version_fields;
  size_t current_size;  // sizeof the struct in this build
} atlas_struct_layout;

// Checks `struct_size` (the caller's value) against `layout` and says how
// many bytes of the caller's struct at `src` to read (*out_bytes):
//   - smaller than the first version's fields: refused;
//   - ending inside a field (a torn size): refused;
//   - ending after a field, in the padding before the next one: that field's
//     end (an older header's struct);
//   - larger than the current struct: accepted only when every extra byte is
//     zero (fields a newer header added and this build cannot honour are
//     refused, as the convention promises), then current_size.
// `src` may be NULL for an output struct (no extra bytes are read).
ATLAS_MUST_USE atlas_status
atlas_struct_size_check(const atlas_struct_layout *layout, size_t struct_size,
                        const void *src, size_t *out_bytes);

// The layout of the public struct named `name` ("atlas_open_options"), or
// NULL: the API's own tables (atlas_api.c), for tests.
const atlas_struct_layout *atlas_api_struct_layout(const char *name);

// Defined beside the functions that take the struct (text_api.c,
// report_api.c).
extern const atlas_struct_layout atlas_tokenizer_limits_layout;
extern const atlas_struct_layout atlas_report_options_layout;

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_API_STRUCT_SIZE_H_
