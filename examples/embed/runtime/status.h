// The embedder's own status type, deliberately at runtime/status.h. If any of
// Atlas's files ever resolved "runtime/status.h" to this one (shadowed
// includes), the build stops here: Atlas's files are compiled without
// EMBED_OWN_CODE.
#ifndef EMBED_RUNTIME_STATUS_H_
#define EMBED_RUNTIME_STATUS_H_

#ifndef EMBED_OWN_CODE
#error \
    "examples/embed/runtime/status.h shadowed Atlas's atlas/runtime/base/status.h"
#endif

typedef enum embed_status { EMBED_OK = 0, EMBED_FAILED = 1 } embed_status;

#endif  // EMBED_RUNTIME_STATUS_H_
