#include "atlas/kernels/images_report.h"

#include <string.h>

#include "atlas/kernels/fatbin_info.h"
#include "atlas/kernels/nvcc_info.h"

enum { kMaxEntries = 64 };

// The newest PTX ISA among the images, which the driver must know to JIT.
static void newest_ptx(const atlas_module_set *set, uint32_t *major,
                       uint32_t *minor) {
  *major = *minor = 0;
  for (size_t m = 0; m < set->count; ++m) {
    const atlas_module_image *img =
        atlas_module_def_image(set->modules[m], "cuda");
    if (img == NULL || img->size == 0) continue;
    atlas_fatbin_entry e[kMaxEntries];
    size_t n = 0;
    if (atlas_fatbin_parse(img->data, img->size, e, kMaxEntries, &n) != NULL)
      continue;
    for (size_t i = 0; i < n && i < kMaxEntries; ++i) {
      if (e[i].kind != ATLAS_FATBIN_PTX) continue;
      if (e[i].ptx_major > *major ||
          (e[i].ptx_major == *major && e[i].ptx_minor > *minor)) {
        *major = e[i].ptx_major, *minor = e[i].ptx_minor;
      }
    }
  }
}

int atlas_kernel_images_report(FILE *out, const atlas_module_set *set) {
  int bad = 0;
  if (ATLAS_KERNELS_NVCC[0] != '\0') {
    bad |= fprintf(out, "CUDA kernels: compiled by nvcc %s at build time\n",
                   ATLAS_KERNELS_NVCC) < 0;
  } else {
    bad |= fprintf(out,
                   "CUDA kernels: no nvcc at build time; the committed PTX "
                   "of kernels/images/ (made by nvcc %s), which the driver "
                   "compiles at first load\n",
                   ATLAS_KERNELS_COMMITTED_NVCC) < 0;
  }
  uint32_t major = 0, minor = 0;
  newest_ptx(set, &major, &minor);
  for (size_t m = 0; m < set->count; ++m) {
    const atlas_module_def *def = set->modules[m];
    const atlas_module_image *img = atlas_module_def_image(def, "cuda");
    char entries[512];
    if (img == NULL) {
      snprintf(entries, sizeof(entries), "host only");
    } else {
      atlas_fatbin_describe(img->data, img->size, entries, sizeof(entries));
    }
    double kib = img != NULL ? (double)img->size / 1024.0 : 0.0;
    bad |= fprintf(out, "  %-12s %8.0f KiB  %s\n", def->name, kib,
                   img != NULL && img->size == 0 ? "none (empty image)"
                                                 : entries) < 0;
  }
  if (major != 0) {
    bad |= fprintf(out,
                   "  (sm_NN: machine code for that GPU; compute_NN: PTX "
                   "ISA %u.%u, compiled by the driver for GPUs from sm_NN "
                   "up)\n",
                   (unsigned)major, (unsigned)minor) < 0;
  }
  return bad ? -1 : 0;
}
