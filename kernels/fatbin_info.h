// What a CUDA fatbin holds, read from its container headers (the layout
// nvcc's fatbinary writes): each entry's kind (SASS for one GPU
// architecture, or PTX the driver JIT-compiles for any GPU at or above its
// architecture), its architecture and PTX ISA version. `atlas --version`
// lists the embedded images with it; //kernels:ptx_image cuts the PTX
// entries out of a fatbin with it.
#ifndef ATLAS_KERNELS_FATBIN_INFO_H_
#define ATLAS_KERNELS_FATBIN_INFO_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ATLAS_FATBIN_MAGIC 0xBA55ED50u
#define ATLAS_FATBIN_HEADER_BYTES 16u

typedef enum atlas_fatbin_kind {
  ATLAS_FATBIN_PTX = 1,
  ATLAS_FATBIN_SASS = 2,
} atlas_fatbin_kind;

typedef struct atlas_fatbin_entry {
  atlas_fatbin_kind kind;
  uint32_t arch;  // 80, 86, 90, ...: sm_<arch> (SASS), compute_<arch> (PTX)
  // PTX entries: the PTX ISA version (major, minor), e.g. 9.0 from nvcc 13.0.
  uint32_t ptx_major, ptx_minor;
  bool compressed;  // the payload is compressed (the driver inflates it)
  size_t offset;    // of the entry's header in the image
  size_t bytes;     // the entry: its header and payload
} atlas_fatbin_entry;

// Reads the entries of the fatbin `data` (size bytes): up to `cap` into
// `out` (may be NULL when cap is 0), their number into *out_count. Returns
// NULL, or what is wrong with the image (not a fatbin, an entry past its
// end, an unknown kind); never reads past data + size.
const char *atlas_fatbin_parse(const unsigned char *data, size_t size,
                               atlas_fatbin_entry *out, size_t cap,
                               size_t *out_count);

// The image's entries as one line, "sm_80 sm_90 compute_90" in the image's
// order, into buf (cap bytes, always terminated; cut short when too small).
// An empty image gives "none"; one that does not parse, "unreadable: WHY".
void atlas_fatbin_describe(const unsigned char *data, size_t size, char *buf,
                           size_t cap);

// Whether the image holds SASS for `arch` or PTX at or below it (what the
// driver can load on a GPU of compute capability arch / 10 . arch % 10).
bool atlas_fatbin_serves(const unsigned char *data, size_t size, uint32_t arch);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_KERNELS_FATBIN_INFO_H_
