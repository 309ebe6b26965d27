// ATLAS_STATIC(CATEGORY): marks a mutable static as one of the five
// categories that may remain (STATICS.md). Under clang it becomes an
// annotation the atlas-stray-statics check reads; elsewhere it is nothing,
// so gcc builds stay warning-free.
//
// Categories: CUDA_HOST, LOG_ONCE, DIAG_ONCE, CONST_TABLE, LIFECYCLE.
// The declaration must be preceded by a comment, starting on its own line and
// ending on the line directly above, that argues its case.
#ifndef ATLAS_LINT_ATLAS_STATIC_H_
#define ATLAS_LINT_ATLAS_STATIC_H_

#if defined(__clang__)
#define ATLAS_STATIC(CATEGORY) \
  __attribute__((annotate("atlas_static:" #CATEGORY)))
#else
#define ATLAS_STATIC(CATEGORY)
#endif

#endif  // ATLAS_LINT_ATLAS_STATIC_H_
