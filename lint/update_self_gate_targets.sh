#!/bin/sh
# Regenerates lint/self_gate_targets.bzl: every cc target of the workspace outside tests/ (GoogleTest suites
# in private packages; see lint/self_gate_coverage.py). The aspects also follow deps, srcs and hdrs; //lint:self_gate_coverage_test
# fails when a cc target declared in the tree escapes the list, and CI also runs the gate over the package
# pattern (tools/bazel build --config=atlas_statics -- //... -//tests/...), which needs no list.
# Run from the workspace root: lint/update_self_gate_targets.sh
set -eu
targets=$(tools/bazel query --noshow_progress \
  'kind("cc_(library|binary|test) rule", //... - //tests/...)' 2>/dev/null \
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
