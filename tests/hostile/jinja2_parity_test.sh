#!/usr/bin/env bash
# jinja2_parity_test.sh RENDER_CORPUS PARITY_PY GEN_REFERENCE_PY TEMPLATE...
# (python3-jinja2 is in tools/debian-packages.txt: no skip).
set -euo pipefail
render="$1" parity="$2" gen="$3"
shift 3
# jinja2_parity.py imports gen_reference from ../chat beside it.
work="$(mktemp -d "${TEST_TMPDIR:-/tmp}/parity.XXXXXX")"
mkdir -p "$work/hostile" "$work/chat"
cp "$parity" "$work/hostile/"
cp "$gen" "$work/chat/"
exec python3 "$work/hostile/jinja2_parity.py" --render "$render" --templates "$@"
