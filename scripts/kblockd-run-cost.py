#!/usr/bin/env python3
"""kblockd's cost per run and per request, from a trace-bench.sh trace with the workqueue
and block events (workqueue_execute_start/end, block_rq_issue).

Each blk_mq_run_work_fn run is timed from its execute_start to its execute_end on its
kworker, and the requests that kworker issued in between are counted. The runs that issued
nothing give the fixed part of a run; the productive runs' time beyond it, over their
requests, gives the cost per request dispatched. Interrupts that land inside a run are in
its time.

    scripts/kblockd-run-cost.py TRACE[.xz]
"""
import lzma
import re
import statistics as st
import sys

LINE = re.compile(r"\s*(\S+)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+):\s+(\w+):(.*)")


def main(path):
    opener = lzma.open if path.endswith(".xz") else open
    runs, cur = [], {}
    with opener(path, "rt") as f:
        for line in f:
            m = LINE.match(line)
            if not m:
                continue
            _, pid, _, ts, ev, rest = m.groups()
            ts = float(ts)
            if ev == "workqueue_execute_start" and "blk_mq_run_work_fn" in rest:
                cur[pid] = [ts, 0]
            elif ev == "workqueue_execute_end" and pid in cur:
                start, n = cur.pop(pid)
                runs.append(((ts - start) * 1e6, n))
            elif ev == "block_rq_issue" and pid in cur:
                cur[pid][1] += 1
    if not runs:
        sys.exit("no blk_mq_run_work_fn runs in the trace")
    empty = [d for d, n in runs if n == 0]
    busy = [(d, n) for d, n in runs if n > 0]
    fixed = st.median(empty) if empty else 0.0
    print(f"runs {len(runs)}: {len(empty)} issued nothing, median {fixed:.2f} us")
    if busy:
        reqs = sum(n for _, n in busy)
        total = sum(d for d, _ in busy)
        print(
            f"{len(busy)} issued {reqs} requests (median {st.median(n for _, n in busy)} a run), "
            f"median run {st.median(d for d, _ in busy):.1f} us; "
            f"{(total - len(busy) * fixed) / reqs:.2f} us a request beyond the fixed part"
        )


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
