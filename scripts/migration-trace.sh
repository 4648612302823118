#!/usr/bin/env bash
# migration-trace.sh OUTDIR [BENCH ARGS...]: scripts/trace-bench.sh with sched_waking,
# sched_wakeup, sched_wakeup_new, sched_switch and sched_migrate_task for 2 s from 5 s in
# (SKIP, SPAN change them), for scripts/migration-causes.py and scripts/idle-waker-placement.py.
# Without bench arguments: the block-swap suite's "2 processes unpinned" row, 10 s.
out=$1; shift
if [ $# -eq 0 ]; then
  set -- anon-sweep --swap file:4G --set run.duration=10s --set workload.bytes=128M --set workload.threads=1 \
    --set workload.write_ratio=1.0 --set workload.pattern=sequential --set workload.processes=2 \
    --set workload.cpus=all --set memcg.limit=128M
fi
SKIP=${SKIP:-5} SPAN=${SPAN:-2} exec "$(dirname "$0")/trace-bench.sh" "$out" \
  "sched/sched_switch sched/sched_waking sched/sched_wakeup sched/sched_wakeup_new sched/sched_migrate_task" "$@"
