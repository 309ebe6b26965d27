"""Bazel rules for the atlas-stray-statics gate, usable from any workspace.

    load("@atlas//lint:defs.bzl", "atlas_statics_test")
    atlas_statics_test(name = "statics_gate_test", targets = ["//src:lib"], baseline = "statics.baseline")

The aspects run one action per source file (and per header, checked on its own), with the cc target's own
flags: C files as C (-x c -std=c11) with the target's copts, C++ as C++; the headers of a C target as C.
Every action is hermetic: its inputs are the tool (clang-tidy from @llvm14, a declared file), the plugin,
the configuration, the runner script, the source and the headers of the target's compilation context.
Reports land in output groups: `atlas_statics` (all), `atlas_statics_text`, `atlas_statics_fixes` (the
--export-fixes YAML with workspace-relative paths) and `atlas_statics_sarif` (SARIF 2.1.0).

The only things taken from the host are /usr/bin/python3, which runs the small runner and gate scripts
(standard library only), and, for the cppcheck gate, /usr/bin/cppcheck. lint/README.md says why.
"""

AtlasLintInfo = provider(
    doc = "Reports of one lint mode for a target and everything it depends on in this workspace.",
    fields = {
        "text": "depset of clang-tidy style text reports",
        "fixes": "depset of --export-fixes YAML files (workspace-relative paths)",
        "sarif": "depset of SARIF 2.1.0 files",
    },
)

_PYTHON = "/usr/bin/python3"
_CPPCHECK = "/usr/bin/cppcheck"

_C_EXTS = ["c"]
_CXX_EXTS = ["cc", "cpp", "cxx", "c++", "C"]
_HDR_EXTS = ["h", "hh", "hpp", "hxx"]  # .inc/.def are textual: never checked on their own
_CXX_HDR_EXTS = ["hh", "hpp", "hxx"]
_CC_KINDS = ["cc_library", "cc_binary", "cc_test"]

def _flag_ok(flag):
    # Warning flags change no semantics and may be unknown to clang; make variables are not expanded here.
    return not (flag.startswith("-W") or flag.startswith("-pedantic") or "$(" in flag)

def _merge_contexts(target, ctx):
    contexts = []
    if CcInfo in target:
        contexts.append(target[CcInfo].compilation_context)
    for dep in getattr(ctx.rule.attr, "deps", []):
        if CcInfo in dep:
            contexts.append(dep[CcInfo].compilation_context)
    return struct(
        headers = depset(transitive = [c.headers for c in contexts]),
        defines = depset(transitive = [c.defines for c in contexts]).to_list(),
        includes = depset(transitive = [c.includes for c in contexts]).to_list(),
        quote_includes = depset(transitive = [c.quote_includes for c in contexts]).to_list(),
        system_includes = depset(transitive = [c.system_includes for c in contexts]).to_list(),
    )

def _compile_args(ctx, cc, lang, mode):
    """The target's own flags, as clang (or cppcheck) arguments."""
    frag = ctx.fragments.cpp
    defines = cc.defines + getattr(ctx.rule.attr, "local_defines", [])
    if ctx.rule.kind != "cc_library":
        defines = defines + getattr(ctx.rule.attr, "defines", [])
    if mode == "cppcheck":
        args = ["--language=" + ("c" if lang == "c" else "c++"), "--std=" + ("c11" if lang == "c" else "c++17")]
        args += ["-D" + d for d in defines]
        for flag in frag.copts + getattr(ctx.rule.attr, "copts", []):
            if flag.startswith("-D") or flag.startswith("-U"):
                args.append(flag)
        for inc in cc.includes + cc.quote_includes + cc.system_includes:
            args.append("-I" + inc)
        return args
    if lang == "c":
        args = ["-x", "c", "-std=c11"] + [f for f in frag.conlyopts if _flag_ok(f)]
    else:
        args = ["-x", "c++", "-std=c++17"] + [f for f in frag.cxxopts if _flag_ok(f)]
    args += [f for f in frag.copts if _flag_ok(f)]
    args += [f for f in getattr(ctx.rule.attr, "copts", []) if _flag_ok(f)]
    args += ["-D" + d for d in defines]
    for inc in cc.includes:
        args += ["-I", inc]
    for inc in cc.quote_includes:
        args += ["-iquote", inc]
    for inc in cc.system_includes:
        args += ["-isystem", inc]
    return args

def _lint_files(ctx):
    """(file, lang) for every source and header of this target that lives in this workspace."""
    srcs = []
    for attr_name in ["srcs", "hdrs"]:
        for f in getattr(ctx.rule.files, attr_name, []):
            if f.is_source and not f.owner.workspace_root:
                srcs.append(f)
    has_cxx = [f for f in srcs if f.extension in _CXX_EXTS]
    out = []
    for f in srcs:
        if f.extension in _C_EXTS:
            out.append((f, "c"))
        elif f.extension in _CXX_EXTS:
            out.append((f, "c++"))
        elif f.extension in _HDR_EXTS:
            out.append((f, "c++" if (has_cxx or f.extension in _CXX_HDR_EXTS) else "c"))
    return out

def _impl(target, ctx, mode):
    transitive = [dep[AtlasLintInfo] for dep in getattr(ctx.rule.attr, "deps", []) if AtlasLintInfo in dep]
    text, fixes, sarif = [], [], []
    if ctx.rule.kind in _CC_KINDS and not ctx.label.workspace_root:
        cc = _merge_contexts(target, ctx)
        runner = ctx.file._runner
        tool_inputs = [runner]
        if mode != "cppcheck":
            tool_inputs += [ctx.file._clang_tidy, ctx.file._config]
        plugin = None
        if mode == "statics":
            plugin = [f for f in ctx.attr._plugin.files.to_list() if f.extension == "so"][0]
            tool_inputs.append(plugin)
        seen = {}
        for src, lang in _lint_files(ctx):
            # The standard gates cover Atlas's C sources; the statics gate covers C and C++.
            if src.path in seen or (mode != "statics" and lang != "c"):
                continue

            # cppcheck sees a header through the sources that include it: alone, every struct member of
            # an interface header would read as unused.
            if mode == "cppcheck" and src.extension not in _C_EXTS:
                continue
            seen[src.path] = True
            stem = "%s.%s/%s" % (ctx.label.name, mode, src.short_path)
            out_text = ctx.actions.declare_file(stem + ".txt")
            out_sarif = ctx.actions.declare_file(stem + ".sarif")
            outputs = [out_text, out_sarif]
            args = ctx.actions.args()
            args.add("-I")  # isolated: no user site, no PYTHON* variables
            args.add(runner)
            args.add("--mode", mode)
            args.add("--src", src)
            args.add("--text", out_text)
            args.add("--sarif", out_sarif)
            if mode == "cppcheck":
                args.add("--tool", _CPPCHECK)
            else:
                out_fixes = ctx.actions.declare_file(stem + ".fixes.yaml")
                outputs.append(out_fixes)
                fixes.append(out_fixes)
                args.add("--tool", ctx.file._clang_tidy)
                args.add("--config", ctx.file._config)
                args.add("--fixes", out_fixes)
            if plugin:
                args.add("--plugin", plugin)
            args.add("--")
            args.add_all(_compile_args(ctx, cc, lang, mode))
            ctx.actions.run(
                executable = _PYTHON,
                arguments = [args],
                inputs = depset([src] + tool_inputs, transitive = [cc.headers]),
                outputs = outputs,
                mnemonic = {"statics": "AtlasStatics", "tidy": "AtlasClangTidy", "cppcheck": "AtlasCppcheck"}[mode],
                progress_message = "%s %s" % (mode, src.short_path),
            )
            text.append(out_text)
            sarif.append(out_sarif)
    info = AtlasLintInfo(
        text = depset(text, transitive = [t.text for t in transitive]),
        fixes = depset(fixes, transitive = [t.fixes for t in transitive]),
        sarif = depset(sarif, transitive = [t.sarif for t in transitive]),
    )
    prefix = {"statics": "atlas_statics", "tidy": "atlas_tidy", "cppcheck": "atlas_cppcheck"}[mode]
    groups = {
        prefix: depset(transitive = [info.text, info.fixes, info.sarif]),
        prefix + "_text": info.text,
        prefix + "_fixes": info.fixes,
        prefix + "_sarif": info.sarif,
    }
    return [info, OutputGroupInfo(**groups)]

def _statics_impl(target, ctx):
    return _impl(target, ctx, "statics")

def _tidy_impl(target, ctx):
    return _impl(target, ctx, "tidy")

def _cppcheck_impl(target, ctx):
    return _impl(target, ctx, "cppcheck")

_RUNNER = attr.label(default = Label("//lint:tidy_action.py"), allow_single_file = True)
_CLANG_TIDY = attr.label(default = Label("@llvm14//:bin/clang-tidy"), allow_single_file = True)

atlas_statics_aspect = aspect(
    implementation = _statics_impl,
    attr_aspects = ["deps"],
    fragments = ["cpp"],
    attrs = {
        "_runner": _RUNNER,
        "_clang_tidy": _CLANG_TIDY,
        "_plugin": attr.label(default = Label("//lint:atlas_statics_plugin"), cfg = "exec"),
        "_config": attr.label(default = Label("//lint:statics_config"), allow_single_file = True),
    },
    doc = "Runs clang-tidy with only atlas-stray-statics over every cc target it visits.",
)

atlas_tidy_aspect = aspect(
    implementation = _tidy_impl,
    attr_aspects = ["deps"],
    fragments = ["cpp"],
    attrs = {
        "_runner": _RUNNER,
        "_clang_tidy": _CLANG_TIDY,
        "_config": attr.label(default = Label("//lint:standard_checks.clang-tidy"), allow_single_file = True),
    },
    doc = "Runs clang-tidy with Atlas's curated standard checks over every cc target it visits.",
)

atlas_cppcheck_aspect = aspect(
    implementation = _cppcheck_impl,
    attr_aspects = ["deps"],
    fragments = ["cpp"],
    attrs = {"_runner": _RUNNER},
    doc = "Runs cppcheck (warning, style, performance, portability) over every cc target it visits.",
)

def _gate_test_impl(ctx, check):
    reports = depset(transitive = [t[AtlasLintInfo].text for t in ctx.attr.targets])
    manifest = ctx.actions.declare_file(ctx.label.name + ".reports")
    ctx.actions.write(manifest, "\n".join([f.short_path for f in reports.to_list()]) + "\n")
    cmd = [_PYTHON, "-I", ctx.file._gate.short_path, "--manifest", manifest.short_path]
    runfiles = [ctx.file._gate, manifest]
    if check:
        cmd += ["--check", check]
    if getattr(ctx.file, "baseline", None):
        cmd += ["--baseline", ctx.file.baseline.short_path]
        runfiles.append(ctx.file.baseline)
    script = ctx.actions.declare_file(ctx.label.name + ".sh")
    ctx.actions.write(script, "#!/bin/sh\nexec " + " ".join(["'%s'" % c for c in cmd]) + ' "$@"\n', is_executable = True)
    return [DefaultInfo(
        executable = script,
        runfiles = ctx.runfiles(files = runfiles, transitive_files = reports),
    )]

def _statics_test_impl(ctx):
    return _gate_test_impl(ctx, "atlas-stray-statics")

def _tidy_test_impl(ctx):
    return _gate_test_impl(ctx, None)

_GATE = attr.label(default = Label("//lint:statics_gate.py"), allow_single_file = True)

atlas_statics_test = rule(
    implementation = _statics_test_impl,
    test = True,
    attrs = {
        "targets": attr.label_list(aspects = [atlas_statics_aspect], doc = "cc targets to gate (their deps too)"),
        "baseline": attr.label(allow_single_file = True, doc = "legacy stragglers: lines `file function name`"),
        "_gate": _GATE,
    },
    doc = "Fails on every mutable static outside the five categories that the baseline does not list, " +
          "and on every baseline entry that no longer exists.",
)

atlas_tidy_test = rule(
    implementation = _tidy_test_impl,
    test = True,
    attrs = {
        "targets": attr.label_list(aspects = [atlas_tidy_aspect]),
        "_gate": _GATE,
    },
    doc = "Fails on any finding of the curated standard clang-tidy checks.",
)

atlas_cppcheck_test = rule(
    implementation = _tidy_test_impl,
    test = True,
    attrs = {
        "targets": attr.label_list(aspects = [atlas_cppcheck_aspect]),
        "_gate": _GATE,
    },
    doc = "Fails on any cppcheck finding (warning, style, performance, portability).",
)

def _reports_impl(ctx):
    infos = [t[AtlasLintInfo] for t in ctx.attr.targets]
    files = depset(transitive = [i.text for i in infos] + [i.fixes for i in infos] + [i.sarif for i in infos])
    return [DefaultInfo(files = files, runfiles = ctx.runfiles(transitive_files = files))]

atlas_statics_reports = rule(
    implementation = _reports_impl,
    attrs = {"targets": attr.label_list(aspects = [atlas_statics_aspect])},
    doc = "The atlas-stray-statics reports (text, fixes YAML, SARIF) of targets, as files: CI artifacts, " +
          "or data for a test.",
)
