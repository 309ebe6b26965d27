#!/usr/bin/env bash
# The README's two commands on a really fresh Debian 12: debootstrap a
# minimal bookworm (--variant=minbase: no curl, no compiler, no git) into
# DIR, clone this repository's HEAD into it, and run the commands of the
# README's first code block there, exactly as written, each in a clean
# environment. This is the install path itself, which CI's shimmed
# tests/tools/bazel_wrapper_test.sh cannot prove. Not part of CI: it needs
# root, a Debian mirror, the npm registry and about 40 minutes on 2 cores.
#
#   sudo tools/fresh_debian.sh DIR        # DIR must not exist or be empty
#
# ATLAS_DEBIAN_MIRROR overrides the mirror (default http://deb.debian.org/debian).
# The host's resolv.conf and local CAs (/usr/local/share/ca-certificates)
# are copied in: a network setting of the machine, not an install step.
# Prints each command's exit status last; exit 0 when all passed, 1 when one
# failed (its output is in DIR/run.log), 2 on a usage error. DIR stays for a
# look afterwards; remove it with `rm -rf --one-file-system DIR` (nothing is
# mounted there once this script has ended).
set -uo pipefail

die() { echo "fresh_debian: $1" >&2; exit "${2:-1}"; }
case "${1:-}" in
  -h|--help) awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0"; exit 0 ;;
  ""|-*) die "usage: fresh_debian.sh DIR (see --help)" 2 ;;
esac
[ "$#" -eq 1 ] || die "usage: fresh_debian.sh DIR (see --help)" 2
dir=$1
[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot, mounts)"
if [ -e "$dir" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
  die "$dir exists and is not empty: name a new folder" 2
fi
repo=$(cd "$(dirname "$0")/.." && pwd)
mirror=${ATLAS_DEBIAN_MIRROR:-http://deb.debian.org/debian}
mkdir -p "$dir" || die "cannot create $dir"
dir=$(cd "$dir" && pwd)
root=$dir/root
log=$dir/run.log

if ! command -v debootstrap >/dev/null; then
  echo "fresh_debian: installing debootstrap" >&2
  apt-get install -y -qq debootstrap >&2 || die "apt-get install debootstrap failed"
fi
echo "fresh_debian: debootstrap bookworm (minbase) from $mirror into $root" >&2
debootstrap --variant=minbase bookworm "$root" "$mirror" >"$dir/debootstrap.log" 2>&1 ||
  die "debootstrap failed: see $dir/debootstrap.log"
# The host's network setup, not the project's: its resolver, and the local
# certificate authorities an egress proxy may need (ca-certificates, which
# tools/bazel installs, adds /usr/local/share/ca-certificates to the trust).
cp /etc/resolv.conf "$root/etc/resolv.conf"
if compgen -G "/usr/local/share/ca-certificates/*" >/dev/null; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp -r /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
fi
git clone -q "$repo" "$root/src/atlas" || die "git clone $repo failed"
head=$(git -C "$root/src/atlas" log -1 --format='%h %s' | cut -c1-72)

mounted=()
cleanup() {
  # The chroot's Bazel server holds its /dev; stop it before unmounting.
  chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    sh -c 'cd /src/atlas && [ -x /usr/bin/bazel ] && tools/bazel shutdown' >/dev/null 2>&1
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount -R "${mounted[i]}" || echo "fresh_debian: could not unmount ${mounted[i]}" >&2
  done
}
trap cleanup EXIT
mount -t proc proc "$root/proc" && mounted+=("$root/proc") || die "mount proc failed"
mount --rbind /sys "$root/sys" && mounted+=("$root/sys") || die "mount sys failed"
mount --rbind /dev "$root/dev" && mounted+=("$root/dev") || die "mount dev failed"

# The README's first code block: one command a line, a comment after '#'.
mapfile -t cmds < <(awk '/^```sh$/ {on = 1; next} on && /^```$/ {exit} on' "$repo/README.md" |
  sed -e 's/[[:space:]]*#.*$//' -e '/^[[:space:]]*$/d')
[ "${#cmds[@]}" -gt 0 ] || die "found no commands in the README's first code block"

rcs=()
for c in "${cmds[@]}"; do
  echo "== $c ($(date -u +%T))" | tee -a "$log"
  chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    bash -c "cd /src/atlas && $c" >>"$log" 2>&1
  rcs+=("$?")
done

echo "fresh Debian 12 (minbase), $head:"
status=0
for i in "${!cmds[@]}"; do
  printf '  exit %-3s %s\n' "${rcs[i]}" "${cmds[i]}"
  [ "${rcs[i]}" -eq 0 ] || status=1
done
[ "$status" -eq 0 ] || echo "fresh_debian: a command failed; its output is in $log" >&2
exit "$status"
