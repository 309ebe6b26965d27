"""bzlmod module extension for the statics gate's LLVM (see lint/llvm.bzl). Kept apart from llvm.bzl because
Bazel 4.2.3, which builds Atlas here, has no module_extension; untested for the same reason.
"""

load(":llvm.bzl", "atlas_llvm_repository_rule")

def _atlas_llvm_extension_impl(mctx):
    version, path = "14", ""
    for mod in mctx.modules:
        for tag in mod.tags.configure:
            version, path = tag.version, tag.path
        if mod.is_root and mod.tags.configure:
            break
    atlas_llvm_repository_rule(name = "atlas_llvm", version = version, path = path)

_configure = tag_class(attrs = {
    "version": attr.string(default = "14"),
    "path": attr.string(default = ""),
})

atlas_llvm = module_extension(
    implementation = _atlas_llvm_extension_impl,
    tag_classes = {"configure": _configure},
    doc = "bzlmod: creates @atlas_llvm; `configure(version, path)` in the root module overrides the default.",
)
