// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Lines of a /proc text file, read into a buffer of the caller's (on its
 * stack): what the fallback reads with lg_lock() held, where stdio's
 * malloc() must not be called (records.c says why).
 */
#include "internal.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

int lg_lines_open(struct lg_lines *l, const char *path)
{
	l->fd = open(path, O_RDONLY | O_CLOEXEC);
	l->len = l->pos = 0;
	l->skip = false;
	return l->fd < 0 ? -errno : 0;
}

void lg_lines_close(struct lg_lines *l)
{
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
}

int lg_lines_next(struct lg_lines *l, char **line)
{
	for (;;) {
		char *nl = memchr(l->buf + l->pos, '\n', l->len - l->pos);
		ssize_t got;

		if (nl) {
			bool skip = l->skip;

			*nl = 0;
			*line = l->buf + l->pos;
			l->pos = (size_t)(nl - l->buf) + 1;
			l->skip = false;
			if (!skip)
				return 1;
			continue;	/* the tail of a line that was cut */
		}
		memmove(l->buf, l->buf + l->pos, l->len - l->pos);
		l->len -= l->pos;
		l->pos = 0;
		if (l->len == sizeof(l->buf) - 1) {
			/* longer than the buffer: its head, the rest dropped */
			bool skip = l->skip;

			l->buf[l->len] = 0;
			*line = l->buf;
			l->len = 0;
			l->skip = true;
			if (!skip)
				return 1;
			continue;
		}
		got = read(l->fd, l->buf + l->len, sizeof(l->buf) - 1 - l->len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		if (got == 0) {
			bool last = l->len && !l->skip;

			l->buf[l->len] = 0;	/* a last line without a newline */
			*line = l->buf;
			l->len = 0;
			return last;
		}
		l->len += (size_t)got;
	}
}
