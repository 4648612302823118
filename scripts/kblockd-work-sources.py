#!/usr/bin/env python3
"""kblockd-work-sources.py TRACE: where the block layer's kblockd work comes from, and what runs first after it.

From a trace of scripts/trace-bench.sh with sched_switch, sched_waking, workqueue_queue_work,
workqueue_execute_start/end, irq_handler_entry, softirq_entry/exit, block_rq_issue,
block_rq_complete, block_rq_requeue and block_unplug. For each queued kblockd work item
(blk_mq_run_work_fn, blk_mq_requeue_work, ...): the CPU and context it was queued from (hard
interrupt, softirq and which, or a task: after an unplug, and whether that task then blocked),
the time until its worker ran it and for how long; and, on a CPU that was idle when a block
softirq woke a task and queued kblockd work, which of the two ran first.
"""
import collections, re, sys, os
sys.path.insert(0, os.path.dirname(__file__))
from ftrace_lines import matches


def main():
    cur = {}
    in_soft = {}  # cpu -> softirq name while inside
    last_unplug = {}  # cpu -> (ts, explicit?)
    queued = {}  # work struct -> (ts, source)
    src = collections.Counter()
    wait, run = collections.defaultdict(list), collections.defaultdict(list)
    executing = {}  # cpu -> (ts, source)
    woke_in_soft = {}  # cpu -> (ts, pid) a task woken by this CPU's block softirq while idle
    first_after = collections.Counter()
    pending_order = {}  # cpu -> dict(pid woken, kworker queued)
    for m in matches(sys.argv[1]):
        comm, pid, cpu, ts, name, f = m.group(1), int(m.group(2)), int(m.group(3)), float(m.group(4)), m.group(5), m.group(6)
        flags = m.group(0).split("]")[1].split()[0]
        ctx = flags[2] if len(flags) > 2 else "."
        if name == "softirq_entry":
            in_soft[cpu] = re.search(r"action=(\w+)", f).group(1)
        elif name == "softirq_exit":
            in_soft.pop(cpu, None)
        elif name == "block_unplug":
            last_unplug[cpu] = (ts, "explicit" in f or "[" not in f, comm)
        elif name == "sched_waking" and in_soft.get(cpu) == "BLOCK" and cur.get(cpu) == 0:
            p = int(re.search(r" pid=(\d+)", f).group(1))
            o = pending_order.setdefault(cpu, {"ts": ts})
            o.setdefault("woken", p)
        elif name == "workqueue_queue_work" and "workqueue=kblockd" in f:
            fn = re.search(r"function=(\w+)", f).group(1)
            w = re.search(r"work struct=(\w+)", f).group(1)
            if ctx in "hH":
                s = "hard interrupt"
            elif ctx == "s":
                s = f"softirq {in_soft.get(cpu, '?')}"
            else:
                u = last_unplug.get(cpu)
                s = "task " + ("after an unplug" if u and ts - u[0] < 50e-6 else "other")
            s = f"{fn}: {s} on CPU {cpu}" + (" (idle)" if cur.get(cpu) == 0 else "")
            src[s] += 1
            queued[w] = (ts, s)
            if in_soft.get(cpu) == "BLOCK" and cpu in pending_order:
                pending_order[cpu].setdefault("kworker_queued", True)
        elif name == "workqueue_execute_start":
            w = re.search(r"work struct (\w+)", f).group(1)
            if w in queued:
                q = queued.pop(w)
                wait[q[1]].append(ts - q[0])
                executing[cpu] = (ts, q[1])
        elif name == "workqueue_execute_end" and cpu in executing:
            t0, s = executing.pop(cpu)
            run[s].append(ts - t0)
        elif name == "sched_switch":
            nxt = re.search(r"next_comm=(.*) next_pid=(\d+)", f)
            ncomm, npid = nxt.group(1), int(nxt.group(2))
            o = pending_order.get(cpu)
            if o and o.get("kworker_queued") and "woken" in o and cur.get(cpu) == 0:
                first_after["kworker first" if ncomm.startswith("kworker") else
                            "woken task first" if npid == o["woken"] else f"other first ({ncomm})"] += 1
            if o and cur.get(cpu) == 0:
                pending_order.pop(cpu, None)
            cur[cpu] = npid
    med = lambda xs: sorted(xs)[len(xs) // 2] * 1e6 if xs else float("nan")
    print("kblockd work queued, by source: count, median wait and run (us)")
    for s, n in src.most_common():
        print(f"  {n:7d}  {s:70s} wait {med(wait[s]):7.1f}  run {med(run[s]):7.1f}")
    print("an idle CPU's block softirq woke a task and queued kblockd work; which ran first:")
    for k, n in first_after.most_common():
        print(f"  {n:7d}  {k}")


if __name__ == "__main__":
    main()
