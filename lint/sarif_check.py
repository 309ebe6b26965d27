#!/usr/bin/python3
"""Checks that SARIF files follow the SARIF 2.1.0 structure (the parts of the OASIS schema,
sarif-schema-2.1.0.json, that our reports use), and that every location is workspace-relative.

Usage: sarif_check.py FILE...   (exit 1 and one line per problem when a file does not conform)
Standard library only.
"""

import json
import re
import sys

LEVELS = {"none", "note", "warning", "error"}


def check_message(msg, where, problems):
    if not isinstance(msg, dict) or not (isinstance(msg.get("text"), str) or isinstance(msg.get("id"), str)):
        problems.append("%s: message needs a string `text` or `id`" % where)


def check_location(loc, where, problems, related=False):
    if not isinstance(loc, dict):
        problems.append("%s: location must be an object" % where)
        return
    if related and "id" in loc and (not isinstance(loc["id"], int) or loc["id"] < -1):
        problems.append("%s: id must be an integer >= -1" % where)
    if "message" in loc:
        check_message(loc["message"], where, problems)
    phys = loc.get("physicalLocation")
    if phys is None:
        return
    art = phys.get("artifactLocation")
    if not isinstance(art, dict) or not isinstance(art.get("uri"), str):
        problems.append("%s: physicalLocation.artifactLocation.uri must be a string" % where)
    elif art["uri"].startswith("/") or "://" in art["uri"]:
        problems.append("%s: uri %r is not workspace-relative" % (where, art["uri"]))
    elif not re.fullmatch(r"(?:[A-Za-z0-9\-._~/!$&'()*+,;=:@]|%[0-9A-Fa-f]{2})*", art["uri"]):
        problems.append("%s: uri %r is not a URI reference (percent-encode spaces, %%, # and ?)"
                        % (where, art["uri"]))
    if "uriBaseId" in (art or {}) and not isinstance(art["uriBaseId"], str):
        problems.append("%s: uriBaseId must be a string" % where)
    region = phys.get("region")
    if region is not None:
        for key in ("startLine", "startColumn", "endLine", "endColumn"):
            if key in region and (not isinstance(region[key], int) or region[key] < 1):
                problems.append("%s: region.%s must be an integer >= 1" % (where, key))


def check_log(log, name):
    problems = []
    if not isinstance(log, dict):
        return ["%s: a SARIF log is an object" % name]
    if log.get("version") != "2.1.0":
        problems.append("%s: version must be \"2.1.0\"" % name)
    if "$schema" in log and not isinstance(log["$schema"], str):
        problems.append("%s: $schema must be a string" % name)
    runs = log.get("runs")
    if not isinstance(runs, list):
        return problems + ["%s: runs must be an array" % name]
    for r, run in enumerate(runs):
        where = "%s: runs[%d]" % (name, r)
        driver = (run.get("tool") or {}).get("driver") if isinstance(run, dict) else None
        if not isinstance(driver, dict) or not isinstance(driver.get("name"), str):
            problems.append("%s: tool.driver.name is required" % where)
            continue
        rules = driver.get("rules", [])
        ids = []
        for i, rule in enumerate(rules):
            if not isinstance(rule, dict) or not isinstance(rule.get("id"), str):
                problems.append("%s: tool.driver.rules[%d].id is required" % (where, i))
            else:
                ids.append(rule["id"])
        if len(ids) != len(set(ids)):
            problems.append("%s: rule ids must be unique" % where)
        for base, value in (run.get("originalUriBaseIds") or {}).items():
            if not isinstance(value, dict):
                problems.append("%s: originalUriBaseIds[%s] must be an artifactLocation" % (where, base))
        results = run.get("results")
        if results is None:
            continue
        if not isinstance(results, list):
            problems.append("%s: results must be an array" % where)
            continue
        for i, res in enumerate(results):
            rw = "%s.results[%d]" % (where, i)
            if not isinstance(res, dict):
                problems.append("%s: a result is an object" % rw)
                continue
            check_message(res.get("message"), rw, problems)
            if "level" in res and res["level"] not in LEVELS:
                problems.append("%s: level %r is not one of %s" % (rw, res["level"], sorted(LEVELS)))
            if "ruleIndex" in res:
                idx = res["ruleIndex"]
                if not isinstance(idx, int) or idx < -1 or idx >= len(rules):
                    problems.append("%s: ruleIndex %r is out of range" % (rw, idx))
                elif idx >= 0 and res.get("ruleId") not in (None, rules[idx].get("id")):
                    problems.append("%s: ruleId %r disagrees with rules[%d]" % (rw, res.get("ruleId"), idx))
            for j, loc in enumerate(res.get("locations", [])):
                check_location(loc, "%s.locations[%d]" % (rw, j), problems)
            for j, loc in enumerate(res.get("relatedLocations", [])):
                check_location(loc, "%s.relatedLocations[%d]" % (rw, j), problems, related=True)
    return problems


def main(paths):
    problems = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                log = json.load(f)
        except (OSError, ValueError) as e:
            problems.append("%s: not JSON: %s" % (path, e))
            continue
        problems += check_log(log, path)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
