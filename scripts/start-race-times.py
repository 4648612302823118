#!/usr/bin/env python3
"""The CPU times of bench's start-up read off scripts/start-race-trace.sh's traces.

    scripts/start-race-times.py RUN1.trace[.xz] RUN1.json [RUN2.trace RUN2.json ...]

Per run (microseconds): bench's time from one fork to the next; each child's time from its
first run to blocking in its cgroup.procs write (state D); the first child's sleep until the
RCU grace-period kthread wakes it; the kthread's runs; each child's time from its attach to
cloning its sweeper. Medians last. The JSON is bench's (its placement names the workers).
"""
import json
import lzma
import statistics
import sys

from ftrace_lines import matches


def events(path):
    for m in matches(path):
        yield float(m[4]), int(m[2]), m[5], m[6]


def main(args):
    res = {k: [] for k in ["fork_gap", "c0_setup", "c1_setup", "gp", "kt_start", "kt_end",
                           "map_clone0", "map_clone1"]}
    for trace, doc in zip(args[::2], args[1::2]):
        opener = lzma.open if doc.endswith(".xz") else open
        with opener(doc, "rt") as f:
            procs = json.load(f)["runs"][0]["extra"]["placement"]["processes"]
        c0, c1 = procs[0]["pid"], procs[1]["pid"]
        ev = list(events(trace))

        def first(pred, after=0.0):
            return next((e[0] for e in ev if e[0] >= after and pred(e)), None)

        def add(key, a, b):
            if a is not None and b is not None:
                res[key].append(b - a)

        fork = lambda c: lambda e: e[2] == "sched_process_fork" and f"child_pid={c}" in e[3]
        f0, f1 = first(fork(c0)), first(fork(c1))
        add("fork_gap", f0, f1)
        # Events of a pid only after its fork (an earlier task may have had the pid).
        for c, key, f in ((c0, "c0_setup", f0), (c1, "c1_setup", f1)):
            sin = first(lambda e: e[2] == "sched_switch" and f"next_pid={c} " in e[3], f or 0.0)
            d = first(lambda e: e[2] == "sched_switch" and f"prev_pid={c} " in e[3]
                      and "prev_state=D" in e[3], f or 0.0)
            add(key, sin, d)
        d0 = first(lambda e: e[2] == "sched_switch" and f"prev_pid={c0} " in e[3]
                   and "prev_state=D" in e[3], f0 or 0.0)
        # The kthread that woke it: the waker of c0's first wake-up after it blocked.
        w0 = next((e[0] for e in ev if d0 and e[0] > d0 and e[2] == "sched_waking"
                   and f"pid={c0} " in e[3]), None)
        add("gp", d0, w0)
        kt = next((e[1] for e in ev if e[0] == w0), None)
        ins = [e[0] for e in ev if e[2] == "sched_switch" and f"next_pid={kt} " in e[3]
               and f0 <= e[0] <= w0]
        outs = [e[0] for e in ev if e[2] == "sched_switch" and f"prev_pid={kt} " in e[3]
                and f0 <= e[0] <= w0 + 1e-3]
        if ins and outs:
            res["kt_start"].append(outs[0] - ins[0])
            res["kt_end"].append(outs[-1] - ins[-1])
        for c, key in ((c0, "map_clone0"), (c1, "map_clone1")):
            a = first(lambda e: e[2] == "cgroup_attach_task" and f"pid={c} " in e[3])
            fk = first(lambda e: e[2] == "sched_process_fork"
                       and f"comm=reclaimlab pid={c} " in e[3])
            add(key, a, fk)
    for k, v in res.items():
        vals = " ".join(f"{x * 1e6:8.1f}" for x in v)
        med = statistics.median(v) * 1e6 if v else float("nan")
        print(f"{k:11s} {vals}  median {med:.1f} us")


if __name__ == "__main__":
    if len(sys.argv) < 3 or len(sys.argv) % 2 == 0:
        sys.exit(__doc__)
    main(sys.argv[1:])
