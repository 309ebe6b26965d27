// OpenAI response bodies, chunks and errors, read back with jansson and
// checked field by field against OpenAI's shapes.
#include "atlas/runtime/serve/openai/oai_response.h"

#include <gtest/gtest.h>
#include <jansson.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "atlas/runtime/serve/openai/oai_batch.h"

namespace {

// Parses `text` (taking it) and returns the JSON; fails the test if invalid.
json_t *Load(char *text) {
  json_error_t e;
  json_t *j = json_loads(text, 0, &e);
  EXPECT_NE(j, nullptr) << e.text << " in " << text;
  free(text);
  return j;
}

// An SSE event: "data: " + JSON + blank line.
json_t *LoadEvent(char *event) {
  std::string s(event);
  free(event);
  EXPECT_EQ(s.rfind("data: ", 0), 0u) << s;
  EXPECT_GE(s.size(), 8u);
  EXPECT_EQ(s.substr(s.size() - 2), "\n\n") << s;
  std::string json = s.substr(6, s.size() - 8);
  EXPECT_EQ(json.find('\n'), std::string::npos) << "one line: " << s;
  return Load(strdup(json.c_str()));
}

const char *Str(json_t *j, const char *path_key) {
  return json_string_value(json_object_get(j, path_key));
}

TEST(OaiResponse, CompletionBody) {
  atlas_oai_meta m = {ATLAS_OAI_COMPLETIONS, "cmpl-1", "tiny", 1700000000};
  atlas_oai_choice c[2] = {};
  c[0].index = 0;
  c[0].text = "hello";
  c[0].text_len = 5;
  c[0].finish_reason = "length";
  c[1].index = 1;
  c[1].text = "ab\xff";  // a byte that is not UTF-8
  c[1].text_len = 3;
  c[1].finish_reason = "stop";
  atlas_oai_usage u = {4, 7};
  char *out = nullptr;
  ASSERT_EQ(atlas_oai_response_body(&m, c, 2, &u, &out), ATLAS_OK);
  json_t *j = Load(out);
  EXPECT_STREQ(Str(j, "id"), "cmpl-1");
  EXPECT_STREQ(Str(j, "object"), "text_completion");
  EXPECT_STREQ(Str(j, "model"), "tiny");
  EXPECT_EQ(json_integer_value(json_object_get(j, "created")), 1700000000);
  json_t *choices = json_object_get(j, "choices");
  ASSERT_EQ(json_array_size(choices), 2u);
  json_t *c0 = json_array_get(choices, 0);
  EXPECT_STREQ(Str(c0, "text"), "hello");
  EXPECT_STREQ(Str(c0, "finish_reason"), "length");
  EXPECT_TRUE(json_is_null(json_object_get(c0, "logprobs")));
  EXPECT_STREQ(Str(json_array_get(choices, 1), "text"), "ab\xEF\xBF\xBD");
  json_t *usage = json_object_get(j, "usage");
  EXPECT_EQ(json_integer_value(json_object_get(usage, "prompt_tokens")), 4);
  EXPECT_EQ(json_integer_value(json_object_get(usage, "completion_tokens")), 7);
  EXPECT_EQ(json_integer_value(json_object_get(usage, "total_tokens")), 11);
  EXPECT_EQ(json_object_get(usage, "prompt_tokens_details"), nullptr);
  json_decref(j);
}

TEST(OaiResponse, ChatBodyWithLogprobs) {
  atlas_oai_meta m = {ATLAS_OAI_CHAT, "chatcmpl-9", "tiny", 5};
  atlas_oai_alt tops[2] = {{"Hi", 2, -0.25f}, {"\xe2\x82", 2, -2.0f}};
  atlas_oai_logprob lp[1] = {{{"Hi", 2, -0.25f}, tops, 2}};
  atlas_oai_choice c = {};
  c.text = "Hi";
  c.text_len = 2;
  c.finish_reason = "stop";
  c.has_logprobs = true;
  c.logprobs = lp;
  c.logprob_count = 1;
  atlas_oai_usage u = {3, 1};
  char *out = nullptr;
  ASSERT_EQ(atlas_oai_response_body(&m, &c, 1, &u, &out), ATLAS_OK);
  json_t *j = Load(out);
  EXPECT_STREQ(Str(j, "object"), "chat.completion");
  json_t *c0 = json_array_get(json_object_get(j, "choices"), 0);
  json_t *msg = json_object_get(c0, "message");
  EXPECT_STREQ(Str(msg, "role"), "assistant");
  EXPECT_STREQ(Str(msg, "content"), "Hi");
  json_t *content = json_object_get(json_object_get(c0, "logprobs"), "content");
  ASSERT_EQ(json_array_size(content), 1u);
  json_t *e = json_array_get(content, 0);
  EXPECT_STREQ(Str(e, "token"), "Hi");
  EXPECT_DOUBLE_EQ(json_real_value(json_object_get(e, "logprob")), -0.25);
  json_t *bytes = json_object_get(e, "bytes");
  ASSERT_EQ(json_array_size(bytes), 2u);
  EXPECT_EQ(json_integer_value(json_array_get(bytes, 0)), 'H');
  json_t *top = json_object_get(e, "top_logprobs");
  ASSERT_EQ(json_array_size(top), 2u);
  // A token cut inside a character: the text is lossy, the bytes are exact.
  json_t *cut = json_array_get(top, 1);
  EXPECT_STREQ(Str(cut, "token"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(
      json_integer_value(json_array_get(json_object_get(cut, "bytes"), 0)),
      0xe2);
  json_decref(j);
}

TEST(OaiResponse, CompletionLogprobsOffsets) {
  atlas_oai_meta m = {ATLAS_OAI_COMPLETIONS, "c", "t", 0};
  atlas_oai_alt top[1] = {{"a", 1, -0.5f}};
  atlas_oai_logprob lp[2] = {{{"ab", 2, -0.1f}, top, 1},
                             {{"c", 1, -0.2f}, top, 1}};
  atlas_oai_choice c = {};
  c.text = "abc";
  c.text_len = 3;
  c.has_logprobs = true;
  c.logprobs = lp;
  c.logprob_count = 2;
  c.text_offset = 10;
  char *out = nullptr;
  ASSERT_EQ(atlas_oai_response_chunk(&m, &c, false, false, &out), ATLAS_OK);
  json_t *j = LoadEvent(out);
  json_t *l = json_object_get(json_array_get(json_object_get(j, "choices"), 0),
                              "logprobs");
  json_t *off = json_object_get(l, "text_offset");
  ASSERT_EQ(json_array_size(off), 2u);
  EXPECT_EQ(json_integer_value(json_array_get(off, 0)), 10);
  EXPECT_EQ(json_integer_value(json_array_get(off, 1)), 12);
  EXPECT_STREQ(
      json_string_value(json_array_get(json_object_get(l, "tokens"), 1)), "c");
  json_t *t0 = json_array_get(json_object_get(l, "top_logprobs"), 0);
  EXPECT_DOUBLE_EQ(json_real_value(json_object_get(t0, "a")), -0.5);
  EXPECT_TRUE(json_is_null(json_object_get(
      json_array_get(json_object_get(j, "choices"), 0), "finish_reason")));
  EXPECT_EQ(json_object_get(j, "usage"), nullptr);
  json_decref(j);
}

TEST(OaiResponse, ChatChunks) {
  atlas_oai_meta m = {ATLAS_OAI_CHAT, "chatcmpl-2", "tiny", 1};
  atlas_oai_choice c = {};
  c.index = 1;
  c.text = "He";
  c.text_len = 2;
  char *out = nullptr;
  ASSERT_EQ(atlas_oai_response_chunk(&m, &c, true, true, &out), ATLAS_OK);
  json_t *j = LoadEvent(out);
  EXPECT_STREQ(Str(j, "object"), "chat.completion.chunk");
  EXPECT_TRUE(json_is_null(json_object_get(j, "usage")));
  json_t *c0 = json_array_get(json_object_get(j, "choices"), 0);
  EXPECT_EQ(json_integer_value(json_object_get(c0, "index")), 1);
  json_t *delta = json_object_get(c0, "delta");
  EXPECT_STREQ(Str(delta, "role"), "assistant");
  EXPECT_STREQ(Str(delta, "content"), "He");
  json_decref(j);
  // The last chunk: an empty delta and the reason.
  c.text_len = 0;
  c.finish_reason = "abort";
  ASSERT_EQ(atlas_oai_response_chunk(&m, &c, false, false, &out), ATLAS_OK);
  j = LoadEvent(out);
  c0 = json_array_get(json_object_get(j, "choices"), 0);
  EXPECT_EQ(json_object_size(json_object_get(c0, "delta")), 0u);
  EXPECT_STREQ(Str(c0, "finish_reason"), "abort");
  json_decref(j);
  atlas_oai_usage u = {2, 3, true, 1};
  ASSERT_EQ(atlas_oai_response_usage_chunk(&m, &u, &out), ATLAS_OK);
  j = LoadEvent(out);
  EXPECT_EQ(json_array_size(json_object_get(j, "choices")), 0u);
  json_t *usage = json_object_get(j, "usage");
  EXPECT_EQ(json_integer_value(json_object_get(usage, "total_tokens")), 5);
  EXPECT_EQ(
      json_integer_value(json_object_get(
          json_object_get(usage, "prompt_tokens_details"), "cached_tokens")),
      1);
  json_decref(j);
  EXPECT_STREQ(atlas_oai_done_event, "data: [DONE]\n\n");
}

TEST(OaiResponse, ErrorShape) {
  struct {
    int status;
    const char *type;
  } cases[] = {{400, "invalid_request_error"},
               {404, "invalid_request_error"},
               {429, "rate_limit_error"},
               {503, "server_error"}};
  for (const auto &c : cases) {
    char *out = nullptr;
    ASSERT_EQ(atlas_oai_error_body(c.status, "bad \xff thing", nullptr, "n",
                                   nullptr, &out),
              ATLAS_OK);
    json_t *j = Load(out);
    json_t *e = json_object_get(j, "error");
    EXPECT_EQ(json_object_size(j), 1u);
    EXPECT_STREQ(Str(e, "message"), "bad \xEF\xBF\xBD thing");
    EXPECT_STREQ(Str(e, "type"), c.type);
    EXPECT_STREQ(Str(e, "param"), "n");
    ASSERT_NE(json_object_get(e, "code"), nullptr);
    EXPECT_TRUE(json_is_null(json_object_get(e, "code")));
    json_decref(j);
  }
  char *out = nullptr;
  ASSERT_EQ(
      atlas_oai_error_body(401, "no key", nullptr, "", "invalid_api_key", &out),
      ATLAS_OK);
  json_t *j = Load(out);
  json_t *e = json_object_get(j, "error");
  EXPECT_TRUE(json_is_null(json_object_get(e, "param")));
  EXPECT_STREQ(Str(e, "code"), "invalid_api_key");
  json_decref(j);
  ASSERT_EQ(
      atlas_oai_error_event(503, "swap lost the model", nullptr, nullptr, &out),
      ATLAS_OK);
  j = LoadEvent(out);
  EXPECT_STREQ(Str(json_object_get(j, "error"), "type"), "server_error");
  json_decref(j);
}

TEST(OaiResponse, Models) {
  const char *names[] = {"tiny", "other"};
  char *out = nullptr;
  ASSERT_EQ(atlas_oai_models_body(names, 2, 77, &out), ATLAS_OK);
  json_t *j = Load(out);
  EXPECT_STREQ(Str(j, "object"), "list");
  json_t *data = json_object_get(j, "data");
  ASSERT_EQ(json_array_size(data), 2u);
  EXPECT_STREQ(Str(json_array_get(data, 1), "id"), "other");
  EXPECT_STREQ(Str(json_array_get(data, 0), "object"), "model");
  EXPECT_STREQ(Str(json_array_get(data, 0), "owned_by"), "atlas");
  json_decref(j);
}

// A generated text may hold a NUL byte (JSON's \u0000): the line keeps it.
TEST(OaiBatchOutput, ABodyWithANulByte) {
  atlas_oai_meta m = {ATLAS_OAI_COMPLETIONS, "c", "t", 0};
  atlas_oai_choice c = {};
  c.text = "a\0b";
  c.text_len = 3;
  c.finish_reason = "length";
  atlas_oai_usage u = {1, 1};
  char *body = nullptr, *line = nullptr;
  ASSERT_EQ(atlas_oai_response_body(&m, &c, 1, &u, &body), ATLAS_OK);
  atlas_status s = atlas_oai_batch_output_line("b", "r", 200, "q", body,
                                               nullptr, nullptr, &line);
  free(body);
  ASSERT_EQ(s, ATLAS_OK) << atlas_status_message(s);
  json_t *j = json_loads(line, JSON_ALLOW_NUL, nullptr);
  free(line);
  json_t *t = json_object_get(
      json_array_get(
          json_object_get(
              json_object_get(json_object_get(j, "response"), "body"),
              "choices"),
          0),
      "text");
  EXPECT_EQ(std::string(json_string_value(t), json_string_length(t)),
            std::string("a\0b", 3));
  json_decref(j);
}

TEST(OaiBatchOutput, AnsweredAndRefused) {
  char *line = nullptr;
  ASSERT_EQ(atlas_oai_batch_output_line("b-1", "r1", 200, "req-1",
                                        R"({"object":"text_completion"})",
                                        nullptr, nullptr, &line),
            ATLAS_OK);
  json_t *j = Load(line);
  EXPECT_STREQ(Str(j, "id"), "b-1");
  EXPECT_STREQ(Str(j, "custom_id"), "r1");
  json_t *resp = json_object_get(j, "response");
  EXPECT_EQ(json_integer_value(json_object_get(resp, "status_code")), 200);
  EXPECT_STREQ(Str(json_object_get(resp, "body"), "object"), "text_completion");
  EXPECT_TRUE(json_is_null(json_object_get(j, "error")));
  json_decref(j);
  ASSERT_EQ(
      atlas_oai_batch_output_line("b-2", nullptr, 400, "req-2",
                                  R"({"error":{}})", "n", "n: \xff bad", &line),
      ATLAS_OK);
  j = Load(line);
  EXPECT_TRUE(json_is_null(json_object_get(j, "custom_id")));
  json_t *err = json_object_get(j, "error");
  EXPECT_STREQ(Str(err, "code"), "n");
  EXPECT_STREQ(Str(err, "message"), "n: \xEF\xBF\xBD bad");
  json_decref(j);
}

}  // namespace
