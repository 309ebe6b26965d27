// The Atlas version: macros for the preprocessor, a function for the library
// that was actually linked (the two differ when a binary is built against one
// header and linked against another build).
#ifndef ATLAS_RUNTIME_VERSION_H_
#define ATLAS_RUNTIME_VERSION_H_

#ifdef __cplusplus
extern "C" {
#endif

#define ATLAS_VERSION_MAJOR 0
#define ATLAS_VERSION_MINOR 2
#define ATLAS_VERSION_PATCH 0

#define ATLAS_VERSION_STR_(x) #x
#define ATLAS_VERSION_STR(x) ATLAS_VERSION_STR_(x)
// "0.2.0"
#define ATLAS_VERSION_STRING                                        \
  ATLAS_VERSION_STR(ATLAS_VERSION_MAJOR)                            \
  "." ATLAS_VERSION_STR(ATLAS_VERSION_MINOR) "." ATLAS_VERSION_STR( \
      ATLAS_VERSION_PATCH)

// One number that orders versions: MAJOR * 10000 + MINOR * 100 + PATCH.
#define ATLAS_VERSION_NUMBER                                 \
  (ATLAS_VERSION_MAJOR * 10000 + ATLAS_VERSION_MINOR * 100 + \
   ATLAS_VERSION_PATCH)

// The version of the linked library, "MAJOR.MINOR.PATCH".
const char *atlas_version(void);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_VERSION_H_
