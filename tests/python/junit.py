#!/usr/bin/env python3
"""Per-test results of `python3 -m test --junit-xml` runs, and their comparison.

  junit.py table RUN.xml          one line per test case: id, result
  junit.py compare [--expected FILE --where guest|host] MODE=RUN.tsv...
                                  the counts per mode; exit 1 if any case
                                  has a different result in two modes; a
                                  mode named again adds its next part (the
                                  parts of a run --shard K/N, in one order
                                  for every mode)
A result is passed, failed, error or skipped.

--expected FILE lists cases whose result may legitimately differ, one a
line: CASE WHERE MODES REASON (WHERE: guest, host or anywhere; MODES: a
glob of the modes that may differ from the first mode given). Such a
difference is printed with its reason and not counted; any other mode
differing on that case still is.

A case is its name within a part: Python's suite runs some test classes
from two modules (test_xml_etree's in test_xml_etree_c, test_profile's in
test_cprofile), so one name can be two cases in two parts.
"""
import collections
import fnmatch
import sys
import xml.etree.ElementTree as ET


def table(path):
    root = ET.parse(path).getroot()
    for case in root.iter('testcase'):
        name = case.get('name', '?')
        result = 'passed'
        for child in case:
            if child.tag in ('failure', 'error', 'skipped'):
                result = 'failed' if child.tag == 'failure' else child.tag
                break
        print(f'{name}\t{result}')


def load(path):
    res = {}
    with open(path) as f:
        for line in f:
            name, result = line.rstrip('\n').split('\t')
            # A name seen twice (a test repeated) keeps its worst result.
            if res.get(name) in ('failed', 'error'):
                continue
            res[name] = result
    return res


def load_expected(path, where):
    """{case: (modes glob, reason)} for the lines of FILE that apply WHERE."""
    out = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.split('#', 1)[0].strip()
            if not line:
                continue
            fields = line.split(None, 3)
            if len(fields) < 4 or fields[1] not in ('guest', 'host', 'anywhere'):
                print(f'{path}:{n}: want CASE guest|host|anywhere MODES REASON', file=sys.stderr)
                sys.exit(2)
            if fields[1] in ('anywhere', where):
                out[fields[0]] = (fields[2], fields[3])
    return out


def compare(args):
    expected, where, path = {}, None, None
    while args and args[0] in ('--expected', '--where'):
        if len(args) < 2:
            print(__doc__, file=sys.stderr)
            sys.exit(2)
        if args[0] == '--where':
            where = args[1]
        else:
            path = args[1]
        args = args[2:]
    if where is not None or path is not None:
        if where not in ('guest', 'host') or path is None:
            print('--expected FILE and --where guest|host go together', file=sys.stderr)
            sys.exit(2)
        expected = load_expected(path, where)
    runs = {}
    paths = collections.defaultdict(set)
    for a in args:
        mode, _, path = a.partition('=')
        if path in paths[mode]:
            print(f'{path}: given twice for mode {mode}', file=sys.stderr)
            sys.exit(2)
        paths[mode].add(path)
        seen = runs.setdefault(mode, {})
        part = len(paths[mode]) - 1
        seen.update(((part, name), r) for name, r in load(path).items())
    nparts = {m: len(p) for m, p in paths.items()}
    if len(set(nparts.values())) > 1:
        print('modes have different numbers of parts: ' +
              ', '.join(f'{m} {n}' for m, n in nparts.items()), file=sys.stderr)
        sys.exit(2)
    kinds = ('passed', 'failed', 'error', 'skipped')
    print('mode\tcases\t' + '\t'.join(kinds))
    for mode, res in runs.items():
        c = collections.Counter(res.values())
        print(f'{mode}\t{len(res)}\t' + '\t'.join(str(c[k]) for k in kinds))
    keys = sorted(set().union(*runs.values()))

    def show(key):
        part, name = key
        return name if max(nparts.values()) == 1 else f'{name} (part {part + 1})'

    diff = [k for k in keys if len({r.get(k, 'absent') for r in runs.values()}) > 1]
    bad_everywhere = [k for k in keys
                      if all(r.get(k) in ('failed', 'error') for r in runs.values())]
    for k in bad_everywhere:
        print(f'fails in every mode (not the module\'s): {show(k)}')
    first = next(iter(runs))
    counted = []
    for k in diff:
        results = ', '.join(f'{m} {r.get(k, "absent")}' for m, r in runs.items())
        differing = [m for m, r in runs.items() if r.get(k, 'absent') != runs[first].get(k, 'absent')]
        glob, why = expected.get(k[1], (None, None))
        if glob and all(fnmatch.fnmatchcase(m, glob) for m in differing):
            print(f'expected, not counted: {show(k)}: {results} ({why})')
        else:
            print(f'DIFFERS: {show(k)}: {results}')
            counted.append(k)
    print(f'{len(keys)} cases, {len(counted)} with different results'
          + (f' (and {len(diff) - len(counted)} expected)' if len(diff) > len(counted) else ''))
    return 1 if counted else 0


def main():
    if len(sys.argv) == 3 and sys.argv[1] == 'table':
        table(sys.argv[2])
        return 0
    if len(sys.argv) >= 3 and sys.argv[1] == 'compare':
        return compare(sys.argv[2:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main())
