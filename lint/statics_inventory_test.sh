#!/bin/sh
# Fails when STATICS.md's inventory and the ATLAS_STATIC marks in the source tree disagree.
# The tree is read in place (runtime/, kernels/, tools/, lint/, minus fixtures): the workspace root is
# where the runfiles link of STATICS.md points, so a mark in a file that no target lists yet is seen too.
set -eu
md=$(readlink -f STATICS.md)
root=$(dirname "$md")
exec /usr/bin/python3 -I lint/statics_inventory.py --root "$root" --check "$md"
