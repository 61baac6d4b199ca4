// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libbench-elf-probe.so, LD_PRELOADed by bench-elf-holes into a real
 * program: at the program's end (a destructor: every dlopen() done) it
 * looks at the process from inside and appends one line to the file
 * $LIBGUARD_ELF_PROBE_OUT:
 *
 *   pid=P objects=N vmas=V file_holes=H holes_loaded=HL holes_other=HO
 *   hole_pages=HP faulting=F guard_marked=G prot_none=PN unmapped=U occupied=O
 *   should_fault=S should_fault_faulting=SF
 *
 * objects: ELF objects of the program's namespace (dl_iterate_phdr(), the
 * vDSO left out); vmas: lines of /proc/self/maps; file_holes: `---p` VMAs
 * of a file, the holes ld.so leaves between the segments of an object
 * laid out for larger pages than the kernel's; holes_loaded: those inside
 * the program's objects, holes_other: elsewhere (an LD_AUDIT module and
 * the libc of its namespace, which dl_iterate_phdr() does not show).
 * hole_pages: the pages between the PT_LOAD segments of the program's
 * objects, from their program headers (so they are found whether the
 * hole is still a `---p` VMA or a guard region inside a neighbour);
 * faulting: how many of them fault on a read, each page tried in a forked
 * child (native guards survive fork); guard_marked: how many carry a
 * guard marker (/proc/self/pagemap bit 58); prot_none: how many lie in a
 * VMA without access; unmapped: in no VMA at all (the program and ld.so
 * are mapped by the kernel, which leaves their gaps unmapped, not
 * PROT_NONE); occupied: in an accessible VMA without a guard marker (a
 * later mapping placed in such an unmapped gap, which is then no hole of
 * the object); should_fault: the others, and should_fault_faulting how
 * many of them do (every one, or the hole leaks). The probe's own mappings are not counted (it is
 * linked for 4 KiB pages: it has no holes of its own).
 *
 * It links nothing but libc, so that it changes nothing it measures.
 */
#include <fcntl.h>
#include <link.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_HOLES 4096
#define MAX_VMAS 16384

struct range {
	uintptr_t start, end;
};

static struct range holes[MAX_HOLES];	/* from the program headers */
static struct range objects[1024];	/* each object's extent */
static size_t nholes, nobjects;
static uintptr_t self_lo, self_hi;	/* this probe's extent */
static size_t page;

static uintptr_t up(uintptr_t a)
{
	return (a + page - 1) & ~(uintptr_t)(page - 1);
}

static uintptr_t down(uintptr_t a)
{
	return a & ~(uintptr_t)(page - 1);
}

static int note_object(struct dl_phdr_info *info, size_t size, void *data)
{
	uintptr_t lo = UINTPTR_MAX, hi = 0, prev_end = 0;
	bool self = false, any = false;

	(void)size;
	(void)data;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t s, e;

		if (ph->p_type != PT_LOAD)
			continue;
		/* PT_LOAD entries are sorted by p_vaddr (ELF's rule) */
		s = info->dlpi_addr + ph->p_vaddr;
		e = s + ph->p_memsz;
		if ((uintptr_t)note_object >= s && (uintptr_t)note_object < e)
			self = true;
		if (any && down(s) > up(prev_end) && nholes < MAX_HOLES)
			holes[nholes++] = (struct range){ up(prev_end), down(s) };
		prev_end = e;
		lo = s < lo ? s : lo;
		hi = e > hi ? e : hi;
		any = true;
	}
	if (!any)
		return 0;
	if (self) {
		self_lo = down(lo);
		self_hi = up(hi);
		return 0;
	}
	/* the vDSO: mapped by the kernel, not a file */
	if (info->dlpi_name && !strncmp(info->dlpi_name, "linux-vdso", 10))
		return 0;
	if (nobjects < sizeof(objects) / sizeof(objects[0]))
		objects[nobjects++] = (struct range){ down(lo), up(hi) };
	return 0;
}

struct vma {
	uintptr_t start, end;
	bool none;
};

static struct vma vmas[MAX_VMAS];
static size_t nvmas;

/* Each hole page, with what is there now. */
enum { C_UNMAPPED, C_PROT_NONE, C_GUARDED, C_OCCUPIED, NCAT };
#define MAX_PAGES 65536
static uintptr_t pages[MAX_PAGES];
static unsigned char cat[MAX_PAGES];
static size_t npages;

static sigjmp_buf jump;

static void on_fault(int sig)
{
	siglongjmp(jump, sig);
}

static char read_faults(uintptr_t addr)
{
	if (sigsetjmp(jump, 1))
		return 1;
	(void)*(volatile char *)addr;
	return 0;
}

static unsigned char faults[MAX_PAGES];

/* How many hole pages fault on a read (faults[] per page), tried in a child. -1 on error. */
static long count_faulting(void)
{
	sigset_t chld, old;
	long n = 0;
	int fds[2], status;
	pid_t pid;

	if (!npages)
		return 0;
	if (pipe(fds))
		return -1;
	/* the program's SIGCHLD handler (bash's) must not reap our child */
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &old);
	pid = fork();
	if (pid < 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		return -1;
	}
	if (pid == 0) {
		struct sigaction sa = { .sa_handler = on_fault };

		sigemptyset(&sa.sa_mask);
		sa.sa_flags = SA_NODEFER;
		sigaction(SIGSEGV, &sa, NULL);
		sigaction(SIGBUS, &sa, NULL);
		close(fds[0]);
		for (size_t i = 0; i < npages; i++) {
			char f = read_faults(pages[i]);

			if (write(fds[1], &f, 1) != 1)
				_exit(1);
		}
		_exit(0);
	}
	close(fds[1]);
	for (size_t i = 0; i < npages; i++) {
		char f;

		if (read(fds[0], &f, 1) != 1)
			break;
		faults[i] = f;
		n += f;
	}
	close(fds[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		n = -1;
	sigprocmask(SIG_SETMASK, &old, NULL);
	return n;
}

static bool inside(uintptr_t a, const struct range *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a >= r[i].start && a < r[i].end)
			return true;
	return false;
}

__attribute__((destructor)) static void probe_at_exit(void)
{
	const char *out = getenv("LIBGUARD_ELF_PROBE_OUT");
	long file_holes = 0, holes_loaded = 0, holes_other = 0, hole_pages = 0, faulting;
	long guard_marked = 0, prot_none = 0, vma_count = 0, ncat[NCAT] = { 0 };
	long should_fault_faulting = 0;
	char line[4096], msg[640];
	FILE *f;
	int pm, fd, len;

	if (!out)
		return;
	page = (size_t)sysconf(_SC_PAGESIZE);
	dl_iterate_phdr(note_object, NULL);
	f = fopen("/proc/self/maps", "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		uintptr_t s, e;
		char perms[5];

		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %4s", &s, &e, perms) != 3)
			continue;
		if (s >= self_lo && e <= self_hi)
			continue;
		vma_count++;
		if (nvmas < MAX_VMAS)
			vmas[nvmas++] = (struct vma){ s, e, !strncmp(perms, "---", 3) };
		if (strcmp(perms, "---p") || !strchr(line, '/'))
			continue;
		file_holes++;
		if (inside(s, objects, nobjects))
			holes_loaded++;
		else
			holes_other++;
	}
	fclose(f);

	pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	for (size_t i = 0; i < nholes; i++)
		for (uintptr_t a = holes[i].start; a < holes[i].end && npages < MAX_PAGES; a += page) {
			uint64_t ent = 0;
			int c = C_UNMAPPED;

			hole_pages++;
			if (pm >= 0 && pread(pm, &ent, sizeof(ent), (off_t)(a / page * 8)) == sizeof(ent) &&
			    (ent >> 58 & 1))
				guard_marked++;
			for (size_t v = 0; v < nvmas; v++)
				if (a >= vmas[v].start && a < vmas[v].end) {
					prot_none += vmas[v].none;
					c = vmas[v].none ? C_PROT_NONE : (ent >> 58 & 1) ? C_GUARDED : C_OCCUPIED;
					break;
				}
			pages[npages] = a;
			cat[npages++] = (unsigned char)c;
		}
	if (pm >= 0)
		close(pm);
	faulting = count_faulting();
	for (size_t i = 0; i < npages; i++) {
		ncat[cat[i]]++;
		if (cat[i] != C_OCCUPIED && faulting >= 0)
			should_fault_faulting += faults[i];
	}

	len = snprintf(msg, sizeof(msg),
		       "pid=%d objects=%zu vmas=%ld file_holes=%ld holes_loaded=%ld holes_other=%ld "
		       "hole_pages=%ld faulting=%ld guard_marked=%ld prot_none=%ld unmapped=%ld "
		       "occupied=%ld should_fault=%ld should_fault_faulting=%ld\n",
		       (int)getpid(), nobjects, vma_count, file_holes, holes_loaded, holes_other,
		       hole_pages, faulting, guard_marked, prot_none, ncat[C_UNMAPPED],
		       ncat[C_OCCUPIED], hole_pages - ncat[C_OCCUPIED], should_fault_faulting);
	fd = open(out, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0) {
		if (write(fd, msg, (size_t)len) != len)
			(void)0;	/* the driver finds no line and says so */
		close(fd);
	}
}
