#!/usr/bin/env python3
"""Where plugs are flushed: the kernel stacks a trace-bench.sh trace recorded at
block_unplug (STACKS="block/block_unplug") and at workqueue_queue_work (kblockd's runs),
grouped by the path that led there.

A plug flushed from schedule (sched_submit_work → blk_flush_plug) names the sleep that
flushed it: the first frames below schedule/io_schedule. Other flushes are
blk_finish_plug's or blk_add_rq_to_plug's (a full plug). A kblockd run queued from an
interrupt names the handler.

    scripts/unplug-stacks.py TRACE[.xz] [FRAMES]
"""
import collections
import lzma
import re
import sys

EVENT = re.compile(r"\s*(\S+)-(\d+)\s+\[(\d+)\]\s+\S+\s+[\d.]+:\s+(\w+):(.*)")
SCHED = {"schedule", "io_schedule", "__schedule", "schedule_timeout", "io_schedule_timeout",
         "sched_submit_work", "blk_flush_plug", "__blk_flush_plug", "blk_mq_flush_plug_list",
         "blk_mq_dispatch_plug_list", "blk_mq_run_hw_queue", "__blk_mq_delay_run_hw_queue",
         "blk_mq_delay_run_hw_queue", "kblockd_mod_delayed_work_on", "mod_delayed_work_on",
         "__queue_delayed_work", "__queue_work", "queue_work_on", "blk_mq_sched_insert_requests",
         "blk_mq_insert_requests", "__blk_mq_flush_plug_list", "trace_event_raw_event_block_unplug",
         "trace_event_raw_event_workqueue_queue_work", "event_triggers_call"}


def main(path, frames):
    opener = lzma.open if path.endswith(".xz") else open
    groups = collections.Counter()
    last = None
    stack = None
    with opener(path, "rt") as f:
        for line in f:
            if "<stack trace>" in line:
                stack = []
                continue
            if stack is not None and line.lstrip().startswith("=>"):
                stack.append(line.split("=>", 1)[1].strip().split("+")[0])
                continue
            if stack is not None:
                if last:
                    groups[(last, key(stack, frames))] += 1
                stack = None
            m = EVENT.match(line)
            if m:
                comm, ev, rest = m.group(1), m.group(4), m.group(5)
                if ev == "block_unplug":
                    last = ("unplug", comm.split("/")[0])
                elif ev == "workqueue_queue_work" and "blk_mq_run_work_fn" in rest:
                    last = ("kblockd queued", comm.split("/")[0])
                else:
                    last = None
    if stack is not None and last:
        groups[(last, key(stack, frames))] += 1
    for (what, path_), n in groups.most_common():
        print(f"{n:7d}  {what[0]:15s} {what[1]:16s} {path_}")


def key(stack, frames):
    s = [f for f in stack if f not in SCHED]
    return " < ".join(s[:frames])


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 4)
