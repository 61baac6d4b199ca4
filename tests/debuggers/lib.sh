# shellcheck shell=bash
# Shared by tests/debuggers/*-test: start tests/debuggers/guarded, read its
# regions, and say which method each region is expected to have.
#
# Source after common.sh, with $build set to the meson build directory.

guarded=$build/tests/debuggers/guarded
[ -x "$guarded" ] || die "$guarded is not built (meson compile -C $build)"

# A directory on a page-cache file system for the file mapping: the VM's
# scratch ext4 disk ($LIBGUARD_SCRATCH; / and /tmp are tmpfs there), else
# one under the build directory.
lg_dbg_dir() {
	local d
	if [ -n "${LIBGUARD_SCRATCH:-}" ]; then
		d=$(mktemp -d "$LIBGUARD_SCRATCH/debuggers.XXXXXX")
	else
		d=$(mktemp -d "$build/debuggers.XXXXXX")
	fi
	printf '%s\n' "$d"
}

# The method a region must have in mode native|fallback: in the fallback
# mode always fallback; in the native mode native where the kernel is
# expected to have native guards there (LIBGUARD_EXPECT_CAPS in the VM),
# on the host whatever the library's probe found.
lg_dbg_want() {
	local mode=$1 region=$2
	if [ "$mode" = fallback ]; then
		echo fallback
		return
	fi
	case ${LIBGUARD_EXPECT_CAPS:-} in
	'') echo any ;;
	*",$region,"* | "$region,"* | *",$region" | "$region") echo native ;;
	*) echo fallback ;;
	esac
}

# lg_dbg_start MODE DIR ARG: start guarded as a coprocess in MODE (pid
# $g_pid; its stdout on fd $g_out, its stdin on fd $g_in: copies,
# since bash drops the coprocess's own when it exits) and read its region
# lines into start[] guard[] method[] (by region name), up to "ready";
# check each method.
declare -A start guard method
lg_dbg_start() {
	local mode=$1 dir=$2 arg=$3 line tag name a g m want env=()
	[ "$mode" = fallback ] && env=(LIBGUARD_FORCE_FALLBACK=1)
	coproc GUARDED { exec env ${env[@]+"${env[@]}"} "$guarded" "$dir" "$arg"; }
	g_pid=$GUARDED_PID
	exec {g_out}<&"${GUARDED[0]}" {g_in}>&"${GUARDED[1]}"
	while IFS= read -r -t 60 -u "$g_out" line; do
		[ "$line" = ready ] && return 0
		read -r tag name a g m <<<"$line"
		[ "$tag" = region ] || die "guarded said: $line"
		want=$(lg_dbg_want "$mode" "$name")
		[ "$want" = any ] || [ "$want" = "$m" ] ||
			die "$mode: the $name region's guard is $m, expected $want"
		start[$name]=$a guard[$name]=$g method[$name]=$m
	done
	die "guarded ($mode) stopped before it was ready"
}

# For guarded in hold mode (criu-test, criu-action-test):
# ask DIR PID: guarded's state lines, fresh.
ask() {
	local dir=$1 pid=$2
	rm -f "$dir/state"
	kill -USR1 "$pid"
	for _ in $(seq 100); do
		[ -f "$dir/state" ] && { cat "$dir/state"; return 0; }
		sleep 0.1
	done
	die "guarded $pid did not answer"
}

# gone PID: wait until the (not our child) process has gone.
gone() {
	for _ in $(seq 100); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	die "process $1 did not end"
}

# want_state METHOD: the state lines guarded writes with its
# guards of METHOD (native, fallback) in place, or with them lost.
want_state() {
	local r m=$1
	for r in anon shmem file; do
		case $m in
		native) echo "state $r touch SEGV_MAPERR pagemap58 1 query native data kept" ;;
		fallback) echo "state $r touch SEGV_ACCERR pagemap58 0 query fallback data kept" ;;
		lost) echo "state $r touch none pagemap58 0 query none data kept" ;;
		esac
	done
}

# lg_dbg_close: close the copies of guarded's pipes.
lg_dbg_close() {
	exec {g_out}<&- {g_in}>&-
}
