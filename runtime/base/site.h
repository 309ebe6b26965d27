// The call site that asked for an allocation, captured by a macro at the call.
#ifndef ATLAS_RUNTIME_SITE_H_
#define ATLAS_RUNTIME_SITE_H_

#ifdef __cplusplus
extern "C" {
#endif

typedef struct atlas_site {
  const char *file;
  int line;
  const char *func;
} atlas_site;

#ifdef __cplusplus
#define ATLAS_SITE (atlas_site{__FILE__, __LINE__, __func__})
#else
#define ATLAS_SITE ((atlas_site){__FILE__, __LINE__, __func__})
#endif

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_SITE_H_
