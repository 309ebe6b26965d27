#!/usr/bin/python3
"""One lint action of //lint:defs.bzl: runs clang-tidy (or cppcheck) on one file and writes its reports.

Outputs, all with workspace-relative paths:
  --text   the tool's diagnostics in clang's `file:line:col: level: message [check]` form
  --fixes  clang-tidy's --export-fixes YAML (an empty document when there is nothing to fix)
  --sarif  SARIF 2.1.0 built from the text report (lint/sarif.py; the gate merges them into one log)

The action never fails on findings (the test rules judge them). What the runner adds:
  * atlas-stray-statics reports at error level, which clang-tidy never lets a NOLINT comment suppress;
    the text report turns them back into warnings (a finding, judged against the baseline).
  * Every include directory of the main workspace is searched as a user one (-I), whatever flag made
    it a system one (-isystem, -idirafter, -Xclang -internal-isystem, ...) and however it is spelled
    (relative, or absolute into the source tree or the execution root, through symbolic links): clang
    skips a system header's statics. External repositories, the toolchain's and the host's directories,
    and the gate's CUDA stand-in (--cuda-stub) stay system. --system-header-prefix is dropped; a sysroot
    in the workspace is refused with an error that names it. Response files (@FILE) in the compile
    arguments are expanded first, as the compiler does, so their flags are judged the same way.
  * Findings in files outside the workspace (system headers, external repositories, generated files)
    are dropped; findings in headers and textual includes of the workspace are kept (the gate merges
    the same finding reported from several files into one). A header reached through a link under
    bazel-out (_virtual_includes: include_prefix, strip_include_prefix) is reported at its source path.
  * Compiler flags the clang frontend does not know (a gcc-only copt) are dropped and the file is
    checked again; each dropped flag becomes a `# note:` line that the gate prints in its summary.
  * When the tool fails without saying why in a diagnostic, the text report gets an `error:` line that
    quotes its first error lines, so the gate fails and the test log shows the cause.
Standard library only.
"""

import argparse
import concurrent.futures
import json
import os
import re
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sarif  # noqa: E402  (lint/sarif.py, next to this file)

DIAG = re.compile(
    r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): (?P<level>warning|error|note|style|performance|"
    r"portability|information|fatal error): (?P<msg>.*?)(?: \[(?P<check>[^\]\s]+)\])?$"
)
UNKNOWN_ARG = re.compile(r"unknown argument:? '([^']+)'")
OUR_CHECK = "atlas-stray-statics"
# The finding for a static in a preprocessor branch the parse skipped.
INACTIVE = "is not checked: it is in a preprocessor branch this parse skipped"
SYSTEM_DIR_CHECK = "atlas-lint-system-dir"

# Flags that put an include directory in a system group, with the flag that searches it as a user one.
# The cc1 spellings reach clang through -Xclang or -Xpreprocessor (and -Wp,). A value of None marks a
# flag that makes nothing system: listed so that it is never read as a longer system flag's joined form
# (-iwithprefixbefore is not -iwithprefix with the directory "before...").
DIR_FLAGS = {
    "-isystem": "-I", "-idirafter": "-I", "-isystem-after": "-I", "-cxx-isystem": "-I",
    "-c-isystem": "-I", "-objc-isystem": "-I", "-objcxx-isystem": "-I",
    "-internal-isystem": "-I", "-internal-externc-isystem": "-I",
    "-iwithprefix": "-I", "-iwithsysroot": "-I", "-iframework": "-F", "-iframeworkwithsysroot": "-F",
    "-iwithprefixbefore": None,
}
# Make headers system by their #include spelling: they change no semantics, so they are dropped.
PREFIX_FLAGS = ("--system-header-prefix", "--no-system-header-prefix")
SYSROOT_FLAGS = ("--sysroot", "-isysroot")
FORWARDERS = ("-Xclang", "-Xpreprocessor")
VALUE_FLAGS = tuple(DIR_FLAGS) + PREFIX_FLAGS + SYSROOT_FLAGS + ("-iprefix",)


def relativize(text, roots):
    for root in roots:
        text = text.replace(root + "/", "")
    # Headers found through `-iquote .` are spelled ./runtime/x.h; one file, one spelling.
    return re.sub(r"(^|[\s'\"])\./(?=[\w])", r"\1", text, flags=re.M)


def parse_diagnostics(text):
    """[(file, line, col, level, message, check)] in order."""
    out = []
    for raw in text.splitlines():
        m = DIAG.match(raw)
        if m:
            out.append((m["file"], int(m["line"]), int(m["col"]), m["level"], m["msg"], m["check"] or ""))
    return out


def in_workspace(path):
    return not (path.startswith("/") or path.startswith("external/") or path.startswith("bazel-out/")
                or path.startswith("<"))


def execution_roots(inputs):
    """Absolute directories that stand for the execution root: the working directory, and where the
    declared inputs named relative to it really are (the source tree for a source file, the real
    execution root for a generated one, when the action runs in a sandbox)."""
    roots = {os.getcwd(), os.path.realpath(os.getcwd())}
    for path in inputs:
        if path and not os.path.isabs(path):
            norm, real = os.path.normpath(path), os.path.realpath(path)
            if real.endswith("/" + norm) and len(real) > len(norm) + 1:
                roots.add(real[:-len(norm) - 1])
    return sorted(roots, key=len, reverse=True)


def execroot_relative(path, roots):
    """path relative to the execution root (normalised), or None for a path outside every root (the
    toolchain's, the host's). An absolute path counts as under a root as spelled or once its links are
    resolved."""
    if not os.path.isabs(path):
        return os.path.normpath(path)
    for candidate in (os.path.normpath(path), os.path.realpath(path)):
        for root in roots:
            if candidate == root or candidate.startswith(root + "/"):
                return os.path.relpath(candidate, root)
    return None


def main_workspace_dir(path, roots):
    """The execution-root-relative form of a directory of the main workspace, or None: outside every
    root, an external repository's (external/..., ../repo, bazel-out/<config>/bin/external/...)."""
    rel = execroot_relative(path, roots)
    if rel is None or rel in ("external", "..") or rel.startswith("external/") or rel.startswith("../"):
        return None
    parts = rel.split("/")
    if parts[0] == "bazel-out" and len(parts) >= 4 and parts[3] == "external":
        return None
    return rel


def source_path(path, roots):
    """The workspace-relative path of a source file of the main workspace that clang named as path, or
    None. A link under bazel-out (Bazel's _virtual_includes for include_prefix and strip_include_prefix)
    stands for the file it points to: one file, one path, which a baseline can list. A file generated in this
workspace is named by its package path (bazel-out/k8-fastbuild/bin/gen/x.c is gen/x.c)."""
    if path.startswith("<"):
        return None
    rel = main_workspace_dir(path, roots)
    if rel is not None and (rel == "bazel-out" or rel.startswith("bazel-out/")):
        real = main_workspace_dir(os.path.realpath(path), roots)
        if real is not None and not (real == "bazel-out" or real.startswith("bazel-out/")):
            return real
        # A file generated in this workspace: named by its package path, as Bazel's short_path.
        m = re.match(r"bazel-out/[^/]+/(?:bin|genfiles)/(.+)$", rel)
        return m.group(1) if m else None
    return rel


def split_flag(flag):
    """(name, joined value or None) of a flag that user_include_dirs reads, or (None, None)."""
    if flag in VALUE_FLAGS:
        return flag, None
    if "=" in flag and flag.split("=", 1)[0] in PREFIX_FLAGS + SYSROOT_FLAGS:
        name, value = flag.split("=", 1)
        return name, value
    # Joined: -isystemDIR. The longest name wins (-isystem-afterDIR is not -isystem with "-afterDIR").
    names = [f for f in tuple(DIR_FLAGS) + ("-isysroot", "-iprefix") if flag.startswith(f)]
    if names:
        name = max(names, key=len)
        return name, flag[len(name):]
    return None, None


def expand_response_files(args, errors, depth=0, base=None):
    """The arguments with each @FILE replaced by the arguments it holds (GNU quoting, as the compiler
    reads them on Linux). The compiler expands them and clang-tidy 14 does not, so a copt naming one
    failed the file with an include that was not found; expanded here, its flags are judged as any
    other (a system directory inside one becomes a user one). A nested @FILE is looked for beside the
    file that names it, then where the action runs. An @FILE that cannot be read stays as it is."""
    out = []
    for arg in args:
        if not arg.startswith("@") or len(arg) == 1:
            out.append(arg)
            continue
        name = arg[1:]
        path = os.path.join(base, name) if base and not os.path.isabs(name) and \
            os.path.exists(os.path.join(base, name)) else name
        try:
            with open(path, encoding="utf-8", errors="surrogateescape") as f:
                text = f.read()
        except OSError:
            out.append(arg)
            continue
        if depth >= 16:
            errors.append("response file '%s' nests more than 16 deep" % name)
            return out
        try:
            inner = shlex.split(text, comments=False, posix=True)
        except ValueError as e:
            errors.append("response file '%s' cannot be read as arguments: %s" % (name, e))
            continue
        out += expand_response_files(inner, errors, depth + 1, os.path.dirname(path))
    return out


def user_include_dirs(args, roots):
    """(args, errors): the compile arguments with every main-workspace directory that a flag made a
    system one searched as a user one, and the system-header-prefix flags dropped."""
    tokens = []  # [stream, value]: "" for the driver's own arguments, else the forwarder
    i = 0
    while i < len(args):
        if args[i] in FORWARDERS and i + 1 < len(args):
            tokens.append([args[i], args[i + 1]])
            i += 2
        elif args[i].startswith("-Wp,"):
            tokens += [["-Xpreprocessor", v] for v in args[i][4:].split(",")]
            i += 1
        else:
            tokens.append(["", args[i]])
            i += 1
    # A separate value is the next value of the same stream: clang hands all -Xclang values to cc1 in
    # order, whatever driver arguments stand between them.
    by_stream = {}
    for index, (stream, _) in enumerate(tokens):
        by_stream.setdefault(stream, []).append(index)
    replace, errors, iprefix, sysroot = {}, [], "", None
    for stream, indices in by_stream.items():
        k = 0
        while k < len(indices):
            flag = tokens[indices[k]][1]
            has_next = k + 1 < len(indices)
            value = tokens[indices[k + 1]][1] if has_next else None
            name, joined = split_flag(flag)
            if name is None:
                k += 1
                continue
            if joined is None and not has_next:
                break  # clang reports the missing value
            dir_value = joined if joined is not None else value
            spent = [indices[k]] if joined is not None else [indices[k], indices[k + 1]]
            k += len(spent)
            if name == "-iprefix":
                iprefix = dir_value
            elif name in PREFIX_FLAGS:
                for index in spent:
                    replace[index] = []
            elif name in SYSROOT_FLAGS:
                sysroot = dir_value
                if main_workspace_dir(dir_value, roots) is not None:
                    errors.append("%s names '%s', a directory of the main workspace, as the sysroot: the "
                                  "headers clang finds there would be system headers, which the statics "
                                  "check skips; name a sysroot outside the workspace (an external "
                                  "repository)" % (name, dir_value))
            elif DIR_FLAGS[name]:
                path = dir_value
                if name == "-iwithprefix":
                    path = iprefix + dir_value
                elif name.endswith("withsysroot") and sysroot and os.path.isabs(dir_value):
                    path = sysroot + dir_value
                rel = main_workspace_dir(path, roots)
                if rel is not None:
                    # Relative to the execution root when it is there (declared inputs, relative paths
                    # in the reports); as named otherwise.
                    user = rel if os.path.isdir(rel) or not os.path.isabs(path) else path
                    replace[spent[0]] = [DIR_FLAGS[name], user]
                    for index in spent[1:]:
                        replace[index] = []
    out = []
    for index, (stream, value) in enumerate(tokens):
        if index in replace:
            out += replace[index]
        else:
            out += [stream, value] if stream else [value]
    return out, errors


def spelled(path, roots):
    """One file, one spelling: `#include "./x.c"`, `a/../b.h` and a link under _virtual_includes name
    files too. Resolved before the workspace test: bazel-out/../x.inc is x.inc, in the workspace."""
    if path.startswith("<"):
        return path
    return source_path(path, roots) or os.path.normpath(path)


def statics_report(text, roots):
    """Keeps the diagnostic lines: our findings as warnings (dropping those outside the workspace, with
    their notes), clang's own errors as they are."""
    lines, keep_notes = [], False
    for raw in text.splitlines():
        m = DIAG.match(raw)
        if not m:
            continue
        path = spelled(m["file"], roots)
        # Paths quoted in a message (the file a static is spelled in); not the check's path regexes.
        msg = re.sub(r"'([^'\s]*/[^'\s]*)'", lambda q: "'%s'" % (
            spelled(q.group(1), roots) if re.search(r"/\.{1,2}/", q.group(1)) or os.path.isfile(q.group(1))
            else q.group(1)), m["msg"])
        raw = "%s:%s:%s: %s: %s%s" % (path, m["line"], m["col"], m["level"], msg,
                                       " [%s]" % m["check"] if m["check"] else "")
        m = DIAG.match(raw)
        if m["level"] == "note":
            if keep_notes:
                lines.append(raw)
            continue
        keep_notes = False
        if m["check"] == OUR_CHECK:
            if not in_workspace(m["file"]):
                continue
            raw = "%s:%s:%s: warning: %s [%s]" % (m["file"], m["line"], m["col"], m["msg"], OUR_CHECK)
        lines.append(raw)
        keep_notes = True
    return lines


def first_errors(err, limit=8):
    picked = [l for l in err.splitlines() if "error" in l.lower() and l.strip()]
    return " | ".join(picked[:limit])[:1500]


# clang 14 knows CUDA architectures up to sm_86: a newer one is parsed for sm_86 with __CUDA_ARCH__ set to
# its own value, so its `#if __CUDA_ARCH__ >= 900` branches are what the parse sees.
CLANG14_CUDA_ARCHS = {20, 21, 30, 32, 35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86}


def device_args(args, arch):
    """The CUDA compile arguments of a device-side parse for arch (sm_NN) instead of the host-side one."""
    m = re.fullmatch(r"sm_(\d+)a?", arch)
    if not m:
        raise ValueError("CUDA architecture '%s' is not of the form sm_NN" % arch)
    number = int(m.group(1))
    mode = ["--cuda-device-only", "--cuda-gpu-arch=" + arch]
    if number not in CLANG14_CUDA_ARCHS:
        mode = ["--cuda-device-only", "--cuda-gpu-arch=sm_86", "-U__CUDA_ARCH__", "-D__CUDA_ARCH__=%d" % (number * 10)]
    out = []
    for x in args:
        out += mode if x == "--cuda-host-only" else [x]
    return out


def merge_findings(lines, more):
    """lines and the findings of more that lines does not hold yet, each with its notes (the host and the
    device parses of a CUDA file see most declarations alike)."""
    groups = []
    for line in more:
        if DIAG.match(line)["level"] == "note" and groups:
            groups[-1].append(line)
        else:
            groups.append([line])
    out = list(lines)
    for group in groups:
        if group[0] not in lines:
            out += group
    return out


def inactive_key(line):
    m = DIAG.match(line)
    return (m["file"], m["line"], m["col"]) if m else None


def drop_findings(lines, drop):
    """lines without the findings drop(line) selects, and without their notes."""
    out, dropping = [], False
    for line in lines:
        m = DIAG.match(line)
        if m and m["level"] != "note":
            dropping = drop(line)
        if not dropping:
            out.append(line)
    return out


def merged_config(path, options, out_path):
    """A copy of the clang-tidy configuration at path with the check options given as KEY=VALUE appended at
    the end of its CheckOptions (a later entry wins), or path itself when there are none."""
    if not options:
        return path
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    entries = []
    for option in options:
        key, _, value = option.partition("=")
        if "." not in key:
            key = OUR_CHECK + "." + key
        entries += ["  - key: %s" % key, "    value: '%s'" % value.replace("'", "''")]
    at = next((i for i, l in enumerate(lines) if re.match(r"^CheckOptions:\s*(#.*)?$", l)), None)
    if at is None:
        lines += ["CheckOptions:"] + entries
    else:
        end = at + 1
        while end < len(lines) and (not lines[end].strip() or lines[end][0] in " \t#-"):
            end += 1
        lines[end:end] = entries
    with open(out_path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return out_path


def tool_version(a, env):
    """The tool's version: from --version-file (one action wrote it for the whole build), else asked once."""
    if a.mode == "cppcheck":
        return ""
    if a.version_file:
        with open(a.version_file, encoding="utf-8") as f:
            text = f.read()
    else:
        text = subprocess.run([a.tool, "--version"], stdout=subprocess.PIPE, env=env,
                              check=False).stdout.decode()
    m = re.search(r"version (\d+\.\d+\.\d+)", text)
    return m.group(1) if m else text.strip()


class Runner:
    """Runs the tool for the files of one action, sharing what does not change between them."""

    def __init__(self, a):
        self.a = a
        self.env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}
        self.roots = execution_roots([a.plugin, a.config] + [u["src"] for u in a.units])
        self.version = tool_version(a, self.env)

    def command(self, src, config, fixes_tmp, args):
        a = self.a
        if a.mode == "cppcheck":
            cmd = [a.tool, "--enable=warning,style,performance,portability", "--error-exitcode=1",
                   "--inline-suppr", "--quiet",
                   # constParameter: our handles are pointer typedefs (atlas_status, CUstream) that cannot be
                   # spelled pointer-to-const, and vtable callbacks must match their function pointer type;
                   # cppcheck 2.10 asks for const on both.
                   "--suppress=constParameter",
                   "--template={file}:{line}:{column}: {severity}: {message} [cppcheck-{id}]"]
            return cmd + args + [src]
        cmd = [a.tool, "--quiet", "--config-file=" + config, "--export-fixes=" + fixes_tmp]
        if a.mode == "statics":
            # Our check decides what to report in headers and textual includes; the runner keeps the
            # workspace's files.
            cmd.append("--header-filter=.*")
        if a.plugin:
            cmd.append("--load=" + a.plugin)
        return cmd + [src, "--"] + args

    def run(self, src, config, fixes_tmp, args, notes):
        """(proc, out, err, args): one tool process; an unknown compiler flag is dropped and the file run
        again (each drop is a note)."""
        proc, out, err = None, "", ""
        for _ in range(8):
            proc = subprocess.run(self.command(src, config, fixes_tmp, args), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=self.env, check=False)
            out = relativize(proc.stdout.decode("utf-8", "replace"), self.roots)
            err = relativize(proc.stderr.decode("utf-8", "replace"), self.roots)
            if self.a.mode == "cppcheck":
                break
            unknown = [u for u in UNKNOWN_ARG.findall(out + err) if u in args]
            if not unknown:
                break
            for flag in unknown:
                args = [x for x in args if x != flag]
                notes.append("# note: %s: dropped compiler flag '%s': the clang frontend does not know it"
                             % (src, flag))
        return proc, out, err, args

    def check_unit(self, unit):
        a, roots = self.a, self.roots
        src = unit["src"]
        notes, errors = [], []
        fixes_tmp = (unit.get("fixes") or unit["text"]) + ".raw"
        config = merged_config(a.config, a.option, unit["text"] + ".clang-tidy") if a.config else None
        args = expand_response_files(list(unit["args"]), errors)
        if a.mode != "cppcheck":
            args, dir_errors = user_include_dirs(args, roots)
            errors += dir_errors
        if a.mode == "statics":
            # clang-tidy defines __clang_analyzer__; a compiler does not. Parse what the compiler builds.
            args = args + ["-U__clang_analyzer__"]
        cuda = "--cuda-host-only" in args
        if cuda and a.cuda_stub:
            stubs = []
            for extra in a.cuda_extra:  # the consumer's own stand-ins, searched first
                stubs += ["-isystem", extra]
            args = stubs + ["-isystem", a.cuda_stub, "-include", "atlas_cuda_lint.h"] + args
        parses = [None] + (a.cuda_arch if cuda else [])
        proc, out, err, lines, inactive = None, "", "", [], []
        for arch in (parses if not errors else []):
            try:
                parse_args = args if arch is None else device_args(args, arch)
            except ValueError as e:
                errors.append(str(e))
                break
            proc, out, err, parse_args = self.run(src, config, fixes_tmp + (arch or ""), parse_args, notes)
            if arch is None:
                args = parse_args
                proc, out, err = self.retry_header_as_cxx(src, config, fixes_tmp, args, proc, out, err, notes)
            found = self.report_lines(src, proc, out, err)
            inactive.append({inactive_key(l) for l in found if INACTIVE in l})
            lines = merge_findings(lines, found)
            if arch is not None and os.path.exists(fixes_tmp + arch):
                os.remove(fixes_tmp + arch)  # the host parse's fix-its stand for all
        if len(inactive) > 1:
            # A static is unchecked only when every parse skipped its branch (host and device sides of
            # a CUDA file take different ones).
            everywhere = set.intersection(*inactive)
            lines = drop_findings(lines, lambda l: INACTIVE in l and inactive_key(l) not in everywhere)
        if errors:
            # Not run: its findings could not be trusted. An error fails the gate; no baseline hides it.
            lines = ["%s:1:1: error: %s [%s]" % (src, e, SYSTEM_DIR_CHECK) for e in errors]
        if config and config != a.config:
            os.remove(config)
        self.write_reports(unit, list(dict.fromkeys(notes)) + lines, fixes_tmp)

    def retry_header_as_cxx(self, src, config, fixes_tmp, args, proc, out, err, notes):
        if (self.a.mode != "cppcheck" and src.endswith(".h") and "-x" in args and args[args.index("-x") + 1] == "c"
                and re.search(r": (fatal )?error: .*\[clang-diagnostic-error\]", out)):
            # A header of a target without C++ sources that does not compile as C: often a C++ header of
            # a header-only library. Check it as C++ and say so.
            cxx = ["-x", "c++", "-std=c++17"] + [x for x in args[args.index("-x") + 2:] if not x.startswith("-std=")]
            retry = subprocess.run(self.command(src, config, fixes_tmp, cxx), stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, env=self.env, check=False)
            rout = relativize(retry.stdout.decode("utf-8", "replace"), self.roots)
            if not re.search(r": (fatal )?error: .*\[clang-diagnostic-error\]", rout):
                notes.append("# note: %s: checked as C++: it does not compile as C" % src)
                return retry, rout, relativize(retry.stderr.decode("utf-8", "replace"), self.roots)
        return proc, out, err

    def report_lines(self, src, proc, out, err):
        a = self.a
        if a.mode == "cppcheck":
            diags = parse_diagnostics(out + err)
            # Severities become clang levels so every report reads (and parses) the same way.
            lines = ["%s:%d:%d: %s: %s [%s]" % (f, l, c, "error" if lvl == "error" else "warning", msg, chk)
                     for f, l, c, lvl, msg, chk in diags]
            failed = proc.returncode not in (0, 1) or (proc.returncode == 1 and not diags)
        else:
            lines = statics_report(out, self.roots) if a.mode == "statics" else \
                [l for l in out.splitlines() if DIAG.match(l)]
            clang_errors = [l for l in lines if DIAG.match(l)["level"] in ("error", "fatal error")]
            failed = proc.returncode != 0 and not clang_errors and not any(
                DIAG.match(l)["check"] == OUR_CHECK for l in lines)
        if failed:
            lines.append("%s:1:1: error: %s exited with status %d: %s [atlas-lint-tool-failure]" % (
                src, self.tool_name(), proc.returncode, first_errors(out + "\n" + err) or "no output"))
        return lines

    def tool_name(self):
        return "cppcheck" if self.a.mode == "cppcheck" else "clang-tidy"

    def write_reports(self, unit, lines, fixes_tmp):
        a, roots = self.a, self.roots
        text = "\n".join(lines) + ("\n" if lines else "")
        with open(unit["text"], "w", encoding="utf-8") as f:
            f.write(text)
        if unit.get("fixes"):
            if os.path.exists(fixes_tmp):
                with open(fixes_tmp, encoding="utf-8") as f:
                    yaml_text = f.read()
                os.remove(fixes_tmp)
                yaml_text = relativize(yaml_text, roots)
                for root in roots:
                    yaml_text = yaml_text.replace("'" + root + "'", "'.'")
                # Fixes in a header reached through a link apply to the header itself.
                yaml_text = re.sub(r"^(\s*FilePath:\s+)'([^']*)'$", lambda q: "%s'%s'" % (
                    q.group(1), spelled(q.group(2), roots)), yaml_text, flags=re.M)
                if a.mode == "statics":
                    yaml_text = yaml_text.replace("    Level:           Error", "    Level:           Warning")
            else:
                yaml_text = "---\nMainSourceFile:  '%s'\nDiagnostics:     []\n...\n" % unit["src"]
            with open(unit["fixes"], "w", encoding="utf-8") as f:
                f.write(yaml_text)
        elif os.path.exists(fixes_tmp):
            os.remove(fixes_tmp)
        info_uri = "https://cppcheck.sourceforge.io/" if a.mode == "cppcheck" else \
            "https://clang.llvm.org/extra/clang-tidy/"
        with open(unit["sarif"], "w", encoding="utf-8") as f:
            json.dump(sarif.log(parse_diagnostics(text), self.tool_name(), self.version, info_uri), f,
                      indent=1, sort_keys=True)
            f.write("\n")


def main(argv):
    if "--" in argv:
        split = argv.index("--")
        argv, compile_args = argv[:split], argv[split + 1:]
    else:
        compile_args = []
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=["statics", "tidy", "cppcheck"], required=True)
    p.add_argument("--tool", required=True)
    p.add_argument("--src", help="one file (with --text, --sarif, --fixes and the compile arguments after --)")
    p.add_argument("--text")
    p.add_argument("--sarif")
    p.add_argument("--fixes")
    p.add_argument("--batch", help="a JSON file: {units: [{src, text, sarif, fixes, args}]}, one unit a file")
    p.add_argument("--config")
    p.add_argument("--option", action="append", default=[],
                   help="KEY=VALUE: a check option over the configuration's (atlas-stray-statics.KEY)")
    p.add_argument("--plugin")
    p.add_argument("--version-file", help="the tool's --version output, written once for the build")
    p.add_argument("--cuda-stub", help="the gate's stand-in for the CUDA toolkit's headers: force-included "
                   "from a directory that stays a system one")
    p.add_argument("--cuda-extra", action="append", default=[],
                   help="a directory of the consumer's own stand-in headers, searched before the gate's")
    p.add_argument("--cuda-arch", action="append", default=[],
                   help="sm_NN: also parse CUDA files device-side for this architecture")
    a = p.parse_args(argv)
    if a.batch:
        with open(a.batch, encoding="utf-8") as f:
            data = json.load(f)
        a.units = data["units"] if isinstance(data, dict) else data
    elif a.src and a.text and a.sarif:
        a.units = [{"src": a.src, "text": a.text, "sarif": a.sarif, "fixes": a.fixes, "args": compile_args}]
    else:
        p.error("give --batch, or --src with --text and --sarif")
    runner = Runner(a)
    # The files of a batch are independent: a few tool processes at a time (each is one process, and
    # Python only waits for them).
    workers = max(1, min(len(a.units), os.cpu_count() or 1, 4))
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        for _ in pool.map(runner.check_unit, a.units):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
