"""SARIF 2.1.0 for the lint gates: one log from clang-style diagnostics, every result with a rule id whose
rule carries help text; baselined findings carry a `suppressions` entry of kind `external`.
Standard library only (imported by tidy_action.py and statics_gate.py).
"""

import urllib.parse

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"

# Help text per rule; clang-tidy and cppcheck rules without an entry get a generic text.
HELP = {
    "atlas-stray-statics": (
        "A variable with static or thread storage duration whose object can be written is shared by "
        "everything in the process and outlives whatever computed its value. Make it const, keep the "
        "state in the object that owns it and pass that object, or mark it ATLAS_STATIC(CATEGORY) "
        "(lint/atlas_static.h) with a comment directly above that argues its case, shaped as its "
        "category requires. Legacy code may list it in the gate's baseline until it is fixed."),
    "clang-diagnostic-error": (
        "clang could not compile this file with the target's flags, so it was not checked. The first "
        "error lines are in the message; fix the file or its flags (a header that is not self-contained "
        "can be checked only through its includers: tag its target atlas-statics-headers-via-includers)."),
    "atlas-lint-tool-failure": (
        "The lint tool failed without a diagnostic; the message quotes its first error lines."),
    "atlas-lint-system-dir": (
        "The compile flags would make files of the main workspace system headers, which the statics "
        "check skips, in a way the runner cannot undo; the file was not checked. The message names the "
        "flag and the directory."),
}
GENERIC_HELP = "See the tool's documentation for this check: %s"


def rule_help(rule_id, info_uri, overrides=None):
    if overrides and rule_id in overrides:
        return overrides[rule_id]
    if rule_id in HELP:
        return HELP[rule_id]
    if rule_id.startswith("clang-diagnostic-"):
        return "A clang compiler diagnostic (%s)." % rule_id
    return GENERIC_HELP % info_uri


def artifact_uri(path):
    """A relative URI reference for a workspace path: every byte outside RFC 3986's unreserved set and '/'
    percent-encoded (a space, '%', '#' or '?' in a file name would otherwise change what it names)."""
    return urllib.parse.quote(path, safe="/")


def utf16_column(path, line, col):
    """clang counts columns in bytes; SARIF (columnKind utf16CodeUnits) in UTF-16 code units. Converted
    where the file can be read; else the byte column (the same for ASCII lines)."""
    try:
        with open(path, "rb") as f:
            for number, text in enumerate(f, 1):
                if number == line:
                    head = text[:max(col, 1) - 1].decode("utf-8", errors="replace")
                    return len(head.encode("utf-16-le")) // 2 + 1
    except OSError:
        pass
    return col


def log(diags, tool_name, tool_version, info_uri, suppressed=None, help_overrides=None):
    """diags: [(file, line, col, level, message, check)], notes attach to the result before them.
    suppressed: set of indices (into the non-note diagnostics) that a baseline keeps."""
    rules, rule_index, results = [], {}, []
    suppressed = suppressed or set()
    for file, line, col, level, msg, check in diags:
        location = {
            "physicalLocation": {
                "artifactLocation": {"uri": artifact_uri(file), "uriBaseId": "%SRCROOT%"},
                "region": {"startLine": max(line, 1), "startColumn": max(utf16_column(file, line, col), 1)},
            },
            "message": {"text": msg},
        }
        if level == "note":
            if results:
                related = results[-1].setdefault("relatedLocations", [])
                related.append(dict(location, id=len(related)))
            continue
        rule_id = check or ("clang-diagnostic-error" if level in ("error", "fatal error")
                            else "clang-diagnostic-warning")
        if rule_id not in rule_index:
            rule_index[rule_id] = len(rules)
            help_text = rule_help(rule_id, info_uri, help_overrides)
            rules.append({
                "id": rule_id,
                "shortDescription": {"text": rule_id},
                "fullDescription": {"text": help_text},
                "help": {"text": help_text},
            })
        result = {
            "ruleId": rule_id,
            "ruleIndex": rule_index[rule_id],
            "level": "error" if level in ("error", "fatal error") else "warning",
            "message": {"text": msg},
            "locations": [{"physicalLocation": location["physicalLocation"]}],
        }
        if len(results) in suppressed:
            result["suppressions"] = [{"kind": "external", "status": "accepted",
                                       "justification": "listed in the gate's baseline"}]
        results.append(result)
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": tool_name,
                "version": tool_version,
                "informationUri": info_uri,
                "rules": rules,
            }},
            "originalUriBaseIds": {"%SRCROOT%": {"description": {"text": "the workspace root"}}},
            "columnKind": "utf16CodeUnits",
            "results": results,
        }],
    }
