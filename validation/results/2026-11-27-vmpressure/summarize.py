#!/usr/bin/env python3
"""Summarise measure.sh's trace: the workqueue's items by function (queueing CPU, run time),
the workload threads' switches to kworkers, and what each such preemption cost them.

    python3 summarize.py trace.txt bench.json   # output: profiles/kvm-guest-2vcpu.vmpressure.txt
"""
import collections
import json
import re
import statistics
import sys

LINE = re.compile(r"^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+):\s+(\w+):\s+(.*)$")


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))] if xs else float("nan")


def stats(xs):
    if not xs:
        return "n=0"
    return (f"n={len(xs)} median={statistics.median(xs):.2f} mean={statistics.mean(xs):.2f} "
            f"p10={pct(xs, 10):.2f} p90={pct(xs, 90):.2f} us")


def main(trace, bench):
    b = json.load(open(bench))
    run = b["runs"][0]
    events = []
    for ln in open(trace):
        m = LINE.match(ln)
        if m:
            comm, pid, cpu, ts, ev, rest = m.groups()
            events.append((float(ts) * 1e6, int(cpu), comm, int(pid), ev, rest))
    # The workload threads: the two reclaimlab tasks with the most run time.
    run_us = collections.Counter()
    curr = {}  # cpu -> (pid, comm, since)
    for ts, cpu, comm, pid, ev, rest in events:
        if ev != "sched_switch":
            continue
        f = dict(kv.split("=", 1) for kv in re.findall(r"(\w+=\S+)", rest))
        if cpu in curr and curr[cpu][1] == "reclaimlab":
            run_us[curr[cpu][0]] += ts - curr[cpu][2]
        curr[cpu] = (int(f["next_pid"]), f["next_comm"], ts)
    workers = {p for p, _ in run_us.most_common(2)}
    print(f"bench: {run['throughput']['value']} pages/s, pgscan_file {run['counters']['pgscan_file']}, "
          f"pgsteal_file {run['counters']['pgsteal_file']}, wall {run['wall_seconds']:.2f} s")
    print(f"workload threads (pid: run s): " +
          ", ".join(f"{p}: {run_us[p] / 1e6:.2f}" for p in sorted(workers)))
    print(f"trace: {events[0][0] / 1e6:.3f}-{events[-1][0] / 1e6:.3f} s, {len(events)} events")

    # Work items: queueing CPU against the CPU they ran on; run time per function.
    queued = collections.Counter()
    started = {}
    dur = collections.defaultdict(list)
    ran_on = collections.Counter()
    for ts, cpu, comm, pid, ev, rest in events:
        if ev == "workqueue_queue_work":
            fn = re.search(r"function=(\S+)", rest).group(1)
            wq = re.search(r"workqueue=(\S+)", rest).group(1)
            req = re.search(r"req_cpu=(\S+)", rest).group(1)
            tgt = re.search(r" cpu=(\S+)", rest).group(1)
            where = "same CPU" if tgt == str(cpu) else f"cpu={tgt}"
            queued[(fn, wq, f"req_cpu={req}", where)] += 1
        elif ev == "workqueue_execute_start":
            fn = rest.split("function ")[1].strip()
            started[(cpu, pid)] = (ts, fn)
            ran_on[(fn, comm.split("-")[0] if "/" in comm else comm, cpu)] += 1
        elif ev == "workqueue_execute_end":
            s = started.pop((cpu, pid), None)
            if s:
                dur[s[1]].append(ts - s[0])
    print("\n== work items queued (function, workqueue, req_cpu, target against the queueing CPU): count")
    for k, n in queued.most_common(15):
        print(f"  {n:6d}  {' '.join(k)}")
    print("\n== work items run: execute_start -> execute_end by function")
    for fn, xs in sorted(dur.items(), key=lambda kv: -len(kv[1]))[:15]:
        print(f"  {fn}: {stats(xs)}")
    print("\n== vmpressure_work_fn runs by CPU")
    for (fn, comm, cpu), n in sorted(ran_on.items()):
        if fn == "vmpressure_work_fn":
            print(f"  cpu {cpu} ({comm}): {n}")

    # Switches of the workload threads: who took the CPU when they stayed runnable.
    by_next = collections.Counter()
    off = []          # worker off CPU for a kworker: switch out -> switch back in (us)
    kslice = []       # kworker's slice (switch in -> switch out) in those preemptions
    vmpr_in = []      # vmpressure_work_fn time inside those slices
    other_in = []     # other items' time inside those slices
    items_per = []
    wake_lat = []     # kworker's sched_wakeup -> its switch in, when it preempted a worker
    kw_time = collections.Counter()
    last_wake = {}
    pending = {}      # cpu -> dict for a preemption in progress
    kw_since = {}
    for ts, cpu, comm, pid, ev, rest in events:
        if ev == "sched_wakeup":
            m = re.search(r"comm=(\S+) pid=(\d+)", rest)
            last_wake[int(m.group(2))] = ts
            continue
        p = pending.get(cpu)
        if ev == "workqueue_execute_start" and p and pid == p["kpid"]:
            p["start"] = (ts, rest.split("function ")[1].strip())
        elif ev == "workqueue_execute_end" and p and pid == p["kpid"] and "start" in p:
            t0, fn = p.pop("start")
            p["items"] += 1
            (p.setdefault("vm", []) if fn == "vmpressure_work_fn" else p.setdefault("ot", [])).append(ts - t0)
        if ev != "sched_switch":
            continue
        f = dict(kv.split("=", 1) for kv in re.findall(r"(\w+=\S+)", rest))
        prev, nxt = int(f["prev_pid"]), int(f["next_pid"])
        if f["prev_comm"].startswith("kworker/") and prev in kw_since:
            kw_time[(cpu, f["prev_comm"].split(":")[0])] += ts - kw_since.pop(prev)
        if f["next_comm"].startswith("kworker/"):
            kw_since[nxt] = ts
        if prev in workers and f["prev_state"].startswith("R"):
            by_next[f["next_comm"].split(":")[0] if f["next_comm"].startswith("kworker/") else f["next_comm"]] += 1
            if f["next_comm"].startswith("kworker/") and ":" in f["next_comm"]:
                pending[cpu] = {"out": ts, "worker": prev, "kpid": nxt, "items": 0}
                if nxt in last_wake:
                    wake_lat.append(ts - last_wake[nxt])
        elif p and prev == p["kpid"]:
            p["kend"] = ts
        if p and nxt == p["worker"]:
            off.append(ts - p["out"])
            if "kend" in p:
                kslice.append(p["kend"] - p["out"])
            vmpr_in.append(sum(p.get("vm", [])))
            other_in.append(sum(p.get("ot", [])))
            items_per.append(p["items"])
            del pending[cpu]
        elif p and nxt != p["kpid"] and prev != p["worker"] and "kend" in p and nxt != p["worker"]:
            # Someone else ran before the worker came back: not a clean preemption.
            del pending[cpu]
    print("\n== the workload threads switched out while runnable (prev_state R), by next task")
    for k, n in by_next.most_common(10):
        print(f"  {n:6d}  {k}")
    percpu = sum(n for k, n in by_next.items() if re.match(r"kworker/\d+$", k))
    print(f"  per thread per second, per-CPU kworkers: {percpu / 2 / 10:.0f}")
    print("\n== each preemption by a per-CPU kworker that gave the CPU straight back")
    print(f"  worker off CPU (its switch out -> its switch in): {stats(off)}")
    print(f"  kworker slice (switch in -> switch out): {stats(kslice)}")
    print(f"  vmpressure_work_fn inside it: {stats(vmpr_in)}")
    print(f"  other items inside it: {stats([x for x in other_in if x > 0])} (in {sum(1 for x in other_in if x > 0)} slices)")
    print(f"  items per slice: {collections.Counter(items_per).most_common(5)}")
    print(f"  kworker slice minus its items: {stats([k - v - o for k, v, o in zip(kslice, vmpr_in, other_in)])}")
    print(f"  kworker wake-up -> switch in: {stats(wake_lat)}")
    print("\n== kworker run time in the trace, by CPU and pool (s)")
    for (cpu, k), us in sorted(kw_time.items()):
        if us > 1000:
            print(f"  cpu {cpu} {k}: {us / 1e6:.4f}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
