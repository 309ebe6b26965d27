// The C API's struct_size convention (issue 57): every public options struct
// refuses a struct_size smaller than its first version, one that ends inside
// a field, and one larger than this build's unless the extra bytes are zero;
// older and newer headers' sizes are accepted.
#include "atlas/runtime/api/struct_size.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "atlas/atlas.h"

namespace {

const char *const kStructs[] = {
    "atlas_open_options", "atlas_generate_options", "atlas_report_options",
    "atlas_model_info",   "atlas_chat_limits",      "atlas_kv_options",
    "atlas_kv_stats",     "atlas_tokenizer_limits"};

size_t Sizeof(const std::string &name) {
  if (name == "atlas_open_options") return sizeof(atlas_open_options);
  if (name == "atlas_generate_options") return sizeof(atlas_generate_options);
  if (name == "atlas_report_options") return sizeof(atlas_report_options);
  if (name == "atlas_model_info") return sizeof(atlas_model_info);
  if (name == "atlas_chat_limits") return sizeof(atlas_chat_limits);
  if (name == "atlas_kv_options") return sizeof(atlas_kv_options);
  if (name == "atlas_kv_stats") return sizeof(atlas_kv_stats);
  if (name == "atlas_tokenizer_limits") return sizeof(atlas_tokenizer_limits);
  return 0;
}

atlas_status_code Check(const atlas_struct_layout *l, size_t n, const void *src,
                        size_t *bytes) {
  return atlas_status_consume(atlas_struct_size_check(l, n, src, bytes));
}

// The table of each struct lists every field, in order, and ends the struct:
// a field appended to atlas.h but not to the table would fail here.
TEST(StructSize, LayoutsCoverEveryField) {
  for (const char *name : kStructs) {
    const atlas_struct_layout *l = atlas_api_struct_layout(name);
    ASSERT_NE(l, nullptr) << name;
    EXPECT_EQ(l->current_size, Sizeof(name)) << name;
    EXPECT_EQ(l->fields[0].offset, 0u) << name;
    EXPECT_EQ(l->fields[0].size, sizeof(size_t)) << name;
    for (size_t i = 1; i < l->field_count; ++i) {
      const atlas_struct_field &a = l->fields[i - 1], &b = l->fields[i];
      EXPECT_GE(b.offset, a.offset + a.size) << name << " field " << i;
      EXPECT_LT(b.offset - (a.offset + a.size), b.size)
          << name << " field " << i << ": a field is missing before it";
    }
    const atlas_struct_field &last = l->fields[l->field_count - 1];
    EXPECT_LT(l->current_size - (last.offset + last.size), alignof(max_align_t))
        << name << ": a field is missing at the end";
    EXPECT_GE(l->first_version_fields, 1u);
    EXPECT_LE(l->first_version_fields, l->field_count);
  }
}

TEST(StructSize, EverySizeIsCheckedAgainstTheLayout) {
  for (const char *name : kStructs) {
    const atlas_struct_layout *l = atlas_api_struct_layout(name);
    ASSERT_NE(l, nullptr);
    const atlas_struct_field &first = l->fields[l->first_version_fields - 1];
    const size_t first_end = first.offset + first.size;
    std::vector<unsigned char> buf(l->current_size + 64, 0);
    size_t bytes = 0;
    // Too small: 0 (never initialised), 1, one byte short of version 1.
    for (size_t n : {size_t{0}, size_t{1}, sizeof(size_t), first_end - 1}) {
      EXPECT_EQ(Check(l, n, buf.data(), &bytes), ATLAS_STATUS_INVALID_ARGUMENT)
          << name << " " << n;
    }
    // Each field end (an older or this header) is accepted; a size inside a
    // field of more than one byte is torn.
    for (size_t i = l->first_version_fields - 1; i < l->field_count; ++i) {
      const atlas_struct_field &f = l->fields[i];
      EXPECT_EQ(Check(l, f.offset + f.size, buf.data(), &bytes),
                ATLAS_STATUS_OK)
          << name << " field " << i;
      EXPECT_EQ(bytes, f.offset + f.size);
      if (f.size > 1 && f.offset >= first_end) {
        EXPECT_EQ(Check(l, f.offset + f.size / 2, buf.data(), &bytes),
                  ATLAS_STATUS_INVALID_ARGUMENT)
            << name << " torn field " << i;
      }
    }
    EXPECT_EQ(Check(l, l->current_size, buf.data(), &bytes), ATLAS_STATUS_OK);
    // A newer header's struct: fine while its extra bytes are zero.
    EXPECT_EQ(Check(l, l->current_size + 64, buf.data(), &bytes),
              ATLAS_STATUS_OK)
        << name;
    EXPECT_EQ(bytes, l->current_size);
    buf[l->current_size + 63] = 1;
    EXPECT_EQ(Check(l, l->current_size + 64, buf.data(), &bytes),
              ATLAS_STATUS_INVALID_ARGUMENT)
        << name;
  }
}

// Through the API: a torn struct_size in atlas_open_options (half of the
// backend pointer) is INVALID_ARGUMENT, not a read of half a pointer.
TEST(StructSize, TheApiRefusesTornOptions) {
  atlas_open_options o;
  atlas_open_options_init(&o);
  o.backend = "host";
  o.struct_size = offsetof(atlas_open_options, backend) + 4;
  atlas_model *m = nullptr;
  atlas_status s = atlas_open("/nonexistent", &o, &m);
  EXPECT_EQ(atlas_status_code_of(s), ATLAS_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(atlas_status_message(s)).find("struct_size"),
            std::string::npos)
      << atlas_status_message(s);
  atlas_status_free(s);
  EXPECT_EQ(m, nullptr);
  o.struct_size = sizeof(o) + 16;  // a newer header's, with garbage after
  std::vector<unsigned char> big(sizeof(o) + 16, 0xab);
  memcpy(big.data(), &o, sizeof(o));
  s = atlas_open("/nonexistent",
                 reinterpret_cast<atlas_open_options *>(big.data()), &m);
  EXPECT_EQ(atlas_status_code_of(s), ATLAS_STATUS_INVALID_ARGUMENT);
  atlas_status_free(s);
}

TEST(StructSize, ChatLimitsThroughTheApi) {
  std::string path =
      std::string(getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp") +
      "/struct_size_tokenizer_config.json";
  std::ofstream(path) << "{\"chat_template\": \"{{ 'x' }}\"}";
  atlas_chat_template *t = nullptr;
  ASSERT_EQ(atlas_status_consume(atlas_chat_template_load(path.c_str(), &t)),
            ATLAS_STATUS_OK);
  atlas_chat_limits l;
  atlas_chat_limits_init(&l);
  EXPECT_EQ(atlas_status_consume(atlas_chat_template_set_limits(t, &l)),
            ATLAS_STATUS_OK);
  l.struct_size = 3;
  EXPECT_EQ(atlas_status_consume(atlas_chat_template_set_limits(t, &l)),
            ATLAS_STATUS_INVALID_ARGUMENT);
  atlas_chat_limits_init(&l);
  l.max_depth = 0;
  EXPECT_EQ(atlas_status_consume(atlas_chat_template_set_limits(t, &l)),
            ATLAS_STATUS_INVALID_ARGUMENT);
  atlas_chat_template_free(t);
}

TEST(StructSize, TokenizerLimitsThroughTheApi) {
  std::string path =
      std::string(getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp") +
      "/struct_size_tokenizer.json";
  std::ofstream(path) << "{\"model\": {\"type\": \"BPE\", \"vocab\": "
                         "{\"a\": 0}, \"merges\": []}}";
  atlas_tokenizer *t = nullptr;
  ASSERT_EQ(atlas_status_consume(atlas_tokenizer_load(path.c_str(), &t)),
            ATLAS_STATUS_OK);
  atlas_tokenizer_limits l;
  atlas_tokenizer_limits_init(&l);
  EXPECT_EQ(l.max_input_bytes, 256u << 20);
  EXPECT_EQ(l.max_word_bytes, 1u << 20);
  l.max_input_bytes = 3;
  ASSERT_EQ(atlas_status_consume(atlas_tokenizer_set_limits(t, &l)),
            ATLAS_STATUS_OK);
  uint32_t *ids = nullptr;
  size_t n = 0;
  atlas_status s = atlas_tokenizer_encode(t, "aaaa", 4, false, &ids, &n);
  EXPECT_EQ(atlas_status_code_of(s), ATLAS_STATUS_RESOURCE_EXHAUSTED);
  EXPECT_NE(std::string(atlas_status_message(s)).find("max_input_bytes (3)"),
            std::string::npos)
      << atlas_status_message(s);
  atlas_status_free(s);
  EXPECT_EQ(atlas_status_consume(
                atlas_tokenizer_encode(t, "aaa", 3, false, &ids, &n)),
            ATLAS_STATUS_OK);
  EXPECT_EQ(n, 3u);
  atlas_free(ids);
  l.struct_size = 5;
  EXPECT_EQ(atlas_status_consume(atlas_tokenizer_set_limits(t, &l)),
            ATLAS_STATUS_INVALID_ARGUMENT);
  atlas_tokenizer_limits_init(&l);
  l.regex_match_limit = 0;
  EXPECT_EQ(atlas_status_consume(atlas_tokenizer_set_limits(t, &l)),
            ATLAS_STATUS_INVALID_ARGUMENT);
  atlas_tokenizer_free(t);
}

}  // namespace
