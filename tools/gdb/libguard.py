# SPDX-License-Identifier: LGPL-2.1-or-later
"""gdb commands for libguard: `info guards` lists the live inferior's guards.

Load with `source /usr/share/libguard/gdb/libguard.py` (or from .gdbinit).

`info guards` runs guard-maps (LIBGUARD_GUARD_MAPS, else guard-maps on
PATH) on the inferior's
pid and prints each native guard range, then each PROT_NONE mapping (a
fallback guard of libguard's, or any other PROT_NONE reservation: the
kernel does not tell them apart). gdb itself cannot read or write a
native guard ("Cannot access memory"), but it can read a PROT_NONE one.
A core file has no record of guards: the command needs a live process.
"""

import json
import os
import shutil
import subprocess

import gdb


def _guard_maps():
    prog = os.environ.get("LIBGUARD_GUARD_MAPS") or shutil.which("guard-maps")
    if prog:
        return prog
    raise gdb.GdbError("info guards: guard-maps not found (set LIBGUARD_GUARD_MAPS)")


class InfoGuards(gdb.Command):
    """List the inferior's guard regions: native guards, then PROT_NONE mappings.

Usage: info guards
Runs guard-maps --json on the inferior's pid."""

    def __init__(self):
        super().__init__("info guards", gdb.COMMAND_STATUS)

    def invoke(self, arg, from_tty):
        if arg.strip():
            raise gdb.GdbError("info guards takes no argument")
        pid = gdb.selected_inferior().pid
        if pid <= 0:
            raise gdb.GdbError("info guards: no live process (a core file has no record of guards)")
        res = subprocess.run([_guard_maps(), "--json", str(pid)], capture_output=True,
                             text=True, check=False)
        if res.returncode != 0:
            raise gdb.GdbError("info guards: guard-maps failed: " + res.stderr.strip())
        regions = json.loads(res.stdout)["regions"]
        native = [r for r in regions if r["guard"]]
        prot_none = [r for r in regions if not r["guard"] and r["perms"][:3] == "---"]
        gdb.write("%d native guard range(s)\n" % len(native))
        for r in native:
            gdb.write("  native     %s-%s %s %s\n" % (r["start"], r["end"], r["perms"],
                                                    self._backing(r)))
        gdb.write("%d PROT_NONE mapping(s) (fallback guards or other reservations)\n"
                  % len(prot_none))
        for r in prot_none:
            gdb.write("  PROT_NONE  %s-%s %s %s\n" % (r["start"], r["end"], r["perms"],
                                                    self._backing(r)))

    @staticmethod
    def _backing(r):
        # A native guard's name is "[guard]"; its inode tells anonymous from file.
        if r["guard"]:
            return "anonymous" if r["inode"] == 0 else "inode %d offset 0x%x" % (r["inode"],
                                                                                 r["offset"])
        return r["name"] or "anonymous"


InfoGuards()
