# shellcheck shell=bash
# Resolve the pinned Debian kernel version (source.conf) against what the
# mirror serves. Sourced by kernel/build and kernel/stock.
#
# Sets KVER_DEB (Debian version, e.g. 6.12.118-1~deb12u1), KVER (upstream,
# 6.12.118) and KVER_ABI (Debian's release name, 6.12.118+deb12-amd64).

# shellcheck source=source.conf
. "$LIBGUARD_TOP/kernel/source.conf"

# lg_kernel_resolve PACKAGE: the pinned version if the mirror has it,
# else the newest one (loudly).
lg_kernel_resolve() {
	local pkg=$1 have
	have=$(dpkg-query -W -f='${db:Status-Abbrev}${Version}' "$pkg" 2>/dev/null || true)
	if [ "$have" = "ii $DEBIAN_KERNEL_VERSION" ]; then
		KVER_DEB=$DEBIAN_KERNEL_VERSION
		return
	fi
	lg_apt_update
	if apt-cache madison "$pkg" | awk '{print $3}' | grep -qxF "$DEBIAN_KERNEL_VERSION"; then
		KVER_DEB=$DEBIAN_KERNEL_VERSION
		return
	fi
	KVER_DEB=$(apt-cache madison "$pkg" | awk '{print $3}' | sort -V | tail -n 1)
	[ -n "$KVER_DEB" ] || die "package $pkg is not served by the configured Debian mirror"
	warn "================================================================"
	warn "pinned $pkg $DEBIAN_KERNEL_VERSION is no longer served;"
	warn "using the newest one, $KVER_DEB. Update kernel/source.conf."
	warn "================================================================"
}

lg_kernel_names() {
	KVER=${KVER_DEB%%-*}
	KVER_ABI="$KVER+deb12-amd64"
}
