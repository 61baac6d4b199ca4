# shellcheck shell=bash
# Helpers shared by the project's scripts: messages with elapsed time,
# failure that names what failed, and idempotent apt-get installs.
#
# Source it after `set -euo pipefail`.

LIBGUARD_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LIBGUARD_CACHE=${LIBGUARD_CACHE:-${HOME:-/root}/.cache/libguard}
_lg_t0=${_lg_t0:-$(date +%s)}
export LIBGUARD_CACHE _lg_t0

lg_elapsed() {
	local s=$(($(date +%s) - _lg_t0))
	printf '%d:%02d' $((s / 60)) $((s % 60))
}

# Progress and errors go to stderr so that stdout can carry a result
# (a path, a status) for the caller.
say() { printf '[%s %s] %s\n' "$(lg_elapsed)" "${LG_PROG:-${0##*/}}" "$*" >&2; }
warn() { say "WARNING: $*"; }
die() {
	say "error: $*"
	exit "${LG_DIE_STATUS:-1}"
}

# Run as root or through sudo; apt-get and mkosi need it.
lg_sudo() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null; then
		sudo "$@"
	else
		die "need root (or sudo) to run: $*"
	fi
}

_lg_apt_updated=
lg_apt_update() {
	[ -n "$_lg_apt_updated" ] && return 0
	say "apt-get update"
	lg_sudo apt-get update -q >/dev/null 2>"$LIBGUARD_CACHE/apt-update.err" ||
		die "apt-get update failed (is Debian's mirror reachable?): $(tail -n 3 "$LIBGUARD_CACHE/apt-update.err")"
	_lg_apt_updated=1
}

# lg_need_pkgs PKG... : install the packages that are not installed yet.
# Each PKG may carry a version (name=version).
lg_need_pkgs() {
	local missing=() p name want have
	mkdir -p "$LIBGUARD_CACHE"
	for p in "$@"; do
		name=${p%%=*}
		want=${p#*=}
		[ "$want" = "$p" ] && want=
		have=$(dpkg-query -W -f='${db:Status-Abbrev}${Version}' "$name" 2>/dev/null || true)
		case $have in
		ii*) [ -z "$want" ] || [ "${have#ii }" = "$want" ] || [ "${have:3}" = "$want" ] || missing+=("$p") ;;
		*) missing+=("$p") ;;
		esac
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	lg_apt_update
	say "apt-get install ${missing[*]}"
	for p in "${missing[@]}"; do
		apt-cache show "$p" >/dev/null 2>&1 ||
			die "package $p is not available from the configured Debian mirror"
	done
	lg_sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		"${missing[@]}" >"$LIBGUARD_CACHE/apt-install.log" 2>&1 ||
		die "apt-get install ${missing[*]} failed: $(tail -n 5 "$LIBGUARD_CACHE/apt-install.log")"
}

# lg_hash FILE... : one sha256 over the files' names and contents.
lg_hash_files() {
	local f
	for f in "$@"; do
		printf '%s\n' "${f##*/}"
		sha256sum <"$f"
	done | sha256sum | cut -c1-16
}

# lg_watch LOG PID LABEL: print a progress line every 30 s while PID runs.
lg_watch() {
	local log=$1 pid=$2 label=$3 n=0
	while kill -0 "$pid" 2>/dev/null; do
		sleep 1
		n=$((n + 1))
		if [ $((n % 30)) -eq 0 ]; then
			say "$label: still running, $(grep -c -E '^  (CC|AS|LD|AR)' "$log" 2>/dev/null || echo 0) objects so far; last: $(tail -n 1 "$log" | cut -c1-80)"
		fi
	done
}

# What a guest kernel's log must not say: tests/vm/run, kernel/mm-suite and
# tests/vm/installed fail on any line matching it (grep -E).
LG_KLOG_BAD='Oops|BUG:|WARNING:|KASAN|UBSAN|Kernel panic|kernel BUG|general protection fault|possible circular locking|possible recursive locking|inconsistent lock state|suspicious RCU usage|INFO: task .* blocked|Call Trace:|page dumped because'

# lg_expect_caps: kernel/features as LIBGUARD_EXPECT_CAPS wants it (a comma
# list), "none" when the file is missing or empty: what the tests must find
# on our patched kernels.
lg_expect_caps() {
	local caps=
	[ ! -f "$LIBGUARD_TOP/kernel/features" ] ||
		caps=$(sed 's/#.*//' "$LIBGUARD_TOP/kernel/features" | tr -s ' \n' ',' | sed 's/^,//; s/,$//')
	printf '%s\n' "${caps:-none}"
}
