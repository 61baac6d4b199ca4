# shellcheck shell=bash
# apt for Debian's arm64 packages without touching this machine's own
# package setup: no `dpkg --add-architecture`, nothing installed. A private
# apt state (lists, cache, an empty dpkg status) under
# $LIBGUARD_CACHE/apt-arm64 sees the host's configured sources as arm64.
# Used to download the stock arm64 kernel (kernel/stock --arch arm64) and
# to find the mirror for the arm64 guest's root filesystem.
#
# Source it after build-aux/common.sh.

LG_APT_ARM64=$LIBGUARD_CACHE/apt-arm64
_lg_apt_arm64_opts() {
	printf '%s\n' -o APT::Architecture=arm64 -o APT::Architectures=arm64 \
		-o "Dir::State::Lists=$LG_APT_ARM64/lists" \
		-o "Dir::State::Status=$LG_APT_ARM64/status" \
		-o "Dir::Cache=$LG_APT_ARM64/cache" \
		-o APT::Sandbox::User=root
}

# lg_apt_arm64 apt-get|apt-cache ARGS...: run with the arm64 view. The
# lists are refreshed once a day (or when missing).
lg_apt_arm64() {
	local tool=$1 opts
	shift
	mapfile -t opts < <(_lg_apt_arm64_opts)
	mkdir -p "$LG_APT_ARM64/lists/partial" "$LG_APT_ARM64/cache/archives/partial"
	[ -f "$LG_APT_ARM64/status" ] || : >"$LG_APT_ARM64/status"
	if [ -z "$(find "$LG_APT_ARM64/stamp" -mmin -1440 2>/dev/null)" ]; then
		say "apt-get update (arm64 lists, private to $LG_APT_ARM64)"
		apt-get -q "${opts[@]}" update >/dev/null 2>"$LG_APT_ARM64/update.err" ||
			die "apt-get update for arm64 failed: $(tail -n 3 "$LG_APT_ARM64/update.err")"
		touch "$LG_APT_ARM64/stamp"
	fi
	"$tool" "${opts[@]}" "$@"
}

# lg_debian_mirror: the URI the host's apt uses for Debian's main archive
# (bookworm main), for tools such as debootstrap that need one.
lg_debian_mirror() {
	local uri
	# shellcheck disable=SC2016 # apt's own $(FIELD) placeholders
	uri=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(COMPONENT)' 'Identifier: Packages' |
		awk '$2 == "bookworm" && $3 == "main" { print $1; exit }')
	[ -n "$uri" ] || die "the host's apt sources have no Debian bookworm main archive"
	printf '%s\n' "$uri"
}
