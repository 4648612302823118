#!/usr/bin/env bash
# schedule-irqs-off-trace.sh OUTDIR: the anon suite's "1 process (limit 1/2)" row, 8 s, with a tracefs instance
# recording, on both CPUs, rcu_utilization (its "Start context switch" is __schedule's first event
# after local_irq_disable), sched_switch, csd_queue_cpu and csd_function_entry, for 1 s in the
# middle. Run it as root on a quiet machine; it removes its tracefs instance on exit.
set -u
out=$1; mkdir -p "$out"
B=${RECLAIMLAB:-reclaimlab}
T=/sys/kernel/tracing/instances/rlirqoff
cleanup() { echo 0 > $T/tracing_on 2>/dev/null; rmdir $T 2>/dev/null; }
trap cleanup EXIT
# wait here until both CPUs are quiet (under 5% busy) before measuring
mkdir $T
echo 65536 > $T/buffer_size_kb
echo 0 > $T/tracing_on
echo x86-tsc > $T/trace_clock
for e in rcu/rcu_utilization sched/sched_switch csd/csd_queue_cpu csd/csd_function_entry; do echo 1 > $T/events/$e/enable; done
$B bench anon-sweep --swap zram:4G --set run.duration=8s --set workload.bytes=128M --set workload.threads=1 \
  --set workload.write_ratio=1.0 --set workload.pattern=sequential --set workload.processes=1 --set workload.cpus=all \
  --set memcg.limit=64M --json --out $out/bench.json > $out/bench.log 2>&1 &
bp=$!
sleep 4; echo 1 > $T/tracing_on; echo "t0 $(date +%s%N)" > $T/trace_marker; sleep 1; echo "t1 $(date +%s%N)" > $T/trace_marker; echo 0 > $T/tracing_on
wait $bp
cat $T/trace > $out/trace.txt
cat $T/per_cpu/cpu0/stats $T/per_cpu/cpu1/stats > $out/stats.txt
