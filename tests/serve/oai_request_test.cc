// The OpenAI request parser: every field read as OpenAI defines it, and
// every bad field refused with its name and path.
#include "atlas/runtime/serve/openai/oai_request.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "atlas/runtime/serve/openai/oai_batch.h"

namespace {

struct Parsed {
  atlas_oai_request *r = nullptr;
  atlas_oai_error err{};
  atlas_status_code code = ATLAS_STATUS_OK;
  std::string message;
  ~Parsed() { atlas_oai_request_free(r); }
};

void Parse(const std::string &body, atlas_oai_endpoint ep, Parsed *p) {
  atlas_status s =
      atlas_oai_request_parse(body.data(), body.size(), ep, &p->r, &p->err);
  p->code = atlas_status_code_of(s);
  p->message = atlas_status_message(s);
  atlas_status_free(s);
}

TEST(OaiRequest, CompletionDefaultsAreOpenAIs) {
  Parsed p;
  Parse(R"({"model":"m","prompt":"Hello"})", ATLAS_OAI_COMPLETIONS, &p);
  ASSERT_EQ(p.code, ATLAS_STATUS_OK) << p.message;
  EXPECT_STREQ(p.r->model, "m");
  EXPECT_STREQ(p.r->prompt, "Hello");
  EXPECT_EQ(p.r->prompt_len, 5u);
  EXPECT_EQ(p.r->prompt_ids, nullptr);
  EXPECT_EQ(p.r->max_tokens, 0);
  EXPECT_EQ(p.r->temperature, 1.0);
  EXPECT_EQ(p.r->top_p, 1.0);
  EXPECT_EQ(p.r->top_k, 0);
  EXPECT_EQ(p.r->min_p, 0.0);
  EXPECT_EQ(p.r->repetition_penalty, 1.0);
  EXPECT_FALSE(p.r->has_seed);
  EXPECT_EQ(p.r->n, 1);
  EXPECT_FALSE(p.r->stream);
  EXPECT_FALSE(p.r->logprobs);
  EXPECT_EQ(p.r->stop_count, 0u);
}

TEST(OaiRequest, EveryFieldIsRead) {
  Parsed p;
  Parse(R"({"prompt":[1,2,300],"max_tokens":7,"temperature":0.5,"top_p":0.9,
            "top_k":40,"min_p":0.05,"repetition_penalty":1.1,"seed":-1,
            "stop":["a","bc"],"n":3,"stream":true,
            "stream_options":{"include_usage":true},"logprobs":2,
            "user":"ignored","presence_penalty":0})",
        ATLAS_OAI_COMPLETIONS, &p);
  ASSERT_EQ(p.code, ATLAS_STATUS_OK) << p.message;
  EXPECT_EQ(p.r->prompt, nullptr);
  ASSERT_EQ(p.r->prompt_id_count, 3u);
  EXPECT_EQ(p.r->prompt_ids[2], 300u);
  EXPECT_EQ(p.r->max_tokens, 7);
  EXPECT_EQ(p.r->temperature, 0.5);
  EXPECT_EQ(p.r->top_p, 0.9);
  EXPECT_EQ(p.r->top_k, 40);
  EXPECT_EQ(p.r->min_p, 0.05);
  EXPECT_EQ(p.r->repetition_penalty, 1.1);
  EXPECT_TRUE(p.r->has_seed);
  EXPECT_EQ(p.r->seed, UINT64_MAX);
  ASSERT_EQ(p.r->stop_count, 2u);
  EXPECT_STREQ(p.r->stop[1], "bc");
  EXPECT_EQ(p.r->n, 3);
  EXPECT_TRUE(p.r->stream);
  EXPECT_TRUE(p.r->include_usage);
  EXPECT_TRUE(p.r->logprobs);
  EXPECT_EQ(p.r->top_logprobs, 2);
}

TEST(OaiRequest, PromptListOfOne) {
  Parsed a, b;
  Parse(R"({"prompt":["hi"]})", ATLAS_OAI_COMPLETIONS, &a);
  ASSERT_EQ(a.code, ATLAS_STATUS_OK) << a.message;
  EXPECT_STREQ(a.r->prompt, "hi");
  Parse(R"({"prompt":[[5,6]]})", ATLAS_OAI_COMPLETIONS, &b);
  ASSERT_EQ(b.code, ATLAS_STATUS_OK) << b.message;
  EXPECT_EQ(b.r->prompt_id_count, 2u);
}

TEST(OaiRequest, ChatMessagesAndParts) {
  Parsed p;
  Parse(R"({"messages":[{"role":"developer","content":"be brief"},
            {"role":"user","content":[{"type":"text","text":"a"},
                                      {"type":"text","text":"b"}]}],
            "max_tokens":3,"max_completion_tokens":9,"logprobs":true,
            "top_logprobs":4,"stop":"x"})",
        ATLAS_OAI_CHAT, &p);
  ASSERT_EQ(p.code, ATLAS_STATUS_OK) << p.message;
  ASSERT_EQ(p.r->message_count, 2u);
  EXPECT_STREQ(p.r->messages[0].role, "system");
  EXPECT_STREQ(p.r->messages[0].content, "be brief");
  EXPECT_STREQ(p.r->messages[1].content, "ab");
  EXPECT_EQ(p.r->max_tokens, 9);  // max_completion_tokens wins
  EXPECT_TRUE(p.r->logprobs);
  EXPECT_EQ(p.r->top_logprobs, 4);
  ASSERT_EQ(p.r->stop_count, 1u);
  EXPECT_STREQ(p.r->stop[0], "x");
}

TEST(OaiRequest, NullMeansAbsent) {
  Parsed p;
  Parse(R"({"prompt":"x","stop":null,"seed":null,"temperature":null,
            "max_tokens":null,"logprobs":null})",
        ATLAS_OAI_COMPLETIONS, &p);
  ASSERT_EQ(p.code, ATLAS_STATUS_OK) << p.message;
  EXPECT_EQ(p.r->temperature, 1.0);
  EXPECT_FALSE(p.r->has_seed);
  EXPECT_FALSE(p.r->logprobs);
}

struct BadCase {
  atlas_oai_endpoint ep;
  const char *body;
  const char *param;     // expected error param
  const char *in_words;  // expected in the message
};

TEST(OaiRequest, EachBadFieldIsNamed) {
  const BadCase cases[] = {
      {ATLAS_OAI_COMPLETIONS, R"({"prompt":"x","temperature":-1})",
       "temperature", "out of range"},
      {ATLAS_OAI_COMPLETIONS, R"({"prompt":"x","temperature":"hot"})",
       "temperature", "must be a number"},
      {ATLAS_OAI_COMPLETIONS, R"({"prompt":"x","top_p":0})", "top_p",
       "out of range"},
      {ATLAS_OAI_COMPLETIONS, R"({"prompt":"x","top_p":1.5})", "top_p",
       "out of range"},
      {ATLAS_OAI_COMPLETIONS, R"({"prompt":"x","min_p":2})", "min_p",
       "out of range"},
      {ATLAS_OAI_COMPLETIONS, R"({"prompt":"x","repetition_penalty":0})",
       "repetition_penalty", "out of range"},
      {ATLAS_OAI_COMPLETIONS, R"({"prompt":"x","top_k":-2})", "top_k",
       "out of range"},
      {ATLAS_OAI_COMPLETIONS, R"({"prompt":"x","top_k":1.5})", "top_k",
       "must be an integer"},
      {ATLAS_OAI_COMPLETIONS, R"({"prompt":"x","seed":"7"})", "seed",
       "must be an integer"},
      {ATLAS_OAI_COMPLETIONS, R"({"prompt":"x","max_tokens":0})", "max_tokens",
       "out of range"},
      {ATLAS_OAI_COMPLETIONS, R"({"prompt":"x","n":17})", "n", "out of range"},
      {ATLAS_OAI_COMPLETIONS, R"({"prompt":"x","n":0})", "n", "out of range"},
      {ATLAS_OAI_COMPLETIONS, R"({"prompt":"x","stop":5})", "stop",
       "must be a string or a list"},
      {ATLAS_OAI_COMPLETIONS, R"({"prompt":"x","stop":["a",""]})", "stop[1]",
       "is empty"},
      {ATLAS_OAI_COMPLETIONS, R"({"prompt":"x","stop":["a",3]})", "stop[1]",
       "must be a string"},
      {ATLAS_OAI_COMPLETIONS, R"({"prompt":"x","stream":"yes"})", "stream",
       "true or false"},
      {ATLAS_OAI_COMPLETIONS,
       R"({"prompt":"x","stream_options":{"include_usage":true}})",
       "stream_options", "only allowed"},
      {ATLAS_OAI_COMPLETIONS,
       R"({"prompt":"x","stream":true,"stream_options":{"include_usage":1}})",
       "stream_options.include_usage", "true or false"},
      {ATLAS_OAI_COMPLETIONS, R"({"prompt":"x","logprobs":6})", "logprobs",
       "out of range"},
      {ATLAS_OAI_COMPLETIONS, R"({"prompt":"x","model":3})", "model",
       "must be a string"},
      {ATLAS_OAI_COMPLETIONS, R"({"model":"m"})", "prompt", "is required"},
      {ATLAS_OAI_COMPLETIONS, R"({"prompt":[]})", "prompt", "empty list"},
      {ATLAS_OAI_COMPLETIONS, R"({"prompt":[1,-1]})", "prompt[1]", "token id"},
      {ATLAS_OAI_COMPLETIONS, R"({"prompt":[1,4294967295]})", "prompt[1]",
       "token id"},
      {ATLAS_OAI_COMPLETIONS, R"({"prompt":["a","b"]})", "prompt",
       "one prompt a request"},
      {ATLAS_OAI_COMPLETIONS, R"({"prompt":{"a":1}})", "prompt",
       "must be a string or a list of token ids"},
      {ATLAS_OAI_COMPLETIONS, R"({"prompt":"x","echo":true})", "echo",
       "not supported"},
      {ATLAS_OAI_COMPLETIONS, R"({"prompt":"x","best_of":2})", "best_of",
       "not supported"},
      {ATLAS_OAI_COMPLETIONS, R"({"prompt":"x","frequency_penalty":0.5})",
       "frequency_penalty", "not supported"},
      {ATLAS_OAI_COMPLETIONS, R"({"prompt":"x","logit_bias":{"1":5}})",
       "logit_bias", "not supported"},
      {ATLAS_OAI_COMPLETIONS, R"({"prompt":"x","suffix":"s"})", "suffix",
       "not supported"},
      {ATLAS_OAI_CHAT, R"({"model":"m"})", "messages", "is required"},
      {ATLAS_OAI_CHAT, R"({"messages":[]})", "messages", "empty list"},
      {ATLAS_OAI_CHAT, R"({"messages":"hi"})", "messages", "must be a list"},
      {ATLAS_OAI_CHAT, R"({"messages":[5]})", "messages[0]",
       "must be an object"},
      {ATLAS_OAI_CHAT, R"({"messages":[{"content":"x"}]})", "messages[0].role",
       "is required"},
      {ATLAS_OAI_CHAT, R"({"messages":[{"role":"tool","content":"x"}]})",
       "messages[0].role", "not one of"},
      {ATLAS_OAI_CHAT, R"({"messages":[{"role":"user","content":"a"},
                                       {"role":"user"}]})",
       "messages[1].content", "is required"},
      {ATLAS_OAI_CHAT, R"({"messages":[{"role":"user","content":[
         {"type":"image_url","image_url":{"url":"x"}}]}]})",
       "messages[0].content[0]", "\"text\" parts only"},
      {ATLAS_OAI_CHAT, R"({"messages":[{"role":"user","content":[
         {"type":"text"}]}]})",
       "messages[0].content[0]", "without a \"text\""},
      {ATLAS_OAI_CHAT, R"({"messages":[{"role":"user","content":7}]})",
       "messages[0].content", "must be a string"},
      {ATLAS_OAI_CHAT, R"({"messages":[{"role":"assistant","content":"",
         "tool_calls":[{}]}]})",
       "messages[0].tool_calls", "not supported"},
      {ATLAS_OAI_CHAT,
       R"({"messages":[{"role":"user","content":"x"}],"top_logprobs":2})",
       "top_logprobs", "needs \"logprobs\": true"},
      {ATLAS_OAI_CHAT,
       R"({"messages":[{"role":"user","content":"x"}],"logprobs":true,
          "top_logprobs":21})",
       "top_logprobs", "out of range"},
      {ATLAS_OAI_CHAT,
       R"({"messages":[{"role":"user","content":"x"}],"logprobs":1})",
       "logprobs", "true or false"},
      {ATLAS_OAI_CHAT,
       R"({"messages":[{"role":"user","content":"x"}],
          "max_completion_tokens":-3})",
       "max_completion_tokens", "out of range"},
      {ATLAS_OAI_CHAT,
       R"({"messages":[{"role":"user","content":"x"}],"tools":[{}]})", "tools",
       "not supported"},
      {ATLAS_OAI_CHAT,
       R"({"messages":[{"role":"user","content":"x"}],
          "response_format":{"type":"json_object"}})",
       "response_format", "text"},
  };
  for (const BadCase &c : cases) {
    Parsed p;
    Parse(c.body, c.ep, &p);
    EXPECT_EQ(p.code, ATLAS_STATUS_INVALID_ARGUMENT) << c.body;
    EXPECT_EQ(p.r, nullptr) << c.body;
    EXPECT_STREQ(p.err.param, c.param) << c.body << " -> " << p.message;
    EXPECT_EQ(p.message.rfind(std::string(c.param) + ":", 0), 0u)
        << "the message starts with the field: " << p.message;
    EXPECT_NE(p.message.find(c.in_words), std::string::npos)
        << c.body << " -> " << p.message;
  }
}

TEST(OaiRequest, BadJsonSaysWhere) {
  const char *bodies[] = {"",
                          "{",
                          "[1]",
                          "\"x\"",
                          "{\"prompt\":\"a\",}",
                          "{\"prompt\":\"a\",\"prompt\":\"b\"}",
                          "{\"prompt\":\"a\\u0000b\"}"};
  for (const char *b : bodies) {
    Parsed p;
    Parse(b, ATLAS_OAI_COMPLETIONS, &p);
    EXPECT_EQ(p.code, ATLAS_STATUS_INVALID_ARGUMENT) << b;
    EXPECT_STREQ(p.err.param, "") << b;
    EXPECT_NE(p.message.find("request body"), std::string::npos) << p.message;
  }
  Parsed p;
  Parse("{\n \"prompt\": tru }", ATLAS_OAI_COMPLETIONS, &p);
  EXPECT_NE(p.message.find("line 2"), std::string::npos) << p.message;
}

TEST(OaiRequest, Endpoints) {
  atlas_oai_endpoint ep;
  ASSERT_TRUE(atlas_oai_endpoint_from_path("/v1/completions", &ep));
  EXPECT_EQ(ep, ATLAS_OAI_COMPLETIONS);
  ASSERT_TRUE(atlas_oai_endpoint_from_path("/v1/chat/completions", &ep));
  EXPECT_EQ(ep, ATLAS_OAI_CHAT);
  EXPECT_FALSE(atlas_oai_endpoint_from_path("/v1/completions/", &ep));
  EXPECT_FALSE(atlas_oai_endpoint_from_path("/v1/embeddings", &ep));
  EXPECT_STREQ(atlas_oai_endpoint_path(ATLAS_OAI_CHAT), "/v1/chat/completions");
}

TEST(OaiBatchLine, GoodLine) {
  std::string line =
      R"({"custom_id":"r1","method":"POST","url":"/v1/chat/completions",)"
      R"("body":{"model":"m","messages":[{"role":"user","content":"hi"}]}})";
  atlas_oai_batch_line bl;
  atlas_oai_error err;
  atlas_status s =
      atlas_oai_batch_line_parse(line.data(), line.size(), &bl, &err);
  ASSERT_EQ(s, ATLAS_OK) << atlas_status_message(s);
  EXPECT_STREQ(bl.custom_id, "r1");
  EXPECT_EQ(bl.endpoint, ATLAS_OAI_CHAT);
  ASSERT_NE(bl.request, nullptr);
  EXPECT_STREQ(bl.request->messages[0].content, "hi");
  atlas_oai_batch_line_clear(&bl);
}

TEST(OaiBatchLine, BadLinesNameTheField) {
  struct {
    const char *line;
    const char *param;
    bool has_custom_id;
  } cases[] = {
      {R"(not json)", "", false},
      {R"([1])", "", false},
      {R"({"method":"POST","url":"/v1/completions","body":{}})", "custom_id",
       false},
      {R"({"custom_id":"a","method":"GET","url":"/v1/completions"})", "method",
       true},
      {R"({"custom_id":"a","url":"/v1/embeddings","body":{}})", "url", true},
      {R"({"custom_id":"a","url":"/v1/completions"})", "body", true},
      {R"({"custom_id":"a","url":"/v1/completions","body":{"prompt":"x",)"
       R"("n":0}})",
       "body.n", true},
      {R"({"custom_id":"a","url":"/v1/chat/completions","body":{"messages":)"
       R"([{"role":"user","content":1}]}})",
       "body.messages[0].content", true},
  };
  for (const auto &c : cases) {
    atlas_oai_batch_line bl;
    atlas_oai_error err;
    atlas_status s =
        atlas_oai_batch_line_parse(c.line, strlen(c.line), &bl, &err);
    EXPECT_EQ(atlas_status_code_of(s), ATLAS_STATUS_INVALID_ARGUMENT) << c.line;
    std::string msg = atlas_status_message(s);
    atlas_status_free(s);
    EXPECT_STREQ(err.param, c.param) << c.line << " -> " << msg;
    if (c.param[0] != '\0') {
      EXPECT_NE(msg.find(c.param), std::string::npos) << msg;
    }
    EXPECT_EQ(bl.custom_id != nullptr, c.has_custom_id) << c.line;
    EXPECT_EQ(bl.request, nullptr);
    atlas_oai_batch_line_clear(&bl);
  }
}

}  // namespace
