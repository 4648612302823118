#!/usr/bin/env python3
"""softirq-rounds.py TRACE [CPU]: softirq rounds and ksoftirqd on one CPU (default 1) of a
trace-bench.sh trace recorded with sched_switch, sched_waking, irq_handler_entry and the irq
softirq_entry/exit/raise events (plain text or .xz).

Prints, for the CPU: handler durations by softirq and context; ksoftirqd's wake-ups and
what the round that woke it had woken and raised; for timer wake-ups of a kernel thread
(COMM, default rcu_preempt) in an idle CPU's softirq, the time from the wake-up to the
round's end, split by whether the round left work to ksoftirqd; ksoftirqd's runs, with its
own time (from its first event to its switch-out, less the handlers it ran); and where the
disk's interrupts fall against the tick (50-us bins from the CPU's most common TIMER phase).
"""
import collections
import lzma
import re
import statistics as st
import sys

PAT = re.compile(r"\s*(.+?)-(\d+)\s+\[(\d+)\]\s+(\S+)\s+([\d.]+): (\w+): (.*)")


def events(path, cpu):
    opener = lzma.open if path.endswith(".xz") else open
    out = []
    with opener(path, "rt") as f:
        for line in f:
            m = PAT.match(line)
            if m and int(m.group(3)) == cpu:
                comm, _pid, _c, flags, ts, ev, rest = m.groups()
                out.append((float(ts), comm, flags, ev, rest))
    return out


def field(rest):
    m = re.search(r"(action=\w+|comm=\S+|name=\S+)", rest)
    return m.group(1) if m else ""


def main():
    path = sys.argv[1]
    cpu = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    comm_t = sys.argv[3] if len(sys.argv) > 3 else "rcu_preempt"
    ev = events(path, cpu)
    ks = f"ksoftirqd/{cpu}"

    dur = collections.defaultdict(list)
    open_entry = None
    for ts, comm, _fl, e, rest in ev:
        if e == "softirq_entry":
            open_entry = (field(rest), ts, comm)
        elif e == "softirq_exit" and open_entry:
            v, s, c = open_entry
            ctx = "ksoftirqd" if c.startswith("ksoftirqd") else "irq"
            dur[(v, ctx)].append((ts - s) * 1e6)
            open_entry = None
    print(f"CPU {cpu}: softirq handlers (us)")
    for k in sorted(dur):
        xs = dur[k]
        print(f"  {k[0]:7s} {k[1]:9s} n {len(xs):5d}  median {st.median(xs):6.1f}  mean {st.mean(xs):6.1f}")

    # ksoftirqd wake-ups: the round's wake-ups and raises before it.
    shapes = collections.Counter()
    for i, (ts, comm, _fl, e, rest) in enumerate(ev):
        if e == "sched_waking" and f"comm={ks}" in rest:
            seq = []
            j = i - 1
            while j >= 0 and ev[j][3] != "sched_switch":
                seq.append(ev[j])
                j -= 1
            seq.reverse()
            woke = tuple(field(s[4]) for s in seq if s[3] == "sched_waking")
            raised = tuple(field(s[4]) for s in seq if s[3] == "softirq_raise")
            shapes[(comm, woke[:2], raised[:4])] += 1
    print(f"{ks} wake-ups: {sum(shapes.values())}; by (waker, first wake-ups, first raises):")
    for k, v in shapes.most_common(12):
        print(f"  {v:3d} {k}")

    # Timer wake-ups of comm_t from an idle CPU's softirq: wake-up to the round's end.
    left, kept = [], []
    for i, (ts, comm, fl, e, rest) in enumerate(ev):
        if e == "sched_waking" and f"comm={comm_t}" in rest and comm == "<idle>" and "s" in fl:
            j, last, deferred = i + 1, None, False
            while j < len(ev) and ev[j][3] != "sched_switch":
                if ev[j][3] == "softirq_exit":
                    last = ev[j][0]
                if ev[j][3] == "sched_waking" and f"comm={ks}" in ev[j][4]:
                    deferred, last = True, ev[j][0]
                    break
                j += 1
            if last is not None:
                (left if deferred else kept).append((last - ts) * 1e6)
    # The same wake-ups: to the exit of the round's last handler other than BLOCK (a BLOCK
    # raised after the wake-up is left to ksoftirqd), the round's own length either way.
    rest = []
    for i, (ts, comm, fl, e, r) in enumerate(ev):
        if e == "sched_waking" and f"comm={comm_t}" in r and comm == "<idle>" and "s" in fl:
            j, last = i + 1, None
            while j < len(ev) and ev[j][3] != "sched_switch" and not ev[j][1].startswith("ksoftirqd"):
                if ev[j][3] == "softirq_exit" and "BLOCK" not in ev[j][4]:
                    last = ev[j][0]
                j += 1
            if last is not None:
                rest.append((last - ts) * 1e6)
    n = len(left) + len(kept)
    print(f"{comm_t} woken in an idle CPU's softirq: {n}, of which the round left work to {ks}: {len(left)}")
    if kept:
        print(f"  wake-up to the round's end, nothing left: n {len(kept)} median {st.median(kept):.1f} us {sorted(round(x, 1) for x in kept)}")
    if left:
        print(f"  wake-up to {ks}'s wake-up, work left: n {len(left)} median {st.median(left):.1f} us")
    if rest:
        print(f"  wake-up to the round's last non-BLOCK handler exit, all: n {len(rest)} median {st.median(rest):.1f} us "
              f"mean {st.mean(rest):.1f} us")

    # ksoftirqd's runs: from its wake-up to its switch-out; its own time beyond the handlers.
    runs = []
    i = 0
    while i < len(ev):
        ts, comm, _fl, e, rest = ev[i]
        if e == "sched_waking" and f"comm={ks}" in rest:
            w, h, hs, first, j = ts, 0.0, None, None, i + 1
            while j < len(ev):
                t2, c2, _f2, e2, r2 = ev[j]
                if c2.startswith("ksoftirqd"):
                    first = t2 if first is None else first
                    if e2 == "softirq_entry":
                        hs = t2
                    if e2 == "softirq_exit" and hs is not None:
                        h, hs = h + t2 - hs, None
                    if e2 == "sched_switch" and f"prev_comm={ks}" in r2:
                        runs.append(((t2 - w) * 1e6, (t2 - first) * 1e6, h * 1e6))
                        break
                j += 1
            i = j
        i += 1
    if runs:
        own = [r[1] - r[2] for r in runs]
        print(f"{ks} runs: {len(runs)}; wake-up to switch-out median {st.median([r[0] for r in runs]):.1f} us, "
              f"handlers median {st.median([r[2] for r in runs]):.1f} us, own time (first event to switch-out "
              f"less handlers) median {st.median(own):.1f} us, mean {st.mean(own):.1f} us")

    # The disk's interrupts against the tick.
    ticks = [ts for ts, _c, _f, e, rest in ev if e == "softirq_raise" and "TIMER" in rest]
    irqs = [ts for ts, _c, _f, e, rest in ev if e == "irq_handler_entry" and "virtio" in rest]
    if ticks and irqs:
        ph = collections.Counter(int(((t * 1e6) % 4000) // 100) for t in ticks)
        ref = ph.most_common(1)[0][0] * 100
        h = collections.Counter(int((((t * 1e6) - ref) % 4000) // 50) for t in irqs)
        bins = [h[b] for b in range(80)]
        print(f"disk interrupts by 50-us bin after the tick phase {ref} us (4-ms ticks): first four {bins[:4]}, "
              f"mean of the rest {st.mean(bins[4:]):.1f}")


if __name__ == "__main__":
    main()
