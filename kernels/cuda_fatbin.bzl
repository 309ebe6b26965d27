"""atlas_cuda_fatbin: CUDA C compiled by nvcc into an embedded fatbin.

Where nvcc is absent the build embeds the module's committed image instead
(kernels/images/: PTX the driver JIT-compiles at first load), if it was made
from the sources as they are now (kernels/images/MANIFEST holds their hash).
"""

load("@atlas_cuda//:nvcc.bzl", "DEFAULT_SASS_ARCHS", "NVCC", "PTX_ARCH", "SASS_ARCHS")
load("@rules_cc//cc:defs.bzl", "cc_library")

# SASS for each architecture @atlas//:deps.bzl chose (every one nvcc 13
# supports from Ampere up, unless ATLAS_CUDA_ARCHS narrows it), plus PTX of
# each code level and of the newest, so a GPU newer than all of them can
# still JIT the module. The fatbin test reads the list back from the image.
ATLAS_CUDA_SASS_ARCHS = SASS_ARCHS
ATLAS_CUDA_PTX_ARCH = PTX_ARCH
ATLAS_CUDA_NARROWED = SASS_ARCHS != DEFAULT_SASS_ARCHS

# The kernels branch on __CUDA_ARCH__ at these levels only (900:
# griddepcontrol, cuda_common.cuh); a new branch adds its level here. Each
# SASS architecture is compiled from the PTX of the highest level at or below
# it, and the newest from its own PTX (embedded too): nvcc's front end runs
# once a level, not once an architecture (prefill.cu: a minute each).
_CODE_LEVELS = ["80", "90"]

def _codes_by_level():
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

    # The PTX of every level compiled anyway (kept: the committed images are
    # cut from it, and it costs no compile), and of the newest.
    for level in by_level.keys() + [ATLAS_CUDA_PTX_ARCH]:
        if "compute_" + level not in by_level.get(level, []):
            by_level.setdefault(level, []).append("compute_" + level)
    return by_level

def _level_key(item):
    return int(item[0])

_CODES_BY_LEVEL = _codes_by_level()

_GENCODE_SASS_PTX = " ".join([
    "-gencode 'arch=compute_%s,code=[%s]'" % (level, ",".join(codes))
    for level, codes in sorted(_CODES_BY_LEVEL.items(), key = _level_key)
])

# The PTX levels a full build's images hold (compute_NN for each).
ATLAS_CUDA_PTX_LEVELS = sorted(_CODES_BY_LEVEL.keys(), key = int)
_PTX_LEVELS = ATLAS_CUDA_PTX_LEVELS

# The committed images (kernels/images/): PTX of the code levels only. The
# driver JIT-compiles the highest one at or below the GPU (sm_90 and newer:
# compute_90, with the Hopper paths), so one image serves every GPU from
# sm_80 up without nvcc.
ATLAS_COMMITTED_PTX_ARCHS = _CODE_LEVELS

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
        committed = False,
        **kwargs):
    """Compiles `src` to a fatbin and wraps it in a cc_library `name`.

    The library's header is `<package>/<name>.h`; it declares `symbol` (the
    bytes) and `<SYMBOL>_SIZE` (a constant; 0 when nvcc was absent and no
    committed image fits, in which case the build still succeeds and the
    CUDA backend says so at load time).
    nvcc runs with its own temp directory: in Bazel's sandbox every action sees
    the same pid, and nvcc's tmpxft_<pid> names would clash. `nvcc` names the
    compiler; None takes the one @atlas//:deps.bzl found (tests point it at a
    missing path to build the no-nvcc image). `hdrs` are the headers `src`
    includes, spelled from the repository root
    (`#include "kernels/cuda_common.cuh"`).

    `committed`: the package keeps this module's image for machines without
    nvcc in images/<name>.fatbin, listed in images/MANIFEST with the hash of
    the sources that made it (src, then hdrs by name). Without nvcc the build
    embeds it when that hash is the sources' now, and an empty image (with a
    warning) when it is stale. With nvcc, <name>.ptx.fatbin is what
    tools/dev/kernel_images.sh commits (the image's PTX entries) and
    <name>.sources names the files hashed; //tests/kernels:images_test
    compares them with the committed ones.

    Args:
      name: the cc_library's name; the image's genrule is `<name>_image`.
      src: the .cu file.
      symbol: the C name of the image's bytes.
      hdrs: the .cuh headers `src` includes.
      ptx_only: PTX of compute_90 only (no SASS).
      nvcc_opts: more options for nvcc.
      nvcc: the compiler; None takes the one deps.bzl found.
      committed: images/<name>.fatbin stands in where nvcc is absent.
      **kwargs: passed to the cc_library.
    """

    # A machine without nvcc runs Atlas's own modules from their committed
    # images, so none may go without one (tests build modules of their own).
    if native.package_name() == "kernels" and not committed:
        fail("atlas_cuda_fatbin %s: a module of kernels/ keeps a committed image: set " % name +
             "committed = True, add it to COMMITTED_MODULES and run tools/dev/kernel_images.sh")

    # Without nvcc (known when the repository rule ran), a committed image
    # stands in; deciding here keeps images/ out of the nvcc action's inputs
    # (regenerating them recompiles nothing).
    from_committed = committed and nvcc == None and not NVCC
    if nvcc == None:
        nvcc = NVCC or "/nonexistent/nvcc"
    gencode = _GENCODE_PTX_ONLY if ptx_only else _GENCODE_SASS_PTX
    sources = [src] + sorted(hdrs)
    image = "images/" + name + ".fatbin"
    manifest = "images/MANIFEST"
    if from_committed:
        hashed = " ".join(["$(location " + f + ")" for f in sources])
        native.genrule(
            name = name + "_image",
            srcs = sources + [image, manifest],
            outs = [name + ".fatbin"],
            cmd = " ".join([
                "want=$$(awk '$$1 == \"" + name + "\" {print $$2}' $(location " + manifest + "));",
                "have=$$(cat " + hashed + " | sha256sum | cut -d' ' -f1);",
                "if [ -n \"$$want\" ] && [ \"$$want\" = \"$$have\" ]; then",
                "  cp $(location " + image + ") $@;",
                "else",
                "  echo \"WARNING: atlas: nvcc not found, and " + native.package_name() + "/" + image +
                " was made from other sources than " + src + " and its headers are now" +
                " (sha256 $$want, now $$have): the module's CUDA image is empty. Install the" +
                " CUDA toolkit, or run tools/dev/kernel_images.sh where nvcc is.\" >&2;",
                "  : > $@;",
                "fi",
            ]),
            message = "committed image of " + src,
        )
    else:
        native.genrule(
            name = name + "_image",
            srcs = sources,
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
    if committed:
        ptx_archs = ["90"] if ptx_only else ATLAS_COMMITTED_PTX_ARCHS
        have_all = ptx_only or all([a in _PTX_LEVELS for a in ptx_archs])

        # Empty where nvcc did not build the image, or where ATLAS_CUDA_ARCHS
        # left a level out: nothing to compare then.
        native.genrule(
            name = name + "_ptx",
            srcs = [":" + name + ".fatbin"],
            outs = [name + ".ptx.fatbin"],
            tools = ["//kernels:ptx_image"],
            cmd = ("if [ -x " + nvcc + " ]; then $(location //kernels:ptx_image) $< $@ " +
                   " ".join(ptx_archs) + "; else : > $@; fi") if have_all else ": > $@",
            message = "PTX image of " + src,
        )
        native.genrule(
            name = name + "_sources",
            outs = [name + ".sources"],
            cmd = "printf '%s\\n' " + " ".join([
                native.package_name() + "/" + f
                for f in sources
            ]) + " > $@",
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
