"""The targets Atlas gates itself over (//lint:self_gate_test, //lint:clang_tidy_test, //lint:cppcheck_test).

The aspects follow `deps`, so listing the top of each tree is enough; a new cc target that nothing listed
here depends on must be added. lint/update_self_gate_targets.sh regenerates this list from
`bazel query 'kind("cc_(library|binary|test)", //runtime/... + //tools/... + //kernels/... + //lint/...)'`.
"""

SELF_GATE_TARGETS = [
    "//runtime:status",
]
