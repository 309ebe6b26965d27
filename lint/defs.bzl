"""Bazel rules for the atlas-stray-statics gate, usable from any workspace.

    load("@atlas//lint:defs.bzl", "atlas_statics_test")
    atlas_statics_test(name = "statics_gate_test", targets = ["//src:lib"], baseline = "statics.baseline")

The aspects run one action per source file (and per header, checked on its own), with the cc target's own
flags: C files as C (-x c -std=c11) with the target's copts, C++ as C++; the headers of a C target as C.
Every action is hermetic: its inputs are the tool (clang-tidy from @atlas_llvm (lint/llvm.bzl), a declared file), the plugin,
the configuration, the runner script, the source and the headers of the target's compilation context.
Reports land in output groups: `atlas_statics` (all), `atlas_statics_text`, `atlas_statics_fixes` (the
--export-fixes YAML with workspace-relative paths) and `atlas_statics_sarif` (SARIF 2.1.0).

Coverage: C (.c), C++ (.cc .cpp .cxx .c++ .C) and CUDA (.cu, parsed in clang's CUDA mode with a stand-in
for the toolkit's headers, lint/cuda/) sources of every cc target the aspect visits, and the CUDA sources
of any other rule it reaches (a genrule that runs nvcc) through `deps`, `srcs` and `hdrs`. Headers are
checked on their own, and again through every file that includes them (the gate merges the two), so a
static in a textual include (.inc, .def) is reported at its spelling location. Tags on a target:
`no-atlas-statics` skips it (the gate's summary lists it), `atlas-statics-headers-via-includers` checks
its headers only through their includers (for headers that do not compile on their own). Generated files
are checked like written ones (reported at their package paths); assembly files are listed in the summary.

The aspects can run over a package pattern without any list of targets:

    bazel build //... --aspects=@atlas//lint:defs.bzl%atlas_statics_aspect --output_groups=atlas_statics_gate

which fails the build on every straggler the baseline (`--@atlas//lint:statics_baseline=//:my.baseline`)
does not list.

The only things taken from the host are /usr/bin/python3, which runs the small runner and gate scripts
(standard library only), and, for the cppcheck gate, /usr/bin/cppcheck. lint/README.md says why.
"""

load(":settings.bzl", "AtlasSettingInfo", "gate_options_transition")

AtlasLintInfo = provider(
    doc = "Reports of one lint mode for a target and everything it depends on in this workspace.",
    fields = {
        "text": "depset of clang-tidy style text reports",
        "fixes": "depset of --export-fixes YAML files (workspace-relative paths)",
        "sarif": "depset of SARIF 2.1.0 files",
        "visited": "depset of labels (strings) of the targets whose files were checked",
        "skipped": "depset of labels of targets tagged no-atlas-statics",
        "via_includers": "depset of labels of targets whose headers are checked only through includers",
        "excluded": "depset of workspace files that are compiled but not parsed (assembly)",
    },
)

_PYTHON = "/usr/bin/python3"
_CPPCHECK = "/usr/bin/cppcheck"

_C_EXTS = ["c"]
_CXX_EXTS = ["cc", "cpp", "cxx", "c++", "C"]
_CU_EXTS = ["cu"]
_HDR_EXTS = ["h", "hh", "hpp", "hxx", "cuh"]  # .inc/.def are textual: checked through their includers
_CXX_HDR_EXTS = ["hh", "hpp", "hxx"]
_ASM_EXTS = ["S", "s", "asm"]  # not parsed: listed in the gate's summary
_CC_KINDS = ["cc_library", "cc_binary", "cc_test"]
_SKIP_TAG = "no-atlas-statics"
_VIA_INCLUDERS_TAG = "atlas-statics-headers-via-includers"

# CUDA: clang's CUDA mode, host side only, without the toolkit (lint/cuda/atlas_cuda_lint.h stands in).
_CUDA_ARGS = ["-x", "cuda", "--cuda-host-only", "-nocudainc", "-nocudalib", "--cuda-path=/nonexistent-atlas-no-cuda"]

def _flag_ok(flag):
    # Warning flags change no semantics and may be unknown to clang; make variables are not expanded here.
    # Other flags clang does not know are dropped by the runner, with a note.
    return not (flag.startswith("-W") or flag.startswith("-pedantic") or "$(" in flag)

# buildifier: disable=native-cc-info
# CcInfo is built into Bazel 4.2.3, and loading it would tie the gate to one
# rules_cc; consumers bring their own.
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
    elif lang == "cuda":
        args = _CUDA_ARGS + ["-std=c++17"]
        args += [f for f in frag.cxxopts if _flag_ok(f) and not f.startswith("-std=")]
    else:
        args = ["-x", "c++", "-std=c++17"] + [f for f in frag.cxxopts if _flag_ok(f)]
    args += [f for f in frag.copts if _flag_ok(f)]
    args += [f for f in getattr(ctx.rule.attr, "copts", []) if _flag_ok(f) and type(f) == "string"]
    args += ["-D" + d for d in defines]
    for inc in cc.includes:
        args += ["-I", inc]
    for inc in cc.quote_includes:
        args += ["-iquote", inc]
    for inc in cc.system_includes:
        # Bazel passes a cc_library's `includes` as -isystem. The runner searches every directory of the
        # main workspace as a user one, whatever flag named it (it can resolve absolute paths; analysis
        # cannot), so no file of this workspace is a system header, whose statics the check skips.
        args += ["-isystem", inc]
    return args

def _lint_files(ctx, is_cc, via_includers):
    """The files of this target to check, and the assembly files, which are not.

    Returns (files, unchecked): (file, lang) for every source and header of this
    target that lives in this workspace, written or generated, and the assembly
    files, which are listed but not parsed.
    """
    srcs, unchecked = [], []
    for attr_name in ["srcs", "hdrs", "textual_hdrs"] if is_cc else ["srcs"]:
        for f in getattr(ctx.rule.files, attr_name, []):
            if f.owner.workspace_root:
                continue
            if f.extension in _ASM_EXTS:
                if is_cc:
                    unchecked.append(f.short_path)
                continue
            if attr_name == "textual_hdrs":
                continue  # checked through its includers
            srcs.append(f)
    has_cxx = [f for f in srcs if f.extension in _CXX_EXTS + _CU_EXTS]
    has_cu = [f for f in srcs if f.extension in _CU_EXTS]
    out = []
    for f in srcs:
        if f.extension in _C_EXTS and is_cc:
            out.append((f, "c"))
        elif f.extension in _CXX_EXTS and is_cc:
            out.append((f, "c++"))
        elif f.extension in _CU_EXTS:
            out.append((f, "cuda"))
        elif f.extension in _HDR_EXTS and is_cc and not via_includers:
            if f.extension == "cuh" or has_cu:
                out.append((f, "cuda"))
            else:
                out.append((f, "c++" if (has_cxx or f.extension in _CXX_HDR_EXTS) else "c"))
    return out, unchecked

def _statics_options(ctx):
    """The runner's arguments for the check options and CUDA parses the gate's build settings name."""
    args = []
    for option, attr_name in [("LifecycleFiles", "_lifecycle_files"), ("CudaHostFiles", "_cuda_host_files")]:
        value = getattr(ctx.attr, attr_name)[AtlasSettingInfo].value
        if value:
            args += ["--option", "%s=%s" % (option, value)]
    for arch in ctx.attr._cuda_archs[AtlasSettingInfo].value:
        args += ["--cuda-arch", arch]
    return args

def _declare_batch(ctx, mode, files, cc):
    """Declares one lint action for the files of a target.

    One Python start, one tool process per file (per parse for CUDA: host side
    and each architecture's device side).

    Returns (text, fixes, sarif): the report files.
    """
    text, fixes, sarif = [], [], []
    runner = ctx.file._runner
    tool_inputs = [runner, ctx.file._sarif]
    if mode != "cppcheck":
        tool_inputs += [ctx.file._clang_tidy, ctx.file._config, ctx.file._version]
    plugin = None
    if mode == "statics":
        plugin = [f for f in ctx.attr._plugin.files.to_list() if f.extension == "so"][0]
        tool_inputs.append(plugin)
    cuda_files = ctx.files._cuda_stub
    stand_ins = ctx.files._cuda_stand_ins if mode == "statics" else []
    cuda_dir = cuda_files[0].dirname if cuda_files else "lint/cuda"
    units, outputs, srcs, seen, has_cuda = [], [], [], {}, False
    for src, lang in files:
        # The standard gates cover Atlas's written C sources; the statics gate covers C, C++ and CUDA,
        # written or generated (a generated file is data, or another tool's code, to the standard ones).
        if src.path in seen or (mode != "statics" and (lang != "c" or not src.is_source)):
            continue

        # cppcheck sees a header through the sources that include it: alone, every struct member of an
        # interface header would read as unused.
        if mode == "cppcheck" and src.extension not in _C_EXTS:
            continue
        seen[src.path] = True
        stem = "%s.%s/%s" % (ctx.label.name, mode, src.short_path)
        out_text = ctx.actions.declare_file(stem + ".txt")
        out_sarif = ctx.actions.declare_file(stem + ".sarif")
        outputs += [out_text, out_sarif]
        out_fixes = None
        if mode != "cppcheck":
            out_fixes = ctx.actions.declare_file(stem + ".fixes.yaml")
            outputs.append(out_fixes)
            fixes.append(out_fixes)
        has_cuda = has_cuda or lang == "cuda"
        units.append(struct(
            src = src.path,
            text = out_text.path,
            sarif = out_sarif.path,
            fixes = out_fixes.path if out_fixes else "",
            args = _compile_args(ctx, cc, lang, mode),
        ))
        srcs.append(src)
        text.append(out_text)
        sarif.append(out_sarif)
    if not units:
        return text, fixes, sarif
    batch = ctx.actions.declare_file("%s.%s/batch.json" % (ctx.label.name, mode))
    ctx.actions.write(batch, struct(units = units).to_json())
    args = ["-I", runner.path, "--mode", mode, "--batch", batch.path]  # -I: no user site, no PYTHON*
    if mode == "cppcheck":
        args += ["--tool", _CPPCHECK]
    else:
        args += [
            "--tool",
            ctx.file._clang_tidy.path,
            "--config",
            ctx.file._config.path,
            "--version-file",
            ctx.file._version.path,
        ]
    if plugin:
        args += ["--plugin", plugin.path] + _statics_options(ctx)
    if has_cuda:
        # The stand-in for the toolkit's headers: the runner keeps it a system directory (it is the gate's
        # own, and only its declared files are inputs); a consumer's stand-ins are searched first.
        args += ["--cuda-stub", cuda_dir]
        for d in sorted({f.dirname: True for f in stand_ins}.keys()):
            args += ["--cuda-extra", d]
    ctx.actions.run(
        executable = _PYTHON,
        arguments = args,
        inputs = depset(
            srcs + tool_inputs + [batch] + (cuda_files + stand_ins if has_cuda else []),
            transitive = [cc.headers],
        ),
        outputs = outputs,
        mnemonic = {"statics": "AtlasStatics", "tidy": "AtlasClangTidy", "cppcheck": "AtlasCppcheck"}[mode],
        progress_message = "%s %s (%d file%s)" % (mode, ctx.label, len(units), "" if len(units) == 1 else "s"),
    )
    return text, fixes, sarif

def _run_gate(ctx, reports, manifest_name, args, baseline, output, mnemonic, progress, extra_inputs = []):
    """Runs lint/statics_gate.py over `reports` (listed in a manifest file) for atlas-stray-statics."""
    manifest = ctx.actions.declare_file(manifest_name)
    ctx.actions.write(manifest, "\n".join([f.path for f in reports]) + "\n")
    gate_args = ["-I", ctx.file._gate.path, "--manifest", manifest.path, "--check", "atlas-stray-statics"] + args
    inputs = [ctx.file._gate, ctx.file._sarif, manifest] + extra_inputs + reports
    if baseline:
        gate_args += ["--baseline", baseline.path]
        inputs.append(baseline)
    ctx.actions.run(
        executable = _PYTHON,
        arguments = gate_args,
        inputs = inputs,
        outputs = [output],
        mnemonic = mnemonic,
        progress_message = progress,
    )

def _impl(target, ctx, mode):
    transitive = []
    for attr_name in ["deps", "srcs", "hdrs"]:
        for dep in getattr(ctx.rule.attr, attr_name, []):
            if type(dep) == "Target" and AtlasLintInfo in dep:
                transitive.append(dep[AtlasLintInfo])
    text, fixes, sarif, visited, skipped, via, excluded = [], [], [], [], [], [], []
    cc = None
    tags = getattr(ctx.rule.attr, "tags", [])
    is_cc = ctx.rule.kind in _CC_KINDS
    label = str(ctx.label)
    if ctx.label.workspace_root:
        pass  # external repositories are not ours to gate
    elif _SKIP_TAG in tags:
        if is_cc:
            skipped.append(label)
    else:
        via_includers = _VIA_INCLUDERS_TAG in tags
        files, generated = _lint_files(ctx, is_cc, via_includers)
        if not is_cc:
            # Another rule (a genrule running nvcc): its CUDA sources, with its other inputs as headers.
            files = [(f, lang) for f, lang in files if lang == "cuda"]
        if is_cc:
            visited.append(label)
            if via_includers:
                via.append(label)
        excluded += generated
        if is_cc:
            cc = _merge_contexts(target, ctx)
        else:
            cc = struct(
                headers = depset([f for f in getattr(ctx.rule.files, "srcs", [])]),
                defines = [],
                includes = [],
                quote_includes = [".", ctx.bin_dir.path],
                system_includes = [],
            )
        text, fixes, sarif = _declare_batch(ctx, mode, files, cc)
    info = AtlasLintInfo(
        text = depset(text, transitive = [t.text for t in transitive]),
        fixes = depset(fixes, transitive = [t.fixes for t in transitive]),
        sarif = depset(sarif, transitive = [t.sarif for t in transitive]),
        visited = depset(visited, transitive = [t.visited for t in transitive]),
        skipped = depset(skipped, transitive = [t.skipped for t in transitive]),
        via_includers = depset(via, transitive = [t.via_includers for t in transitive]),
        excluded = depset(excluded, transitive = [t.excluded for t in transitive]),
    )
    prefix = {"statics": "atlas_statics", "tidy": "atlas_tidy", "cppcheck": "atlas_cppcheck"}[mode]
    groups = {
        prefix: depset(transitive = [info.text, info.fixes, info.sarif]),
        prefix + "_text": info.text,
        prefix + "_fixes": info.fixes,
        prefix + "_sarif": info.sarif,
    }
    if mode == "statics" and text:
        # Pattern mode (bazel build //... --aspects=... --output_groups=atlas_statics_gate): this target's
        # own files judged against the baseline; the build fails on a straggler it does not list.
        stamp = ctx.actions.declare_file("%s.statics/gate.ok" % ctx.label.name)
        _run_gate(
            ctx,
            reports = text,
            manifest_name = "%s.statics/reports" % ctx.label.name,
            args = ["--no-stale", "--stamp", stamp.path],
            baseline = ctx.file._baseline,
            output = stamp,
            mnemonic = "AtlasStaticsGate",
            progress = "atlas-stray-statics gate %s" % label,
        )
        groups["atlas_statics_gate"] = depset([stamp])
    elif mode == "statics":
        groups["atlas_statics_gate"] = depset()
    return [info, OutputGroupInfo(**groups)]

def _statics_impl(target, ctx):
    return _impl(target, ctx, "statics")

def _tidy_impl(target, ctx):
    return _impl(target, ctx, "tidy")

def _cppcheck_impl(target, ctx):
    return _impl(target, ctx, "cppcheck")

_RUNNER = attr.label(default = Label("//lint:tidy_action.py"), allow_single_file = True)
_SARIF = attr.label(default = Label("//lint:sarif.py"), allow_single_file = True)
_GATE = attr.label(default = Label("//lint:statics_gate.py"), allow_single_file = True)
_CUDA_STUB = attr.label(default = Label("//lint:cuda_stub"))
_CLANG_TIDY = attr.label(default = Label("@atlas_llvm//:bin/clang-tidy"), allow_single_file = True)
_VERSION = attr.label(default = Label("//lint:clang_tidy_version"), allow_single_file = True)

_ATTR_ASPECTS = ["deps", "srcs", "hdrs"]

atlas_statics_aspect = aspect(
    implementation = _statics_impl,
    attr_aspects = _ATTR_ASPECTS,
    apply_to_generating_rules = True,
    fragments = ["cpp"],
    attrs = {
        "_runner": _RUNNER,
        "_sarif": _SARIF,
        "_gate": _GATE,
        "_cuda_stub": _CUDA_STUB,
        "_baseline": attr.label(default = Label("//lint:statics_baseline"), allow_single_file = True),
        "_clang_tidy": _CLANG_TIDY,
        "_plugin": attr.label(default = Label("//lint:atlas_statics_plugin"), cfg = "exec"),
        "_config": attr.label(default = Label("//lint:statics_config"), allow_single_file = True),
        "_version": _VERSION,
        "_lifecycle_files": attr.label(default = Label("//lint:lifecycle_files")),
        "_cuda_host_files": attr.label(default = Label("//lint:cuda_host_files")),
        "_cuda_archs": attr.label(default = Label("//lint:cuda_archs")),
        "_cuda_stand_ins": attr.label(default = Label("//lint:cuda_stand_ins")),
    },
    doc = "Runs clang-tidy with only atlas-stray-statics over every cc target it visits.",
)

atlas_tidy_aspect = aspect(
    implementation = _tidy_impl,
    attr_aspects = _ATTR_ASPECTS,
    fragments = ["cpp"],
    attrs = {
        "_runner": _RUNNER,
        "_sarif": _SARIF,
        "_cuda_stub": _CUDA_STUB,
        "_clang_tidy": _CLANG_TIDY,
        "_config": attr.label(default = Label("//lint:standard_checks.clang-tidy"), allow_single_file = True),
        "_version": _VERSION,
    },
    doc = "Runs clang-tidy with Atlas's curated standard checks over every cc target it visits.",
)

atlas_cppcheck_aspect = aspect(
    implementation = _cppcheck_impl,
    attr_aspects = _ATTR_ASPECTS,
    fragments = ["cpp"],
    attrs = {"_runner": _RUNNER, "_sarif": _SARIF, "_cuda_stub": _CUDA_STUB},
    doc = "Runs cppcheck (warning, style, performance, portability) over every cc target it visits.",
)

def _gate_test_impl(ctx, check, update = False):
    infos = [t[AtlasLintInfo] for t in ctx.attr.targets]
    reports = depset(transitive = [i.text for i in infos])
    name = ctx.label.name
    manifest = ctx.actions.declare_file(name + ".reports")
    ctx.actions.write(manifest, "\n".join([f.short_path for f in reports.to_list()]) + "\n")
    visited = ctx.actions.declare_file(name + ".visited")
    ctx.actions.write(visited, "\n".join(depset(transitive = [i.visited for i in infos]).to_list()) + "\n")
    skipped = ctx.actions.declare_file(name + ".skipped")
    ctx.actions.write(skipped, "\n".join(depset(transitive = [i.skipped for i in infos]).to_list()) + "\n")
    via = ctx.actions.declare_file(name + ".via_includers")
    ctx.actions.write(via, "\n".join(depset(transitive = [i.via_includers for i in infos]).to_list()) + "\n")
    excluded = ctx.actions.declare_file(name + ".excluded")
    ctx.actions.write(excluded, "\n".join(depset(transitive = [i.excluded for i in infos]).to_list()) + "\n")
    cmd = [
        _PYTHON,
        "-I",
        ctx.file._gate.short_path,
        "--manifest",
        manifest.short_path,
        "--name",
        name,
        "--skipped",
        skipped.short_path,
        "--via-includers",
        via.short_path,
        "--excluded",
        excluded.short_path,
    ]
    runfiles = [ctx.file._gate, ctx.file._sarif, manifest, visited, skipped, via, excluded]
    if check:
        cmd += ["--check", check]
    version = getattr(ctx.file, "_version", None)
    if version:
        cmd += ["--tool-version-file", version.short_path]
        runfiles.append(version)
    baseline = getattr(ctx.file, "baseline", None)
    if baseline:
        cmd += ["--baseline", baseline.short_path]
        runfiles.append(baseline)
    script = ctx.actions.declare_file(name + ".sh")
    quoted = " ".join(["'%s'" % c for c in cmd])
    if update:
        if not baseline:
            fail("update_baseline needs a baseline file")
        body = 'exec %s --update-baseline "${BUILD_WORKSPACE_DIRECTORY:?run me with bazel run}/%s" "$@"\n' % (
            quoted,
            baseline.short_path,
        )
    else:
        body = "exec " + quoted + ' "$@"\n'
    ctx.actions.write(script, "#!/bin/sh\n" + body, is_executable = True)
    return [DefaultInfo(
        executable = script,
        files = depset([visited]),
        runfiles = ctx.runfiles(files = runfiles, transitive_files = reports),
    ), OutputGroupInfo(atlas_statics_visited = depset([visited]))]

def _statics_test_impl(ctx):
    return _gate_test_impl(ctx, "atlas-stray-statics")

def _statics_update_impl(ctx):
    return _gate_test_impl(ctx, "atlas-stray-statics", update = True)

def _tidy_test_impl(ctx):
    return _gate_test_impl(ctx, None)

# The check's options a gate rule takes, merged over the build settings of the same names (lint/BUILD), which
# default to the configuration file's values: an empty attribute keeps them.
_OPTION_ATTRS = {
    "lifecycle_files": attr.string(doc = "regex of the workspace-relative paths where LIFECYCLE marks are " +
                                         "allowed (the check's LifecycleFiles)"),
    "cuda_host_files": attr.string(doc = "regex of the workspace-relative paths where CUDA_HOST marks are " +
                                         "allowed (the check's CudaHostFiles)"),
    "cuda_archs": attr.string_list(doc = "sm_NN architectures whose device-side code is parsed too " +
                                         "(default: sm_80, sm_90)"),
    "cuda_stand_ins": attr.label(allow_files = True, doc = "the workspace's own stand-in headers for CUDA " +
                                                           "toolkit headers (searched before lint/cuda/)"),
    "_allowlist_function_transition": attr.label(
        default = "@bazel_tools//tools/allowlists/function_transition_allowlist",
    ),
}

_STATICS_ATTRS = dict({
    "targets": attr.label_list(
        aspects = [atlas_statics_aspect],
        cfg = gate_options_transition,
        doc = "cc targets to gate (their deps too)",
    ),
    "baseline": attr.label(allow_single_file = True, doc = "legacy stragglers: lines `file function name`"),
    "_gate": _GATE,
    "_sarif": _SARIF,
    "_version": _VERSION,
}, **_OPTION_ATTRS)

atlas_statics_baseline_update = rule(
    implementation = _statics_update_impl,
    executable = True,
    attrs = _STATICS_ATTRS,
    doc = "`bazel run` rewrites `baseline` (in the source tree) to list exactly the current stragglers of " +
          "`targets`.",
)

atlas_statics_test = rule(
    implementation = _statics_test_impl,
    test = True,
    attrs = _STATICS_ATTRS,
    doc = "Fails on every mutable static outside the five categories that the baseline does not list, " +
          "and on every baseline entry that no longer exists.",
)

atlas_tidy_test = rule(
    implementation = _tidy_test_impl,
    test = True,
    attrs = {
        "targets": attr.label_list(aspects = [atlas_tidy_aspect]),
        "_gate": _GATE,
        "_sarif": _SARIF,
    },
    doc = "Fails on any finding of the curated standard clang-tidy checks.",
)

atlas_cppcheck_test = rule(
    implementation = _tidy_test_impl,
    test = True,
    attrs = {
        "targets": attr.label_list(aspects = [atlas_cppcheck_aspect]),
        "_gate": _GATE,
        "_sarif": _SARIF,
    },
    doc = "Fails on any cppcheck finding (warning, style, performance, portability).",
)

def _reports_impl(ctx):
    infos = [t[AtlasLintInfo] for t in ctx.attr.targets]
    files = depset(transitive = [i.text for i in infos] + [i.fixes for i in infos] + [i.sarif for i in infos])
    texts = depset(transitive = [i.text for i in infos]).to_list()

    # One merged SARIF 2.1.0 log (what GitHub code scanning wants from one upload), with the baseline's
    # findings marked as suppressed.
    merged = ctx.actions.declare_file(ctx.label.name + ".sarif")
    _run_gate(
        ctx,
        reports = texts,
        manifest_name = ctx.label.name + ".sarif.reports",
        args = ["--sarif", merged.path, "--report-only", "--tool-version-file", ctx.file._version.path],
        extra_inputs = [ctx.file._version],
        baseline = ctx.file.baseline,
        output = merged,
        mnemonic = "AtlasStaticsSarif",
        progress = "merging SARIF for %s" % ctx.label,
    )
    all_files = depset([merged], transitive = [files])
    return [
        DefaultInfo(files = all_files, runfiles = ctx.runfiles(transitive_files = all_files)),
        OutputGroupInfo(atlas_statics_merged_sarif = depset([merged])),
    ]

atlas_statics_reports = rule(
    implementation = _reports_impl,
    attrs = dict({
        "targets": attr.label_list(aspects = [atlas_statics_aspect], cfg = gate_options_transition),
        "baseline": attr.label(allow_single_file = True, doc = "findings to mark as suppressed in the SARIF"),
        "_gate": _GATE,
        "_sarif": _SARIF,
        "_version": _VERSION,
    }, **_OPTION_ATTRS),
    doc = "The atlas-stray-statics reports (text, fixes YAML, per-file SARIF) of targets and one merged " +
          "SARIF 2.1.0 log `<name>.sarif`, as files: CI artifacts, or data for a test.",
)
