#include "atlas/kernels/fatbin_info.h"

#include <stdio.h>
#include <string.h>

// Container: magic (u32), version (u16), header bytes (u16), entry bytes
// (u64). Entry: kind (u16), version (u16), header bytes (u32), payload
// bytes (u64) at 8, PTX ISA minor (u16) and major (u16) at 24, the
// architecture (u32) at 28, and the uncompressed size (u64) at 56, 0 when
// the payload is stored as is.
enum {
  kEntryMinHeader = 32,
  kUncompressedAt = 56,
};

static uint16_t u16_at(const unsigned char *p) {
  uint16_t v;
  memcpy(&v, p, sizeof(v));
  return v;
}
static uint32_t u32_at(const unsigned char *p) {
  uint32_t v;
  memcpy(&v, p, sizeof(v));
  return v;
}
static uint64_t u64_at(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, sizeof(v));
  return v;
}

const char *atlas_fatbin_parse(const unsigned char *data, size_t size,
                               atlas_fatbin_entry *out, size_t cap,
                               size_t *out_count) {
  *out_count = 0;
  if (size < ATLAS_FATBIN_HEADER_BYTES || u32_at(data) != ATLAS_FATBIN_MAGIC)
    return "not a fatbin (no 0xBA55ED50 magic)";
  size_t header = u16_at(data + 6);
  uint64_t payload = u64_at(data + 8);
  if (header < ATLAS_FATBIN_HEADER_BYTES || header > size ||
      payload > size - header)
    return "the fatbin header claims more bytes than the image holds";
  size_t end = header + (size_t)payload, count = 0;
  for (size_t at = header; at < end;) {
    if (end - at < kEntryMinHeader) return "an entry header runs past the end";
    const unsigned char *e = data + at;
    uint16_t kind = u16_at(e);
    size_t entry_header = u32_at(e + 4);
    uint64_t entry_payload = u64_at(e + 8);
    if (entry_header < kEntryMinHeader || entry_header > end - at ||
        entry_payload > end - at - entry_header)
      return "an entry runs past the end of the image";
    if (kind != ATLAS_FATBIN_PTX && kind != ATLAS_FATBIN_SASS)
      return "an entry of unknown kind (neither PTX nor SASS)";
    if (count < cap) {
      atlas_fatbin_entry *o = &out[count];
      o->kind = (atlas_fatbin_kind)kind;
      o->arch = u32_at(e + 28);
      o->ptx_minor = kind == ATLAS_FATBIN_PTX ? u16_at(e + 24) : 0;
      o->ptx_major = kind == ATLAS_FATBIN_PTX ? u16_at(e + 26) : 0;
      o->compressed = entry_header >= kUncompressedAt + 8 &&
                      u64_at(e + kUncompressedAt) != 0;
      o->offset = at;
      o->bytes = entry_header + (size_t)entry_payload;
    }
    ++count;
    at += entry_header + (size_t)entry_payload;
  }
  *out_count = count;
  return NULL;
}

enum { kMaxEntries = 64 };

void atlas_fatbin_describe(const unsigned char *data, size_t size, char *buf,
                           size_t cap) {
  if (cap == 0) return;
  buf[0] = '\0';
  if (size == 0) {
    snprintf(buf, cap, "none");
    return;
  }
  atlas_fatbin_entry entries[kMaxEntries];
  size_t count = 0;
  const char *why =
      atlas_fatbin_parse(data, size, entries, kMaxEntries, &count);
  if (why != NULL) {
    snprintf(buf, cap, "unreadable: %s", why);
    return;
  }
  size_t used = 0;
  for (size_t i = 0; i < count && i < kMaxEntries && used < cap; ++i) {
    int n = snprintf(buf + used, cap - used, "%s%s_%u", i ? " " : "",
                     entries[i].kind == ATLAS_FATBIN_PTX ? "compute" : "sm",
                     (unsigned)entries[i].arch);
    if (n < 0) break;
    used += (size_t)n;
  }
}

bool atlas_fatbin_serves(const unsigned char *data, size_t size,
                         uint32_t arch) {
  atlas_fatbin_entry entries[kMaxEntries];
  size_t count = 0;
  if (atlas_fatbin_parse(data, size, entries, kMaxEntries, &count) != NULL)
    return false;
  for (size_t i = 0; i < count && i < kMaxEntries; ++i) {
    const atlas_fatbin_entry *e = &entries[i];
    if (e->kind == ATLAS_FATBIN_SASS ? e->arch == arch : e->arch <= arch)
      return true;
  }
  return false;
}
