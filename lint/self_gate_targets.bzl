"""The targets Atlas gates itself over (//lint:self_gate_test, //lint:clang_tidy_test, //lint:cppcheck_test).

The aspects follow `deps`, `srcs` and `hdrs`; a new cc target that nothing listed here reaches makes
//lint:self_gate_coverage_test fail. lint/update_self_gate_targets.sh regenerates this list from
`bazel query 'kind("cc_(library|binary|test)", //... - //tests/...)'`. CI also runs the gate
over the package pattern, which needs no list: tools/bazel build --config=atlas_statics -- //... -//tests/...
"""

SELF_GATE_TARGETS = [
    "//kernels:contract_cuda_module",
    "//kernels:contract_fatbin",
    "//kernels:contract_other_fatbin",
    "//kernels:contract_ptx_fatbin",
    "//kernels:embed_fatbin",
    "//kernels:llama",
    "//kernels:llama_fatbin",
    "//lint:atlas_static",
    "//runtime/cuda:cuda_backend",
    "//runtime/cuda:cuda_driver",
    "//runtime/cuda:cuda_host",
    "//runtime/cuda:cuda_module_loader",
    "//runtime/cuda:cuda_staging",
    "//runtime/model:checkpoint",
    "//runtime/model:config",
    "//runtime/model:config_tensors",
    "//runtime/model:json_words",
    "//runtime/model:llama",
    "//runtime/model:model",
    "//runtime/model:safetensors",
    "//runtime/model:safetensors_convert",
    "//runtime/model:safetensors_write",
    "//runtime/model:swap",
    "//runtime/model:weight_upload",
    "//runtime:backend",
    "//runtime:forward",
    "//runtime:host_backend",
    "//runtime:host_pool",
    "//runtime:kernel_registry",
    "//runtime:ledger",
    "//runtime:log",
    "//runtime:status",
    "//runtime:teardown",
    "//tools:atlas",
    "//tools:bench",
    "//tools:bench_cuda",
    "//tools:bench_ledger",
    "//tools:bench_load",
    "//tools:cli_support",
    "//tools:demo_models_embedded",
    "//tools:make_checkpoint",
    "//tools:make_checkpoint_embed",
    "//tools:make_checkpoint_lib",
    "//lint:atlas_statics_plugin.so",
]
