"""atlas_cuda_fatbin: CUDA C compiled by nvcc into an embedded fatbin."""

load("@atlas_cuda//:nvcc.bzl", "NVCC")
load("@rules_cc//cc:defs.bzl", "cc_library")

# Hopper: sm_90 SASS (loads without JIT) plus compute_90 PTX (for newer GPUs).
_GENCODE_SASS_PTX = "'arch=compute_90,code=[sm_90,compute_90]'"
_GENCODE_PTX_ONLY = "'arch=compute_90,code=compute_90'"

def atlas_cuda_fatbin(name, src, symbol, ptx_only = False, nvcc_opts = [],
                      nvcc = None, **kwargs):
    """Compiles `src` to a fatbin and wraps it in a cc_library `name`.

    The library's header is `<package>/<name>.h`; it declares `symbol` (the
    bytes) and `<SYMBOL>_SIZE` (a constant; 0 when nvcc was absent, in which
    case the build still succeeds and the CUDA backend says so at load time).
    nvcc runs with its own temp directory: in Bazel's sandbox every action sees
    the same pid, and nvcc's tmpxft_<pid> names would clash. `nvcc` names the
    compiler; None takes the one @atlas//:deps.bzl found (tests point it at a
    missing path to build the no-nvcc image).
    """
    if nvcc == None:
        nvcc = NVCC or "/nonexistent/nvcc"
    gencode = _GENCODE_PTX_ONLY if ptx_only else _GENCODE_SASS_PTX
    native.genrule(
        name = name + "_image",
        srcs = [src],
        outs = [name + ".fatbin"],
        cmd = " ".join([
            "NVCC=" + nvcc + ";",
            "if [ -x $$NVCC ]; then",
            "  T=$$(mktemp -d \"$${TMPDIR:-/tmp}/atlas_nvcc.XXXXXX\") || exit 1;",
            "  TMPDIR=$$T $$NVCC -fatbin -O3 -gencode " + gencode,
            "    " + " ".join(nvcc_opts) + " -o $@ $(location " + src + ");",
            "  rc=$$?; rm -rf $$T; exit $$rc;",
            "else",
            "  : > $@;",
            "fi",
        ]),
        message = "nvcc " + src,
    )
    native.genrule(
        name = name + "_embed",
        srcs = [":" + name + ".fatbin"],
        outs = [name + ".c", name + ".h"],
        tools = ["//kernels:embed_fatbin"],
        cmd = "$(location //kernels:embed_fatbin) $(location :" + name +
              ".fatbin) " + symbol + " $(location :" + name + ".c) $(location :" +
              name + ".h) atlas/" + native.package_name() + "/" + name + ".h",
    )
    cc_library(
        name = name,
        srcs = [":" + name + ".c"],
        hdrs = [":" + name + ".h"],
        include_prefix = "atlas/" + native.package_name(),
        **kwargs
    )
