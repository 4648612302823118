#!/usr/bin/env python3
"""migration-causes.py TRACE BENCH_JSON: which scheduler path moved each worker (scripts/migration-trace.sh).

A sched_migrate_task right after the task's sched_waking on the same CPU is a wake-up placement
(try_to_wake_up -> select_task_rq_fair runs on the waker's CPU); one logged by a migration/N
stopper is an active balance; one in softirq context (flags column 's') a periodic balance
(sched_balance_softirq); one on the destination CPU outside softirq a new-idle balance. For
wake-up placements it prints what ran on the task's previous CPU and on the waker's CPU.
"""
import collections, json, re, sys
sys.path.insert(0, __import__("os").path.dirname(__file__))
from ftrace_lines import matches

KT = re.compile(r"^(kworker|rcu_|ksoftirqd|migration|kswapd|kcompactd|jbd2|irq/|kthreadd|khungtaskd|writeback|oom_reaper)")


def kind(comm, pid, workers):
    if pid in workers:
        return "worker"
    if comm.startswith("<idle>") or comm.startswith("swapper"):
        return "idle"
    if KT.match(comm):
        return comm.split("/")[0] if not comm.startswith("kworker") else "kworker"
    return "other user"


def main():
    trace, bench = sys.argv[1], sys.argv[2]
    b = json.load(open(bench))
    runs = b.get("runs") or [b]
    tasks = runs[0]["extra"]["placement"]["tasks"]
    workers = {t["tid"] for t in tasks if t["kind"] == "worker"}
    cur = {}  # cpu -> (comm, pid)
    last = {}  # pid -> (event, cpu, ts)
    causes = collections.Counter()
    detail = collections.Counter()
    t0 = t1 = None
    for m in matches(trace):
        comm, pid, cpu, flags_ts, name, f = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4), m.group(5), m.group(6)
        ts = float(flags_ts)
        t0 = ts if t0 is None else t0
        t1 = ts
        flags = m.group(0).split("]")[1].split()[0]
        if name == "sched_switch":
            nc = re.search(r"next_comm=(.*) next_pid=(\d+)", f)
            cur[cpu] = (nc.group(1), int(nc.group(2)))
            continue
        p = re.search(r" pid=(\d+)", f)
        if not p:
            continue
        tp = int(p.group(1))
        if name == "sched_migrate_task" and tp in workers:
            o = int(re.search(r"orig_cpu=(\d+)", f).group(1))
            d = int(re.search(r"dest_cpu=(\d+)", f).group(1))
            le = last.get(tp)
            if le and le[0] == "sched_waking" and le[1] == cpu and ts - le[2] < 1e-4:
                c = "wakeup"
                pc = cur.get(o, ("?", -1))
                dc = cur.get(d, ("?", -1))
                ctx = "hardirq" if "h" in flags.lower()[2:3] else "softirq" if "s" in flags[2:3] else "task"
                detail[(f"waker on CPU {cpu} ({'dest' if cpu == d else 'prev' if cpu == o else 'other'}), {ctx}, waker {kind(comm, pid, workers)}",
                        f"prev CPU runs {kind(pc[0], pc[1], workers)}", f"dest CPU runs {kind(dc[0], dc[1], workers)}")] += 1
            elif comm.startswith("migration/"):
                c = "active balance"
            elif "s" in flags[2:3]:
                c = "periodic balance (softirq)"
            elif cpu == d:
                c = "new-idle balance"
            else:
                c = f"other (on CPU {cpu}, {comm}, flags {flags})"
            causes[c] += 1
        last[tp] = (name, cpu, ts)
    span = (t1 - t0) if t0 is not None else 0
    print(f"trace span {span:.3f} s, workers {sorted(workers)}")
    tot = sum(causes.values())
    for c, n in causes.most_common():
        print(f"  {c:40s} {n:6d}  ({n / max(span, 1e-9) / max(len(workers), 1):.1f} per worker per second)")
    print(f"  {'all':40s} {tot:6d}  ({tot / max(span, 1e-9) / max(len(workers), 1):.1f} per worker per second)")
    print("wake-up placements:")
    for k, n in detail.most_common():
        print(f"  {n:6d}  " + "; ".join(k))


if __name__ == "__main__":
    main()
