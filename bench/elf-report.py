#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The CSV and the table of bench/elf-holes.

  elf-report.py summarize RAW CSV    bench-elf-holes lines -> CSV (+ CSV's .notes)
  elf-report.py report RESULTS_DIR   newest *-elf.csv of each run -> elf-holes.md

Raw lines are "program,mode,metric,rep,value,unit": rep 0 for the probe's
counts, 1..N for exec_us; "# P libguard-audit stderr: ..." comments carry
what the audit module said. The CSV has columns program,mode,metric,value,unit:
the counts as they are; exec_us's median, _spread (interquartile range /
median, %) and _reps; and per-repetition ratios (the modes of a repetition
ran side by side), their median and spread: ratio_vs_no-audit for
null-audit and libguard-audit, ratio_vs_null-audit for libguard-audit.
"""
import collections
import csv
import glob
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import spread_pct  # noqa: E402  (one definition for both reports)

MODES = ["no-audit", "null-audit", "libguard-audit"]
RUNS = ["vm-patched-arm64", "vm-stock-arm64", "host"]
RATIOS = [("null-audit", "no-audit"), ("libguard-audit", "no-audit"),
          ("libguard-audit", "null-audit")]


def summarize(raw_path, csv_path):
    times = collections.defaultdict(dict)  # (program, mode) -> {rep: us}
    rows, notes, order, missing = [], [], [], []
    with open(raw_path) as f:
        for line in f:
            line = line.rstrip("\n")
            m = re.match(r"# (\S+) libguard-audit stderr: (.*)", line)
            if m:
                notes.append(f"{m.group(1)}: {m.group(2)}")
                continue
            if line.startswith("# failed: "):
                notes.append("FAILED " + line[10:])
                continue
            if line.startswith("# missing: "):
                missing.append(line[11:])
                continue
            if not line or line.startswith("#"):
                continue
            parts = line.split(",")
            if len(parts) != 6:
                print(f"elf-report.py: {raw_path}: ignored: {line}", file=sys.stderr)
                continue
            prog, mode, metric, rep, value, unit = parts
            if prog not in order:
                order.append(prog)
            if int(rep) == 0:
                rows.append((prog, mode, metric, float(value), unit))
            else:
                times[(prog, mode)][int(rep)] = float(value)
    for (prog, mode), reps in times.items():
        v = list(reps.values())
        rows += [(prog, mode, "exec_us", statistics.median(v), "us"),
                 (prog, mode, "exec_us_spread", spread_pct(v), "%"),
                 (prog, mode, "exec_us_reps", len(v), "count")]
    for prog in order:
        for mode, base in RATIOS:
            a, b = times.get((prog, mode)), times.get((prog, base))
            if not a or not b:
                continue
            r = [a[i] / b[i] for i in sorted(set(a) & set(b)) if b[i] > 0]
            if r:
                rows += [(prog, mode, "ratio_vs_" + base, statistics.median(r), "x"),
                         (prog, mode, "ratio_vs_" + base + "_spread", spread_pct(r), "%")]
    with open(csv_path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["program", "mode", "metric", "value", "unit"])
        for r in rows:
            w.writerow([r[0], r[1], r[2], f"{r[3]:.6g}", r[4]])
        for m in missing:
            w.writerow([m, "", "missing", 1, "count"])
    with open(csv_path[:-4] + ".notes", "w") as f:
        f.write("".join(n + "\n" for n in notes))


def load(csv_path):
    data = collections.defaultdict(dict)  # program -> {(mode, metric): value}
    order = []
    with open(csv_path) as f:
        for r in csv.DictReader(f):
            if r["program"] not in order:
                order.append(r["program"])
            data[r["program"]][(r["mode"], r["metric"])] = float(r["value"])
    return order, data


def fmt_int(v):
    return "–" if v is None else f"{int(v)}"


def ratio(d, mode, base):
    v = d.get((mode, "ratio_vs_" + base))
    if v is None:
        return "–"
    s = d.get((mode, "ratio_vs_" + base + "_spread"), 0)
    return f"{v:.2f}x (±{s / 2:.0f}%)"


def table(csv_path):
    order, data = load(csv_path)
    out = ["| program | objects | VMAs: no audit / null audit / libguard | `---p` file holes: no audit → libguard "
           "(of them in the audit namespace) | hole pages that must fault: faulting / all (guard markers, PROT_NONE, unmapped); occupied by other mappings "
           "| exec, no audit | null / no audit | libguard / no audit | libguard / null |",
           "|---|---|---|---|---|---|---|---|---|"]
    missing = [p for p in order if ("", "missing") in data[p]]
    for p in order:
        if p in missing:
            continue
        d = data[p]
        g = lambda mode, metric: d.get((mode, metric))  # noqa: E731
        pages = g("libguard-audit", "should_fault")
        fault = g("libguard-audit", "should_fault_faulting")
        judged = pages is not None
        if not judged:  # a probe from before should_fault: every hole page, occupied ones too
            pages, fault = g("libguard-audit", "hole_pages"), g("libguard-audit", "faulting")
        ok = "✅" if pages is not None and fault == pages else "❌"
        if not pages or not judged:
            ok = ""
        base_fault = g("no-audit", "should_fault_faulting")
        base_pages = g("no-audit", "should_fault")
        t = g("no-audit", "exec_us")
        out.append(
            f"| `{p}` | {fmt_int(g('no-audit', 'objects'))} "
            f"| {fmt_int(g('no-audit', 'vmas'))} / {fmt_int(g('null-audit', 'vmas'))} / "
            f"{fmt_int(g('libguard-audit', 'vmas'))} "
            f"| {fmt_int(g('no-audit', 'file_holes'))} → {fmt_int(g('libguard-audit', 'file_holes'))} "
            f"({fmt_int(g('libguard-audit', 'holes_other'))}) "
            f"| {fmt_int(fault)} / {fmt_int(pages)} {ok} ({fmt_int(g('libguard-audit', 'guard_marked'))}, "
            f"{fmt_int(g('libguard-audit', 'prot_none'))}, {fmt_int(g('libguard-audit', 'unmapped'))}); "
            f"{fmt_int(g('libguard-audit', 'occupied'))}; without audit {fmt_int(base_fault)} / "
            f"{fmt_int(base_pages)} "
            f"| {'–' if t is None else f'{t / 1000:.1f} ms'} "
            f"| {ratio(d, 'null-audit', 'no-audit')} | {ratio(d, 'libguard-audit', 'no-audit')} "
            f"| {ratio(d, 'libguard-audit', 'null-audit')} |")
    if missing:
        out += ["", "Not in this root, left out: " + ", ".join(f"`{m}`" for m in missing) + "."]
    return out


def report(results):
    lines = ["# ELF holes: LD_AUDIT=libguard-audit.so on real programs",
             "",
             "Generated by `bench/elf-holes` (`bench/elf-report.py`); see bench/README.md.",
             "Counts are taken at each program's end from inside it (bench/elf-probe.c):",
             "VMAs and `---p` file holes in /proc/self/maps; every page between the PT_LOAD",
             "segments of the program's objects read in a forked child (faulting = still a hole).",
             "The audit namespace (the module and its own libc) is not the program's: its",
             "holes are counted apart. Exec time: posix_spawn() to waitpid(), median of the",
             "repetitions; ratios are medians of per-repetition ratios (modes side by side),",
             "± half their interquartile range. Under TCG only the ratios mean anything.",
             ""]
    found = False
    for run in RUNS:
        csvs = sorted(glob.glob(os.path.join(results, f"*-{run}-elf.csv")))
        if not csvs:
            continue
        found = True
        path = csvs[-1]
        base = os.path.basename(path)[:-4]
        meta = path[:-4] + ".meta"
        lines.append(f"## {run} ({base[:10]})")
        lines.append("")
        if os.path.exists(meta):
            lines.append(open(meta).read().strip())
            lines.append("")
        lines += table(path)
        notes = path[:-4] + ".notes"
        if os.path.exists(notes):
            said = [n for n in open(notes).read().splitlines() if n.strip()]
            if said:
                lines += ["", "What the module said (`LIBGUARD_AUDIT_VERBOSE=1`, first 12 lines; all in "
                          f"`{os.path.basename(notes)}`):", "", "```"] + said[:12] + ["```"]
        lines.append("")
    if not found:
        lines.append("No runs yet.")
    with open(os.path.join(results, "elf-holes.md"), "w") as f:
        f.write("\n".join(lines).rstrip("\n") + "\n")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "summarize":
        summarize(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "report":
        report(sys.argv[2])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
