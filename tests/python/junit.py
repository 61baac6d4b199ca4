#!/usr/bin/env python3
"""Per-test results of `python3 -m test --junit-xml` runs, and their comparison.

  junit.py table RUN.xml          one line per test case: id, result
  junit.py compare MODE=RUN.tsv...  the counts per mode; exit 1 if any case
                                  has a different result in two modes; a
                                  mode named again adds that file's cases
                                  (the parts of a run --shard K/N)
A result is passed, failed, error or skipped.
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
    for a in args:
        mode, _, path = a.partition('=')
        part = load(path)
        seen = runs.setdefault(mode, {})
        twice = seen.keys() & part.keys()
        if twice:
            print(f'{path}: {len(twice)} case(s) of mode {mode} already in an earlier file, '
                  f'e.g. {min(twice)}', file=sys.stderr)
            sys.exit(2)
        seen.update(part)
    kinds = ('passed', 'failed', 'error', 'skipped')
    print('mode\tcases\t' + '\t'.join(kinds))
    for mode, res in runs.items():
        c = collections.Counter(res.values())
        print(f'{mode}\t{len(res)}\t' + '\t'.join(str(c[k]) for k in kinds))
    names = sorted(set().union(*runs.values()))
    diff = [n for n in names if len({r.get(n, 'absent') for r in runs.values()}) > 1]
    bad_everywhere = [n for n in names
                      if all(r.get(n) in ('failed', 'error') for r in runs.values())]
    for n in bad_everywhere:
        print(f'fails in every mode (not the module\'s): {n}')
    for n in diff:
        print('DIFFERS: ' + n + ': ' +
              ', '.join(f'{m} {r.get(n, "absent")}' for m, r in runs.items()))
    print(f'{len(names)} cases, {len(diff)} with different results')
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
