# SPDX-License-Identifier: LGPL-2.1-or-later
"""bench-malloc's Python workload (issue 38 item 6): a fixed, allocation-heavy
run of CPython with its default allocators (pymalloc for objects up to 512
bytes, malloc() beyond, and for every list, dict and string buffer that
grows), the same every time. Prints a checksum so that nothing is optimized
away; takes no arguments. Scale: argv[1] (default 1)."""
import json
import re
import sys
import zlib

scale = int(sys.argv[1]) if len(sys.argv) > 1 else 1
total = 0
for rnd in range(2 * scale):
    # dicts and lists that grow (realloc of their tables), large strings
    rows = [{"id": i, "name": f"user{i:06d}", "tags": [str(j) * (i % 7 + 1) for j in range(i % 11)],
             "score": i * 0.5} for i in range(40000)]
    text = json.dumps(rows)
    back = json.loads(text)
    total += len(text) + len(back)
    # regular expressions over a big string, and the strings they make
    words = re.findall(r"user\d+", text)
    total += len(set(words))
    # bytes objects of many sizes (malloc beyond 512 B), compressed
    blobs = [bytes([i % 251]) * (64 + (i * 37) % 9000) for i in range(20000)]
    total += sum(len(zlib.compress(b, 1)) for b in blobs[::50])
    # a string built piece by piece, a list sorted, a dict of tuples
    s = []
    for i in range(200000):
        s.append(str(i))
    joined = ",".join(s)
    total += len(joined)
    keys = sorted(joined.split(","), key=lambda x: (len(x), x[::-1]))
    total += len({k: (k, len(k)) for k in keys[:100000]})
    del rows, back, text, words, blobs, s, joined, keys
print(total)
