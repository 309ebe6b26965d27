#!/bin/bash
# Test-setup step: fetches the npm tarballs listed in projects.txt into a cache, checks each sha256, and
# unpacks them. Prints the directory that holds <name>/package/... for every project.
# Usage: fetch.sh PROJECTS_TXT [CACHE_DIR]   (default cache: $ATLAS_NPM_CACHE or ~/.cache/atlas-npm)
set -euo pipefail
list=$1
cache=${2:-${ATLAS_NPM_CACHE:-$HOME/.cache/atlas-npm}}
mkdir -p "$cache"
registry=${NPM_CONFIG_REGISTRY:-https://registry.npmjs.org}
registry=${registry%/}
while read -r name spec sha _; do
  case "$name" in ''|'#'*) continue ;; esac
  pkg=${spec%@*}; ver=${spec##*@}
  tgz="$cache/${pkg}-${ver}.tgz"
  if [ ! -f "$tgz" ] || ! echo "$sha  $tgz" | sha256sum -c --status; then
    echo "fetch.sh: downloading $spec" >&2
    curl -fsSL --retry 3 -o "$tgz.part" "$registry/$pkg/-/${pkg##*/}-$ver.tgz"
    mv "$tgz.part" "$tgz"
  fi
  echo "$sha  $tgz" | sha256sum -c --status || { echo "fetch.sh: sha256 mismatch for $spec" >&2; exit 1; }
  if [ ! -d "$cache/$name/package" ]; then
    rm -rf "$cache/$name.tmp"; mkdir -p "$cache/$name.tmp"
    tar xzf "$tgz" -C "$cache/$name.tmp"
    rm -rf "$cache/$name"; mv "$cache/$name.tmp" "$cache/$name"
  fi
done < "$list"
echo "$cache"
