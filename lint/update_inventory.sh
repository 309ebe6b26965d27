#!/bin/sh
# bazel run //lint:update_inventory: rewrites STATICS.md's inventory from the ATLAS_STATIC marks in the tree.
set -eu
ws=${BUILD_WORKSPACE_DIRECTORY:?run me with bazel run //lint:update_inventory}
exec /usr/bin/python3 -I "$PWD/lint/statics_inventory.py" --root "$ws" --update "$ws/STATICS.md"
