#!/usr/bin/env bash
# schedule-irqs-off-trace.sh OUTDIR [BENCH ARGS...]: a bench run (default: the anon suite's
# "1 process (limit 1/2)" row for 8 s on zram) with a tracefs instance recording, on both CPUs,
# rcu_utilization (its "Start context switch" is __schedule's first event after
# local_irq_disable), sched_switch, csd_queue_cpu and csd_function_entry, for 1 s from 4 s in
# (SKIP=seconds to change it), clocked by the TSC between two trace_marker lines that carry
# CLOCK_REALTIME ns. Run it as root on a quiet machine; it removes its tracefs instance on exit.
# The block-swap suite's pinned pair, traced for the lazy-state log:
#   SKIP=5 schedule-irqs-off-trace.sh OUT anon-sweep --swap file:4G --set run.duration=10s \
#     --set workload.bytes=128M --set workload.threads=1 --set workload.write_ratio=1.0 \
#     --set workload.pattern=sequential --set workload.processes=2 --set 'workload.cpus=[0,1]' \
#     --set memcg.limit=128M
set -u
out=$1; shift; mkdir -p "$out"
if [ $# -eq 0 ]; then
  set -- anon-sweep --swap zram:4G --set run.duration=8s --set workload.bytes=128M --set workload.threads=1 \
    --set workload.write_ratio=1.0 --set workload.pattern=sequential --set workload.processes=1 \
    --set workload.cpus=all --set memcg.limit=64M
fi
B=${RECLAIMLAB:-reclaimlab}
T=/sys/kernel/tracing/instances/rlirqoff
cleanup() { echo 0 > $T/tracing_on 2>/dev/null; rmdir $T 2>/dev/null; }
trap cleanup EXIT
mkdir $T
echo 65536 > $T/buffer_size_kb
echo 0 > $T/tracing_on
echo x86-tsc > $T/trace_clock
for e in rcu/rcu_utilization sched/sched_switch csd/csd_queue_cpu csd/csd_function_entry; do echo 1 > $T/events/$e/enable; done
$B bench "$@" --json --out $out/bench.json > $out/bench.log 2>&1 &
bp=$!
sleep ${SKIP:-4}; echo 1 > $T/tracing_on; echo "t0 $(date +%s%N)" > $T/trace_marker; sleep 1; echo "t1 $(date +%s%N)" > $T/trace_marker; echo 0 > $T/tracing_on
wait $bp
cat $T/trace > $out/trace.txt
cat $T/per_cpu/cpu0/stats $T/per_cpu/cpu1/stats > $out/stats.txt
