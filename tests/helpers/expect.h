/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the kernel under test is expected to support, independently of
 * libguard's own probe, so that tests can assert the probe's answer
 * instead of trusting it.
 */
#ifndef LIBGUARD_TESTS_EXPECT_H
#define LIBGUARD_TESTS_EXPECT_H

enum expect_cap {
	EXPECT_ANON = 1u << 0,		/* MADV_GUARD_INSTALL, private anon */
	EXPECT_SHMEM = 1u << 1,		/* memfd, tmpfs, shared anon */
	EXPECT_FILE = 1u << 2,		/* page-cache file mappings */
	EXPECT_READONLY = 1u << 3,	/* PROT_READ mapping of an O_RDONLY fd */
	EXPECT_PAGEMAP = 1u << 4,	/* /proc/PID/pagemap bit 58 */
	EXPECT_PAGEMAP_SCAN = 1u << 5,	/* PAGEMAP_SCAN PAGE_IS_GUARD */
	EXPECT_PROCESS_MADVISE = 1u << 6, /* guard advice via process_madvise() */
	EXPECT_MAYBE_GUARD = 1u << 7,	/* smaps VmFlags "gu" once guarded */
	EXPECT_PIDFD_SELF = 1u << 8,	/* PIDFD_SELF_* in pidfd_send_signal() */
};

/*
 * The expected capability mask. The VM runner states it in
 * LIBGUARD_EXPECT_CAPS (from kernel/features for our kernels, "none" for
 * Debian's stock kernel); on the host it follows from the upstream
 * release that introduced each feature. *why says which.
 */
unsigned int expect_caps(const char **why);

/* "anon,file,..." for messages; a static buffer. */
const char *expect_caps_str(unsigned int caps);

#endif
