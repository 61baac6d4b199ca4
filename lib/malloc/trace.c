// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Stack traces for the report, taken at each guarded malloc and free.
 * glibc's backtrace() dlopen()s libgcc_s on its first call, which would
 * malloc from inside malloc, maybe inside ld.so; so the unwinder is
 * called directly (the module links libgcc_s: loaded with it, nothing to
 * open later). Frames print as "#N 0xADDR (MODULE+0xOFF)" for
 * tools/guard-malloc-symbolize, with the symbol when dladdr() knows it.
 */
#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <unwind.h>

#include "gm.h"

pid_t gm_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

struct walk {
	struct gm_trace *t;
	unsigned int skip;
};

static _Unwind_Reason_Code step(struct _Unwind_Context *ctx, void *arg)
{
	struct walk *w = arg;
	uintptr_t pc = _Unwind_GetIP(ctx);

	if (!pc)
		return _URC_END_OF_STACK;
	if (w->skip) {
		w->skip--;
		return _URC_NO_REASON;
	}
	w->t->pc[w->t->depth++] = (void *)pc;
	return w->t->depth < GM_TRACE_DEPTH ? _URC_NO_REASON : _URC_END_OF_STACK;
}

void gm_trace_capture(struct gm_trace *t, unsigned int skip)
{
	struct walk w = { t, skip + 1 };

	t->tid = gm_gettid();
	t->depth = 0;
	_Unwind_Backtrace(step, &w);
}

/* The main program's path: dladdr() names it "". */
static char exe[4096];

/* The unwinder's first call sets up a little state of its own: do it here, at init. */
void gm_trace_init(void)
{
	struct gm_trace t;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	exe[n > 0 ? n : 0] = '\0';
	gm_trace_capture(&t, 0);
}

void gm_trace_print_pcs(int fd, void *const *pc, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		Dl_info info;

		gm_write(fd, "    #");
		gm_write_num(fd, i, 10);
		gm_write(fd, " 0x");
		gm_write_num(fd, (uintptr_t)pc[i], 16);
		if (dladdr(pc[i], &info) && info.dli_fname) {
			gm_write(fd, " (");
			gm_write(fd, info.dli_fname[0] ? info.dli_fname : exe[0] ? exe : "<main>");
			gm_write(fd, "+0x");
			gm_write_num(fd, (uintptr_t)pc[i] - (uintptr_t)info.dli_fbase, 16);
			gm_write(fd, ")");
			if (info.dli_sname) {
				gm_write(fd, " in ");
				gm_write(fd, info.dli_sname);
				gm_write(fd, "+0x");
				gm_write_num(fd, (uintptr_t)pc[i] - (uintptr_t)info.dli_saddr, 16);
			}
		}
		gm_write(fd, "\n");
	}
}

void gm_trace_print(int fd, const struct gm_trace *t)
{
	gm_trace_print_pcs(fd, t->pc, t->depth);
}
