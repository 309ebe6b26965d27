// Status: what failed and why, in words a user can act on.
//
// A status is a heap object or NULL; NULL means success (as in IREE), so the
// success path never allocates. Statuses can be joined: a teardown that sees
// three failures returns one status naming all three.
#ifndef ATLAS_RUNTIME_STATUS_H_
#define ATLAS_RUNTIME_STATUS_H_

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum atlas_status_code {
  ATLAS_STATUS_OK = 0,
  ATLAS_STATUS_INVALID_ARGUMENT,     // the caller passed something wrong
  ATLAS_STATUS_NOT_FOUND,            // a named thing does not exist
  ATLAS_STATUS_OUT_OF_MEMORY,        // host or device memory exhausted
  ATLAS_STATUS_UNAVAILABLE,          // a driver or device is missing
  ATLAS_STATUS_UNIMPLEMENTED,        // an optional operation this backend lacks
  ATLAS_STATUS_FAILED_PRECONDITION,  // the object is in the wrong state
  ATLAS_STATUS_DATA_LOSS,  // a file or buffer is malformed or corrupted
  ATLAS_STATUS_IO,         // the operating system refused a file operation
  ATLAS_STATUS_INTERNAL,   // a driver call failed unexpectedly
  ATLAS_STATUS_RESOURCE_EXHAUSTED,  // a budget (not the allocator) says no
  ATLAS_STATUS_ABORTED,  // an injected fault or a cancelled operation
} atlas_status_code;

typedef struct atlas_status_s *atlas_status;

#define ATLAS_OK ((atlas_status)NULL)

// On every function that returns a status: dropping one is a compile error
// under -Werror (a failure nobody reads is a failure nobody reports).
#if defined(__GNUC__) || defined(__clang__)
#define ATLAS_MUST_USE __attribute__((warn_unused_result))
#define ATLAS_PRINTF_LIKE(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define ATLAS_MUST_USE
#define ATLAS_PRINTF_LIKE(fmt, args)
#endif

// Makes a status with a printf-style message, recording the file and line
// that made it (atlas_status_make captures them). Never returns NULL for a
// non-OK code: if the message cannot be allocated a fixed out-of-memory
// status is returned instead.
ATLAS_MUST_USE atlas_status atlas_status_make_at(const char *file, int line,
                                                 atlas_status_code code,
                                                 const char *fmt, ...)
    ATLAS_PRINTF_LIKE(4, 5);
#define atlas_status_make(code, ...) \
  atlas_status_make_at(__FILE__, __LINE__, (code), __VA_ARGS__)

// Prefixes context to a status ("loading model.safetensors: ..."). Takes
// ownership of `status`; passing OK returns OK.
ATLAS_MUST_USE atlas_status atlas_status_annotate(atlas_status status,
                                                  const char *fmt, ...)
    ATLAS_PRINTF_LIKE(2, 3);

// Joins two statuses into one that reports both (first code wins). Takes
// ownership of both; either may be OK.
ATLAS_MUST_USE atlas_status atlas_status_join(atlas_status first,
                                              atlas_status second);

atlas_status_code atlas_status_code_of(atlas_status status);
// The message ("" for OK). Owned by the status.
const char *atlas_status_message(atlas_status status);
// How many failures were joined into this status (0 for OK).
size_t atlas_status_count(atlas_status status);
const char *atlas_status_code_name(atlas_status_code code);
// Where the first failure was made ("" and 0 for OK). Annotating and joining
// keep it: it names the line that found the problem, not the callers.
const char *atlas_status_file(atlas_status status);
int atlas_status_line(atlas_status status);
void atlas_status_free(atlas_status status);

static inline bool atlas_status_is_ok(atlas_status status) {
  return status == ATLAS_OK;
}

// Frees the status and returns its code: for callers that only branch on it.
atlas_status_code atlas_status_consume(atlas_status status);

#if defined(__clang_analyzer__) && !defined(ATLAS_STATUS_IMPLEMENTATION_)
// A model of the status contract for clang-tidy's static analyzer
// (//lint:clang_tidy_test), which cannot see across files that a made status
// is never OK (NULL), that annotating keeps OK-ness, and that a join fails
// when either side failed. Without it, it follows "failed, yet OK" paths into
// false null dereferences and uses after free. Never compiled into a build.
#undef atlas_status_make
#define atlas_status_make(...)                                 \
  __extension__({                                              \
    atlas_status atlas_model_r_ =                              \
        atlas_status_make_at(__FILE__, __LINE__, __VA_ARGS__); \
    if (atlas_model_r_ == ATLAS_OK) __builtin_unreachable();   \
    atlas_model_r_;                                            \
  })
#define atlas_status_annotate(status, ...)                            \
  __extension__({                                                     \
    atlas_status atlas_model_s_ = (status);                           \
    atlas_status atlas_model_r_ =                                     \
        (atlas_status_annotate)(atlas_model_s_, __VA_ARGS__);         \
    if ((atlas_model_s_ == ATLAS_OK) != (atlas_model_r_ == ATLAS_OK)) \
      __builtin_unreachable();                                        \
    atlas_model_r_;                                                   \
  })
#define atlas_status_join(first, second)                              \
  __extension__({                                                     \
    atlas_status atlas_model_a_ = (first);                            \
    atlas_status atlas_model_b_ = (second);                           \
    atlas_status atlas_model_r_ =                                     \
        (atlas_status_join)(atlas_model_a_, atlas_model_b_);          \
    if ((atlas_model_a_ == ATLAS_OK && atlas_model_b_ == ATLAS_OK) != \
        (atlas_model_r_ == ATLAS_OK))                                 \
      __builtin_unreachable();                                        \
    atlas_model_r_;                                                   \
  })
#endif

// ATLAS_RETURN_IF_ERROR(expr) returns a failed status as it is;
// ATLAS_RETURN_IF_ERROR(expr, "loading %s", path) adds that context first.
#define ATLAS_RETURN_IF_ERROR(...)                                             \
  ATLAS_RIE_PICK_(__VA_ARGS__, ATLAS_RIE_CTX_, ATLAS_RIE_CTX_, ATLAS_RIE_CTX_, \
                  ATLAS_RIE_CTX_, ATLAS_RIE_CTX_, ATLAS_RIE_CTX_,              \
                  ATLAS_RIE_CTX_, ATLAS_RIE_CTX_, ATLAS_RIE_CTX_,              \
                  ATLAS_RIE_PLAIN_, ATLAS_RIE_NONE_)                           \
  (__VA_ARGS__)
#define ATLAS_RIE_PICK_(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, name, ...) name
#define ATLAS_RIE_PLAIN_(expr)               \
  do {                                       \
    atlas_status atlas_status_tmp_ = (expr); \
    if (atlas_status_tmp_ != ATLAS_OK) {     \
      return atlas_status_tmp_;              \
    }                                        \
  } while (0)
#define ATLAS_RIE_CTX_(expr, ...)                                   \
  do {                                                              \
    atlas_status atlas_status_tmp_ = (expr);                        \
    if (atlas_status_tmp_ != ATLAS_OK) {                            \
      return atlas_status_annotate(atlas_status_tmp_, __VA_ARGS__); \
    }                                                               \
  } while (0)

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_STATUS_H_
