#!/bin/sh
# Fails when a cc target declared in the source tree escapes //lint:self_gate_test.
set -eu
md=$(readlink -f STATICS.md)
exec /usr/bin/python3 -I lint/self_gate_coverage.py --root "$(dirname "$md")" --visited lint/self_gate_test.visited
