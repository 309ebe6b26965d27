"""libatlas.a and libatlas.so from the PIC archives of the public API and
every Atlas library below it.

Debian's static jansson/pcre2/utf8proc are not position-independent, so they
cannot go into a shared object: libatlas.so links their shared libraries
(DT_NEEDED), and atlas.pc names them in Libs.private for static links.
cc_binary(linkshared) cannot swap a dependency's archive for its .so, hence
a rule of our own."""

load("@rules_cc//cc:defs.bzl", "CcInfo", "cc_common")

def _inputs(ctx):
    here = ctx.label.workspace_name
    ours, system, flags = [], [], []
    for dep in ctx.attr.deps:
        for li in dep[CcInfo].linking_context.linker_inputs.to_list():
            for f in li.user_link_flags:
                if f not in flags:
                    flags.append(f)
            for lib in li.libraries:
                if li.owner.workspace_name != here:
                    a = lib.static_library or lib.pic_static_library
                    if a and a not in system:
                        system.append(a)
                    continue
                a = lib.pic_static_library
                if not a:
                    fail("%s has no position-independent archive" % li.owner)
                if a not in ours:
                    ours.append(a)
    return ours, system, flags

def _atlas_static_archive_impl(ctx):
    cc = ctx.attr._cc_toolchain[cc_common.CcToolchainInfo]
    archives, _, _ = _inputs(ctx)
    out = ctx.actions.declare_file(ctx.attr.out)
    mri = ctx.actions.declare_file(ctx.attr.out + ".mri")
    ctx.actions.write(mri, "create %s\n" % out.path +
                           "".join(["addlib %s\n" % a.path for a in archives]) +
                           "save\nend\n")
    ctx.actions.run_shell(
        inputs = archives + [mri],
        outputs = [out],
        tools = cc.all_files,
        command = "rm -f '%s' && '%s' -M < '%s'" % (out.path, cc.ar_executable, mri.path),
        mnemonic = "AtlasArchive",
        progress_message = "Archiving %s" % out.short_path,
    )
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out]))]

# One static archive of Atlas's own libraries (not the Debian ones).
atlas_static_archive = rule(
    implementation = _atlas_static_archive_impl,
    attrs = {
        "deps": attr.label_list(providers = [CcInfo]),
        "out": attr.string(mandatory = True),
        "_cc_toolchain": attr.label(default = "@bazel_tools//tools/cpp:current_cc_toolchain"),
    },
    fragments = ["cpp"],
)

def _atlas_shared_library_impl(ctx):
    cc = ctx.attr._cc_toolchain[cc_common.CcToolchainInfo]
    archives, system, flags = _inputs(ctx)
    out = ctx.actions.declare_file(ctx.attr.out)

    # -lNAME for each Debian archive, searched beside it first (the prefix
    # deps.bzl found) and then where the linker looks by default.
    syslibs = " ".join([
        "-L\"$(dirname \"$(readlink -f '%s')\")\" -l%s" % (a.path, a.basename[3:-2])
        for a in system
    ])
    cmd = " ".join([
        "'%s'" % cc.compiler_executable,
        "-shared -o '%s'" % out.path,
        "-Wl,-soname,%s" % ctx.attr.soname,
        "-Wl,@'%s'" % ctx.file.undefined.path,
        "-Wl,--version-script='%s'" % ctx.file.version_script.path,
        "-Wl,--no-undefined",
        "-Wl,--start-group",
        " ".join(["'%s'" % a.path for a in archives]),
        "-Wl,--end-group",
        syslibs,
        " ".join(["'%s'" % f for f in flags]),
        " ".join(["'%s'" % f for f in ctx.fragments.cpp.linkopts]),
        "-ldl -lpthread -lm",
    ])
    ctx.actions.run_shell(
        inputs = archives + system + [ctx.file.undefined, ctx.file.version_script],
        outputs = [out],
        tools = cc.all_files,
        command = cmd,
        mnemonic = "AtlasSharedLink",
        progress_message = "Linking %s" % out.short_path,
        use_default_shell_env = True,
    )
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out]))]

# libatlas.so: the public functions (the -u list pulls them and what they
# use from the archives), exported by the version script and nothing else.
atlas_shared_library = rule(
    implementation = _atlas_shared_library_impl,
    attrs = {
        "deps": attr.label_list(providers = [CcInfo]),
        "out": attr.string(mandatory = True),
        # What a program linked against it records (DT_NEEDED); install.sh
        # links it to the file.
        "soname": attr.string(mandatory = True),
        "undefined": attr.label(allow_single_file = True, mandatory = True),
        "version_script": attr.label(allow_single_file = True, mandatory = True),
        "_cc_toolchain": attr.label(default = "@bazel_tools//tools/cpp:current_cc_toolchain"),
    },
    fragments = ["cpp"],
)
