#!/usr/bin/env python3
"""idle-waker-placement.py TRACE...: where a wake-up issued on an idle CPU puts a task whose previous CPU is idle too.

From traces of scripts/migration-trace.sh (sched_switch, sched_waking, sched_migrate_task). A
wake-up issued on an idle CPU W (an interrupt in idle, before anything else was placed on W)
for a task whose previous CPU P is idle, with nothing placed on P either, goes through
wake_affine_idle: mainline keeps it on P when P is available_idle_cpu (idle and its vCPU not
reported preempted), and moves it to W only otherwise. Printed per bin of P's time since its
switch to idle: how many stayed and how many moved, so a rule (always W) and a delay (the host
reporting a halted vCPU preempted some time into its halt) can be told apart.
"""
import collections, re, sys, os
sys.path.insert(0, os.path.dirname(__file__))
from ftrace_lines import matches

BIN_US = 20


def events(path):
    cur, idle_since, placed = {}, {}, collections.defaultdict(set)
    last_waking = None
    out = []
    for m in matches(path):
        cpu, ts, name, f = int(m.group(3)), float(m.group(4)), m.group(5), m.group(6)
        if name == "sched_switch":
            nxt = int(re.search(r"next_pid=(\d+)", f).group(1))
            cur[cpu] = nxt
            for c in placed:
                placed[c].discard(nxt)
            if nxt == 0:
                # Nothing is queued on a CPU that goes idle.
                idle_since[cpu] = ts
                placed[cpu].clear()
            continue
        if name == "sched_waking":
            pid = int(re.search(r" pid=(\d+)", f).group(1))
            prev = int(re.search(r"target_cpu=(\d+)", f).group(1))
            free = lambda c: cur.get(c) == 0 and not placed[c]
            cand = prev != cpu and free(cpu) and free(prev) and prev in idle_since
            last_waking = [pid, cpu, prev, ts, cand, ts - idle_since.get(prev, ts)]
            # Until a migrate event says otherwise, the task goes back to prev.
            placed[prev].add(pid)
            if cand:
                out.append([last_waking[5], False])
            continue
        if name == "sched_migrate_task" and last_waking:
            pid = int(re.search(r" pid=(\d+)", f).group(1))
            if pid == last_waking[0] and cpu == last_waking[1]:
                d = int(re.search(r"dest_cpu=(\d+)", f).group(1))
                placed[last_waking[2]].discard(pid)
                placed[d].add(pid)
                if last_waking[4]:
                    out[-1][1] = d == cpu
            last_waking = None
    return out


def main():
    ev = [e for p in sys.argv[1:] for e in events(p)]
    bins = collections.defaultdict(lambda: [0, 0])
    for d, moved in ev:
        bins[int(d * 1e6 // BIN_US)][1 if moved else 0] += 1
    keys = sorted(bins)
    print(f"wake-ups from an idle CPU for a task whose previous CPU was idle: {len(ev)}")
    print(f"{'P idle for (us)':>16} {'stayed on P':>12} {'moved to W':>11}")
    for k in keys:
        st, mv = bins[k]
        print(f"{k * BIN_US:>7}-{(k + 1) * BIN_US:<8} {st:>12} {mv:>11}")
    st = sum(b[0] for b in bins.values()); mv = sum(b[1] for b in bins.values())
    print(f"{'all':>16} {st:>12} {mv:>11}")


if __name__ == "__main__":
    main()
