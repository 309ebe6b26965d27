# Sourced by tools/fuzz/fuzz_*.sh: reads [--seeds A-B] [--count N] (also
# --opt=value) into $seeds and $count, which the caller sets to its defaults
# first; --help prints the caller's header comment. Exit 2 on a usage error.
fuzz_usage() {
  echo "usage: $(basename "$0") [--seeds A-B] [--count N]" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case "$1" in
    --seeds) [ $# -ge 2 ] || fuzz_usage; seeds=$2; shift 2 ;;
    --seeds=*) seeds=${1#*=}; shift ;;
    --count) [ $# -ge 2 ] || fuzz_usage; count=$2; shift 2 ;;
    --count=*) count=${1#*=}; shift ;;
    -h|--help) sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) fuzz_usage ;;
  esac
done
[[ "$seeds" =~ ^[0-9]+-[0-9]+$ && "$count" =~ ^[0-9]+$ ]] || fuzz_usage
