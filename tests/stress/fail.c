// SPDX-License-Identifier: LGPL-2.1-or-later
#include "fail.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

void stress_vfail(const char *prog, uint64_t seed, const char *fmt, va_list ap)
{
	char buf[1024];
	int n = snprintf(buf, sizeof(buf), "%s: FAIL (seed %llu): ", prog, (unsigned long long)seed);

	n += vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	if ((size_t)n >= sizeof(buf) - 1)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	if (write(2, buf, (size_t)n) < 0)
		_exit(1);
	_exit(1);
}

double stress_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
