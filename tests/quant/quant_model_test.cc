// atlas_model_open on a checkpoint whose config.json has quantization_config
// but plain tensors: refused before anything is loaded, whether Atlas reads
// the format or not, so that a quantized checkpoint never runs as if it were
// unquantized.
#include <jansson.h>
#include <stdlib.h>

#include <string>

#include "atlas/runtime/model/model.h"
#include "atlas/tools/checkpoint/make_checkpoint_lib.h"
#include "gtest/gtest.h"
#include "tests/model/test_util.h"

namespace {

using atlas_test::ExpectError;

std::string MakeTiny(const std::string &leaf, const char *quant_json) {
  std::string dir = atlas_test::TempDir(leaf);
  atlas_make_checkpoint_options o{};
  o.out_dir = dir.c_str();
  o.seed = 7;
  atlas_status_free(atlas_make_checkpoint_preset("tiny", &o.config));
  o.dtype = ATLAS_DTYPE_F32;
  o.shards = 1;
  atlas_test::Status s(atlas_make_checkpoint_write(&o));
  EXPECT_TRUE(s.ok()) << s.message();
  std::string path = dir + "/config.json";
  json_error_t err;
  json_t *root = json_load_file(path.c_str(), 0, &err);
  EXPECT_NE(root, nullptr) << err.text;
  json_object_set_new(root, "quantization_config",
                      json_loads(quant_json, 0, &err));
  EXPECT_EQ(json_dump_file(root, path.c_str(), JSON_INDENT(1)), 0);
  json_decref(root);
  return dir;
}

atlas_status Open(const std::string &dir) {
  atlas_model_spec spec{};
  spec.dir = dir.c_str();
  spec.backend = "host";
  spec.max_seq = 16;
  atlas_model *m = nullptr;
  atlas_status s = atlas_model_open(&spec, &m);
  EXPECT_EQ(m, nullptr);
  return s;
}

TEST(QuantModel, UnreadFormatsAreRefusedNamingTheField) {
  std::string dir = MakeTiny("bnb", R"({"quant_method": "bitsandbytes",
                                        "load_in_4bit": true})");
  ExpectError(Open(dir), ATLAS_STATUS_INVALID_ARGUMENT,
              {dir + "/config.json", "quant_method \"bitsandbytes\""});
  dir = MakeTiny("gptq3", R"({"quant_method": "gptq", "bits": 3,
                              "group_size": 128})");
  ExpectError(Open(dir), ATLAS_STATUS_INVALID_ARGUMENT,
              {"quantization_config.bits", "is 3"});
}

// F32 tensors beside a quantization_config Atlas reads: refused (the
// projections are looked for in the format, never read as plain weights).
TEST(QuantModel, ReadFormatsAreNotRunAsPlainWeights) {
  std::string dir = MakeTiny("gptq", R"({"quant_method": "gptq", "bits": 4,
                                         "group_size": 32, "desc_act": false,
                                         "sym": true})");
  ExpectError(Open(dir), ATLAS_STATUS_DATA_LOSS,
              {dir + "/model.safetensors",
               "model.layers.0.self_attn.q_proj.qweight", "is missing"});
}

}  // namespace
