#!/usr/bin/env python3
"""Import every C extension module of this Python (lib-dynload and the
test suite's own), for the audit module's verbose count of holes."""
import importlib
import importlib.machinery
import os
import sys
import sysconfig

dynload = os.path.join(sysconfig.get_path('platstdlib'), 'lib-dynload')
names = set()
suffixes = sorted(importlib.machinery.EXTENSION_SUFFIXES, key=len, reverse=True)
for f in os.listdir(dynload):
    for suffix in suffixes:  # the longest first: '.so' ends them all
        if f.endswith(suffix):
            names.add(f[:-len(suffix)])
            break
failed = 0
for name in sorted(names):
    try:
        importlib.import_module(name)
        print(f'imported {name}', flush=True)
    except ImportError as e:
        # A module for something this system lacks (e.g. tkinter's Tk).
        print(f'not imported {name}: {e}', flush=True)
        failed += 1
print(f'{len(names) - failed} of {len(names)} extension modules imported', file=sys.stderr)
