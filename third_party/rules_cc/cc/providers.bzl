"""The C++ providers Bazel 4.2.3 has built in, under names defs.bzl re-exports."""

cc_info = CcInfo
cc_common_module = cc_common
