"""The targets Atlas gates itself over (//lint:self_gate_test, //lint:clang_tidy_test, //lint:cppcheck_test).

The aspects follow `deps`, so listing the top of each tree is enough; a new cc target that nothing listed
here depends on must be added. lint/update_self_gate_targets.sh regenerates this list from
`bazel query 'kind("cc_(library|binary|test)", //runtime/... + //tools/... + //kernels/... + //lint/...)'`.
"""

SELF_GATE_TARGETS = [
    "//kernels:contract_cuda_module",
    "//kernels:contract_fatbin",
    "//kernels:contract_other_fatbin",
    "//kernels:contract_ptx_fatbin",
    "//kernels:embed_fatbin",
    "//lint:atlas_static",
    "//runtime/cuda:cuda_backend",
    "//runtime/cuda:cuda_driver",
    "//runtime/cuda:cuda_host",
    "//runtime/cuda:cuda_module_loader",
    "//runtime/model:checkpoint",
    "//runtime/model:config",
    "//runtime/model:config_tensors",
    "//runtime/model:safetensors",
    "//runtime/model:safetensors_write",
    "//runtime:backend",
    "//runtime:forward",
    "//runtime:host_backend",
    "//runtime:kernel_registry",
    "//runtime:ledger",
    "//runtime:log",
    "//runtime:status",
    "//runtime:teardown",
    "//tools:bench",
    "//tools:bench_cuda",
    "//tools:make_checkpoint",
    "//tools:make_checkpoint_lib",
    "//lint:atlas_statics_plugin.so",
]
