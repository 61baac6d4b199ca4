#!/usr/bin/env bash
# tests/helpers/jemalloc-preload.sh MODULE LIBJEMALLOC: a Debian program
# (sort, on 10 MB of lines) with jemalloc and libguard-jemalloc.so
# preloaded: its output must be the same as without them, the module must
# have guarded mappings and refused none; without jemalloc the module must
# say so and change nothing. Exit 0 pass, 1 fail, 77 skip (TAP-less).
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 MODULE LIBJEMALLOC" >&2; exit 2; }
module=$1 je=$2
[ -f "$je" ] || { echo "SKIP: no $je (libjemalloc2 is not installed)"; exit 77; }
dir=$(mktemp -d "${LIBGUARD_SCRATCH:-${TMPDIR:-/tmp}}/jemalloc-preload.XXXXXX")
trap 'rm -rf "$dir"' EXIT
seq 1 1000000 | awk '{ print ($1 * 7919) % 1000003, $1 }' >"$dir/in"
sort -S 64M "$dir/in" >"$dir/want"
# sort closes stderr at exit: the statistics go to a file.
LIBGUARD_JEMALLOC_STATS="$dir/err" LD_PRELOAD="$module:$je" sort -S 64M "$dir/in" >"$dir/got" 2>>"$dir/err"
cat "$dir/err"
cmp -s "$dir/want" "$dir/got" || { echo "FAIL: sort's output differs under the module"; exit 1; }
line=$(grep 'mappings guarded' "$dir/err") || { echo "FAIL: no statistics line"; exit 1; }
# (no process substitution: the guest has no /dev/fd)
counts=$(sed -E 's/.*: ([0-9]+) mappings guarded.* ([0-9]+) refused \(no guard\).*/\1 \2/' <<<"$line")
read -r guarded failed <<<"$counts"
[ "$guarded" -gt 0 ] || { echo "FAIL: nothing guarded"; exit 1; }
[ "$failed" -eq 0 ] || { echo "FAIL: $failed allocations refused"; exit 1; }
grep -q 'hooks on \([0-9]*\) of \1 arenas' "$dir/err" || { echo "FAIL: not every arena hooked"; exit 1; }
# Without jemalloc: a clear message, and the program runs as before.
LD_PRELOAD="$module" sort -S 64M "$dir/in" >"$dir/got" 2>"$dir/err"
cmp -s "$dir/want" "$dir/got" || { echo "FAIL: output differs with the module alone"; exit 1; }
grep -q 'jemalloc is not loaded' "$dir/err" || { echo "FAIL: no message without jemalloc"; cat "$dir/err"; exit 1; }
echo "PASS: $guarded mappings guarded under sort; alone, the module says: $(cat "$dir/err")"
