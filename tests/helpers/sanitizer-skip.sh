#!/bin/sh
# sanitizer-skip.sh SANITIZER REASON: stands in for a test program that
# cannot run in this sanitizer build (tests/meson.build, sanitizer_skips);
# prints why and exits 77, which meson counts as a skip.
echo "SKIP under -fsanitize=$1: $2"
exit 77
