// SPDX-License-Identifier: LGPL-2.1-or-later
/* The one-line summary at exit (summary=1); guard_malloc_stats() is in pool.c. */
#include "gm.h"
#include "guard.h"

static void field(int fd, const char *name, size_t v)
{
	gm_write(fd, name);
	gm_write_num(fd, v, 10);
}

void gm_stats_summary(int fd)
{
	struct guard_malloc_stats st;

	if (guard_malloc_stats(&st, sizeof(st)))
		return;
	gm_write(fd, "libguard-malloc: method ");
	gm_write(fd, st.method == GUARD_METHOD_NATIVE ? "native" :
		     st.method == GUARD_METHOD_FALLBACK ? "fallback" : "none");
	field(fd, ", slots ", st.slots);
	field(fd, " (", st.slots_used);
	field(fd, " used, cap ", st.cap);
	field(fd, "), guarded ", st.guarded);
	field(fd, ", live ", st.live);
	field(fd, ", quarantine ", st.quarantined);
	field(fd, ", unguarded: past the cap ", st.unguarded_cap);
	field(fd, ", too large ", st.unguarded_large);
	gm_write(fd, "\n");
	gm_flush();
}
