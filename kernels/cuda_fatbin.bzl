"""atlas_cuda_fatbin: CUDA C compiled by nvcc into an embedded fatbin."""

load("@atlas_cuda//:nvcc.bzl", "DEFAULT_SASS_ARCHS", "NVCC", "PTX_ARCH", "SASS_ARCHS")
load("@rules_cc//cc:defs.bzl", "cc_library")

# SASS for each architecture @atlas//:deps.bzl chose (every one nvcc 13
# supports from Ampere up, unless ATLAS_CUDA_ARCHS narrows it), plus PTX of
# the newest so a GPU newer than all of them can still JIT the module. The
# fatbin test reads the list back from the image.
ATLAS_CUDA_SASS_ARCHS = SASS_ARCHS
ATLAS_CUDA_PTX_ARCH = PTX_ARCH
ATLAS_CUDA_NARROWED = SASS_ARCHS != DEFAULT_SASS_ARCHS
_GENCODE_SASS_PTX = " ".join(
    ["-gencode arch=compute_%s,code=sm_%s" % (a, a) for a in ATLAS_CUDA_SASS_ARCHS] +
    ["-gencode arch=compute_%s,code=compute_%s" % (ATLAS_CUDA_PTX_ARCH, ATLAS_CUDA_PTX_ARCH)],
)

# The PTX-only image the loader test JITs: Hopper's PTX (the GPU we run on).
_GENCODE_PTX_ONLY = "-gencode arch=compute_90,code=compute_90"

def _repository_root():
    # Where this package's repository lies in the action's tree: `.` for the
    # main one, external/<name> when Atlas is a dependency.
    repo = native.repository_name()
    return "." if repo == "@" else "external/" + repo.lstrip("@")

def atlas_cuda_fatbin(name, src, symbol, hdrs = [], ptx_only = False,
                      nvcc_opts = [], nvcc = None, **kwargs):
    """Compiles `src` to a fatbin and wraps it in a cc_library `name`.

    The library's header is `<package>/<name>.h`; it declares `symbol` (the
    bytes) and `<SYMBOL>_SIZE` (a constant; 0 when nvcc was absent, in which
    case the build still succeeds and the CUDA backend says so at load time).
    nvcc runs with its own temp directory: in Bazel's sandbox every action sees
    the same pid, and nvcc's tmpxft_<pid> names would clash. `nvcc` names the
    compiler; None takes the one @atlas//:deps.bzl found (tests point it at a
    missing path to build the no-nvcc image). `hdrs` are the headers `src`
    includes, spelled from the repository root
    (`#include "kernels/cuda_common.cuh"`).
    """
    if nvcc == None:
        nvcc = NVCC or "/nonexistent/nvcc"
    gencode = _GENCODE_PTX_ONLY if ptx_only else _GENCODE_SASS_PTX
    native.genrule(
        name = name + "_image",
        srcs = [src] + hdrs,
        outs = [name + ".fatbin"],
        # --threads 0: one nvcc thread per CPU over the architectures
        # (prefill.cu took 9 minutes on one core).
        cmd = " ".join([
            "NVCC=" + nvcc + ";",
            "if [ -x $$NVCC ]; then",
            "  T=$$(mktemp -d \"$${TMPDIR:-/tmp}/atlas_nvcc.XXXXXX\") || exit 1;",
            "  TMPDIR=$$T $$NVCC -fatbin -O3 --threads 0 -I " + _repository_root() + " " + gencode,
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
