#!/bin/sh
# Regenerates lint/self_gate_targets.bzl: every cc target under runtime/, tools/, kernels/ and lint/
# (the aspects also follow deps, but listing all of them keeps a new leaf target from being missed).
# Run from the workspace root: lint/update_self_gate_targets.sh
set -eu
targets=$(tools/bazel query --noshow_progress \
  'kind("cc_(library|binary|test) rule", //runtime/... + //tools/... + //kernels/... + //lint/...)' 2>/dev/null \
  | grep -v '^//lint:atlas_statics_plugin' | sort)
{
  sed -n '1,/^"""$/p' lint/self_gate_targets.bzl | sed '1!{/^"""$/q}'
  echo
  echo "SELF_GATE_TARGETS = ["
  for t in $targets; do echo "    \"$t\","; done
  echo "    \"//lint:atlas_statics_plugin.so\","
  echo "]"
} > lint/self_gate_targets.bzl.new
mv lint/self_gate_targets.bzl.new lint/self_gate_targets.bzl
echo "lint/self_gate_targets.bzl: $(grep -c '^    "' lint/self_gate_targets.bzl) targets"
