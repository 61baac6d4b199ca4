#!/usr/bin/env python3
"""Per-test results of `python3 -m test --junit-xml` runs, and their comparison.

  junit.py table RUN.xml          one line per test case: id, result
  junit.py compare MODE=RUN.tsv...  the counts per mode; exit 1 if any case
                                  has a different result in two modes; a
                                  mode named again adds its next part (the
                                  parts of a run --shard K/N, in one order
                                  for every mode)
A result is passed, failed, error or skipped.

A case is its name within a part: Python's suite runs some test classes
from two modules (test_xml_etree's in test_xml_etree_c, test_profile's in
test_cprofile), so one name can be two cases in two parts.
"""
import collections
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


def compare(args):
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
    for k in diff:
        print('DIFFERS: ' + show(k) + ': ' +
              ', '.join(f'{m} {r.get(k, "absent")}' for m, r in runs.items()))
    print(f'{len(keys)} cases, {len(diff)} with different results')
    return 1 if diff else 0


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
