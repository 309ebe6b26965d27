#!/usr/bin/env bash
# kernels/images/ matches the sources (tools/dev/kernel_images.sh --check).
set -uo pipefail
root="$TEST_SRCDIR/$TEST_WORKSPACE"
exec bash "$root/tools/dev/kernel_images.sh" --check "$root"
