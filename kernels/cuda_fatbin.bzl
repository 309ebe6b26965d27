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

# The kernels branch on __CUDA_ARCH__ at these levels only (900:
# griddepcontrol, cuda_common.cuh); a new branch adds its level here. Each
# SASS architecture is compiled from the PTX of the highest level at or below
# it, and the newest from its own PTX (embedded too): nvcc's front end runs
# once a level, not once an architecture (prefill.cu: a minute each).
_CODE_LEVELS = ["80", "90"]

def _gencode_sass_ptx():
    by_level = {}
    for a in ATLAS_CUDA_SASS_ARCHS:
        level = ATLAS_CUDA_PTX_ARCH if a == ATLAS_CUDA_PTX_ARCH else ""
        if not level:
            for c in _CODE_LEVELS:
                if int(c) <= int(a):
                    level = c
        if not level:
            fail("atlas: no PTX level at or below sm_" + a)
        by_level.setdefault(level, []).append("sm_" + a)
    by_level.setdefault(ATLAS_CUDA_PTX_ARCH, []).append("compute_" + ATLAS_CUDA_PTX_ARCH)
    return " ".join([
        "-gencode 'arch=compute_%s,code=[%s]'" % (level, ",".join(codes))
        for level, codes in sorted(by_level.items(), key = _level_key)
    ])

def _level_key(item):
    return int(item[0])

_GENCODE_SASS_PTX = _gencode_sass_ptx()

# The PTX-only image the loader test JITs: Hopper's PTX (the GPU we run on).
_GENCODE_PTX_ONLY = "-gencode arch=compute_90,code=compute_90"

def _repository_root():
    # Where this package's repository lies in the action's tree: `.` for the
    # main one, external/<name> when Atlas is a dependency.
    repo = native.repository_name()
    return "." if repo == "@" else "external/" + repo.lstrip("@")

def atlas_cuda_fatbin(
        name,
        src,
        symbol,
        hdrs = [],
        ptx_only = False,
        nvcc_opts = [],
        nvcc = None,
        **kwargs):
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

    Args:
      name: the cc_library's name; the image's genrule is `<name>_image`.
      src: the .cu file.
      symbol: the C name of the image's bytes.
      hdrs: the .cuh headers `src` includes.
      ptx_only: PTX of the newest architecture only (no SASS).
      nvcc_opts: more options for nvcc.
      nvcc: the compiler; None takes the one deps.bzl found.
      **kwargs: passed to the cc_library.
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

    # The image goes in by the assembler's .incbin: a C array of a 34 MB
    # fatbin was 200 MB of source and two minutes of gcc in every build
    # configuration (fastbuild, asan, tsan, an embedder's).
    native.genrule(
        name = name + "_embed",
        srcs = [":" + name + ".fatbin"],
        outs = [name + ".S", name + ".h"],
        tools = ["//kernels:embed_fatbin"],
        cmd = "$(location //kernels:embed_fatbin) $(location :" + name +
              ".fatbin) " + symbol + " $(location :" + name + ".S) $(location :" +
              name + ".h)",
    )
    cc_library(
        name = name,
        srcs = [":" + name + ".S"],
        hdrs = [":" + name + ".h"],
        # The image itself: an input of the .S's assembly (.incbin reads it by
        # its path from the execution root). Bazel does not compare it before
        # reusing the object; the .S names its digest (embed_fatbin.c).
        textual_hdrs = [":" + name + ".fatbin"],
        include_prefix = "atlas/" + native.package_name(),
        **kwargs
    )
