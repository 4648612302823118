#!/usr/bin/env python3
"""Replay PELT utilisation from scripts/start-race-trace.sh's traces and ask what SIS_UTIL's
scan depth was when one bench child woke the other.

    scripts/sis-util-check.py RUN1.trace[.xz] RUN1.json[.xz] [RUN2.trace RUN2.json ...]

For every task seen in the trace: util_avg (1024 while running, geometric average with
y^32 = 1/2 over 1024-us periods, as kernel/sched/pelt.c) and load_avg (1024 while runnable).
A task's averages stay on the CPU it last ran or was woken on (blocked ones decay there);
a new task starts as post_init_entity_util_avg sets it (half the CPU's spare capacity, or the
CPU's util scaled by weight / load, whichever is smaller). Tasks that existed before the trace
start at 0: the CPU utilisations are lower bounds.

At the wake-up of one child by the other (the cgroup_mutex hand-over), it prints each CPU's
util, the LLC's sum, and update_idle_cpu_scan's nr_idle_scan (imbalance_pct 117, LLC of 2
CPUs) at that moment and its smallest and largest over the 32 ms before (the kernel computes
it at a periodic balance in that window), the wakee's previous CPU, the idle CPUs, and where the wakee went: SIS_UTIL decides only
when the previous CPU is the waker's (busy) one and the other CPU is idle.
"""
import json
import lzma
import re
import sys

from ftrace_lines import matches

PERIOD = 1024e-6
CAP = 1024
NR_LLC = 2
PCT = 117


def events(path):
    """(time, CPU, event, fields, pid of the task the event ran in) per line."""
    for m in matches(path):
        yield float(m[4]), int(m[3]), m[5], m[6], int(m[2])


def field(s, key):
    m = re.search(rf"\b{key}=(\S+)", s)
    return m[1] if m else None


class Task:
    def __init__(self, cpu, t, util=0.0, load=0.0):
        self.cpu, self.last, self.util, self.load = cpu, t, util, load
        self.running = False
        self.runnable = False

    def update(self, t):
        if t <= self.last:
            return
        y = 0.5 ** ((t - self.last) / PERIOD / 32)
        self.util = self.util * y + (CAP if self.running else 0) * (1 - y)
        self.load = self.load * y + (CAP if self.runnable else 0) * (1 - y)
        self.last = t


def nr_idle_scan(sum_util):
    # update_idle_cpu_scan: x = sum_util / llc_weight; y = 1024 - min(1024, x^2 pct^2 /
    # (10000 * 1024)); nr = y * llc_weight / 1024.
    x = int(sum_util) // NR_LLC
    tmp = min(x * x * PCT * PCT // (10000 * CAP), CAP)
    return (CAP - tmp) * NR_LLC // CAP


def main(args):
    for trace, doc in zip(args[::2], args[1::2]):
        opener = lzma.open if doc.endswith(".xz") else open
        with opener(doc, "rt") as f:
            procs = json.load(f)["runs"][0]["extra"]["placement"]["processes"]
        kids = {procs[0]["pid"], procs[1]["pid"]}
        tasks = {}
        history = []  # (time, sum_util) samples at every event

        def task(pid, cpu, t):
            if pid not in tasks:
                tasks[pid] = Task(cpu, t)
            return tasks[pid]

        def cpu_util(c, t):
            s = 0.0
            for p in tasks.values():
                p.update(t)
                if p.cpu == c:
                    s += p.util
            return min(s, CAP)

        def cpu_load(c, t):
            return sum(p.load for p in tasks.values() if p.cpu == c)

        report = None
        running = {}  # pid on each CPU (0: idle)
        wakee_prev = idle = None
        for t, cpu, ev, rest, waker_pid in events(trace):
            for p in tasks.values():
                p.update(t)
            if ev == "sched_switch":
                prev, nxt = int(field(rest, "prev_pid")), int(field(rest, "next_pid"))
                running[cpu] = nxt
                if prev:
                    p = task(prev, cpu, t)
                    p.running = False
                    p.runnable = field(rest, "prev_state") in ("R", "R+")
                if nxt:
                    n = task(nxt, cpu, t)
                    n.running = n.runnable = True
                    n.cpu = cpu
            elif ev == "sched_wakeup_new":
                pid, c = int(field(rest, "pid")), int(field(rest, "target_cpu"))
                u, ld = cpu_util(c, t), cpu_load(c, t)
                cap = (CAP - u) / 2
                util = min(u * CAP / (ld + 1), cap) if u else cap
                tasks[pid] = Task(c, t, util=max(util, 0.0), load=CAP)
                tasks[pid].runnable = True
            elif ev == "sched_wakeup":
                pid, c = int(field(rest, "pid")), int(field(rest, "target_cpu"))
                p = task(pid, c, t)
                p.cpu, p.runnable = c, True
            elif ev == "sched_migrate_task":
                pid = int(field(rest, "pid"))
                p = task(pid, int(field(rest, "dest_cpu")), t)
                p.cpu = int(field(rest, "dest_cpu"))
            su = cpu_util(0, t) + cpu_util(1, t)
            history.append((t, su))
            if report is None and ev == "sched_waking":
                wakee = int(field(rest, "pid"))
                if wakee in kids and waker_pid in kids and waker_pid != wakee:
                    report = (t, cpu, wakee, [cpu_util(c, t) for c in range(NR_LLC)], su)
                    wakee_prev = tasks[wakee].cpu if wakee in tasks else None
                    idle = [c for c in range(NR_LLC) if c != cpu and running.get(c, 0) == 0]
            if report and len(report) == 5 and ev == "sched_wakeup" and \
                    int(field(rest, "pid")) == report[2]:
                report = report + (int(field(rest, "target_cpu")),)
                break
        if not report or len(report) < 6:
            print(f"{trace}: no child-to-child wake-up found")
            continue
        t0, wcpu, wakee, utils, su = report[:5]
        window = [nr_idle_scan(s) for (t, s) in history if t0 - 0.032 <= t <= t0]
        print(f"{trace}: t={t0:.6f} waker CPU {wcpu}, util per CPU "
              f"{', '.join(f'{u:.0f}' for u in utils)}, sum {su:.0f}: nr_idle_scan "
              f"{nr_idle_scan(su)} now, {min(window)}..{max(window)} over the 32 ms before; "
              f"wakee's prev CPU {wakee_prev}, idle CPUs {idle}, went to CPU {report[5]}")


if __name__ == "__main__":
    if len(sys.argv) < 3 or len(sys.argv) % 2 == 0:
        sys.exit(__doc__)
    main(sys.argv[1:])
