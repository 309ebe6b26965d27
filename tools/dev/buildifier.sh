#!/usr/bin/env bash
# buildifier over every tracked BUILD, WORKSPACE, MODULE.bazel and .bzl file:
# the format, and its lint warnings (--lint=warn). The version is pinned in
# tools/dev/buildifier/package.json and package-lock.json (npm's
# @bazel/buildifier, which carries the release binaries); the first run
# installs it with `npm ci` into tools/dev/buildifier/node_modules (ignored).
#   tools/dev/buildifier.sh            rewrite in place (format only)
#   tools/dev/buildifier.sh --check    change nothing; exit 1 on a file to
#                                      reformat or a lint warning (CI)
# Warnings left out, and why:
#   native-sh-test, native-sh-binary: Bazel 4.2.3 (Debian's) has sh rules
#     built in and no rules_shell offline to load them from.
# third_party/rules_cc/ is format-checked but not linted: it is the offline
# stand-in for rules_cc, so it must name the native rules it wraps.
set -euo pipefail
cd "$(dirname "$0")/../.."

check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  *) echo "usage: tools/dev/buildifier.sh [--check]" >&2; exit 2 ;;
esac

pkg=tools/dev/buildifier
want=$(sed -n 's/.*"@bazel\/buildifier": "\([0-9.]*\)".*/\1/p' "$pkg/package.json")
bin="$pkg/node_modules/.bin/buildifier"
if ! "$bin" --version 2>/dev/null | grep -q "version: $want\b"; then
  if ! command -v npm >/dev/null 2>&1; then
    # A fresh Debian 12 has none: Debian's npm, as tools/bazel installs the
    # build's packages (not in tools/debian-packages.txt: a machine whose
    # Node.js comes from elsewhere would have apt replace it on every build).
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    command -v apt-get >/dev/null 2>&1 ||
      { echo "tools/dev/buildifier.sh: npm not found (Debian package npm)" >&2; exit 1; }
    echo "tools/dev/buildifier.sh: apt-get install npm" >&2
    $sudo apt-get install -y --no-install-recommends npm >&2 ||
      { echo "tools/dev/buildifier.sh: could not install npm (Debian package npm)" >&2; exit 1; }
  fi
  echo "tools/dev/buildifier.sh: installing @bazel/buildifier $want (npm ci)" >&2
  npm ci --prefix "$pkg" --no-audit --no-fund --loglevel=error >&2
  "$bin" --version | grep -q "version: $want\b" ||
    { echo "tools/dev/buildifier.sh: $bin is not version $want" >&2; exit 1; }
fi

mapfile -t files < <(git ls-files |
  grep -E '(^|/)(BUILD|BUILD\.bazel|WORKSPACE|MODULE\.bazel)$|\.bzl$|\.BUILD$')
if [ "$check" -eq 0 ]; then
  "$bin" --mode=fix "${files[@]}"
  exit 0
fi
warnings=-native-sh-test,-native-sh-binary
status=0
"$bin" --mode=check "${files[@]}" || status=1
mapfile -t lint < <(printf '%s\n' "${files[@]}" | grep -v '^third_party/rules_cc/')
"$bin" --mode=check --lint=warn --warnings="$warnings" "${lint[@]}" || status=1
if [ "$status" -ne 0 ]; then
  echo "tools/dev/buildifier.sh: run tools/dev/buildifier.sh to format; fix each warning above" >&2
  exit 1
fi
echo "tools/dev/buildifier.sh: ${#files[@]} files formatted, no lint warnings"
