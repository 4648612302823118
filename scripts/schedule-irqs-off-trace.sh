#!/usr/bin/env bash
# schedule-irqs-off-trace.sh OUTDIR [BENCH ARGS...]: scripts/trace-bench.sh with
# rcu_utilization (its "Start context switch" is __schedule's first event after
# local_irq_disable), sched_switch, csd_queue_cpu and csd_function_entry, for 1 s from 4 s in,
# clocked by the TSC (scripts/schedule-irqs-off-*.py scale it by the trace_marker lines).
# The block-swap suite's pinned pair, traced for the lazy-state log:
#   SKIP=5 schedule-irqs-off-trace.sh OUT anon-sweep --swap file:4G --set run.duration=10s \
#     --set workload.bytes=128M --set workload.threads=1 --set workload.write_ratio=1.0 \
#     --set workload.pattern=sequential --set workload.processes=2 --set 'workload.cpus=[0,1]' \
#     --set memcg.limit=128M
out=$1; shift
TRACE_CLOCK=x86-tsc exec "$(dirname "$0")/trace-bench.sh" "$out" \
  "rcu/rcu_utilization sched/sched_switch csd/csd_queue_cpu csd/csd_function_entry" "$@"
