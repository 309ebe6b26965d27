"""bzlmod module extension: the repositories Atlas's libraries need, as atlas_dependencies (deps.bzl)
declares them in WORKSPACE mode: @jansson, @pcre2 and @utf8proc (Debian's static libraries under
`system_prefix`) and @atlas_cuda (nvcc when present, else a build without CUDA kernels). Untested: Bazel
4.2.3, which builds Atlas here, has no module_extension.
"""

load("//:deps.bzl", "atlas_cuda_configure", "atlas_system_libraries")

def _atlas_deps_impl(mctx):
    prefix = "/usr"
    for mod in mctx.modules:
        for tag in mod.tags.configure:
            prefix = tag.system_prefix
        if mod.is_root and mod.tags.configure:
            break
    atlas_system_libraries(prefix)
    atlas_cuda_configure(name = "atlas_cuda")

_configure = tag_class(attrs = {"system_prefix": attr.string(default = "/usr")})

atlas_deps = module_extension(
    implementation = _atlas_deps_impl,
    tag_classes = {"configure": _configure},
    doc = "bzlmod: creates @jansson, @pcre2, @utf8proc and @atlas_cuda; `configure(system_prefix)` in the root module overrides /usr.",
)
