#!/usr/bin/env bash
# trace-bench.sh OUTDIR "EVENTS" [BENCH ARGS...]: a bench run (default: the anon suite's
# "1 process (limit 1/2)" row for 8 s on zram) with a tracefs instance recording the given
# events (SUBSYSTEM/EVENT, space-separated) on every CPU for SPAN seconds (default 1) from SKIP
# seconds in (default 4), with two trace_marker lines that carry CLOCK_REALTIME ns; the trace
# clock is TRACE_CLOCK (default local: seconds; x86-tsc for cycles, scaled by the markers).
# STACKS lists events (SUBSYSTEM/EVENT) that also record the kernel stack at each hit (the
# stacktrace trigger). Writes OUTDIR/{bench.json,bench.log,trace.txt,stats.txt}. Run it as root on a quiet machine;
# it removes its tracefs instance on exit, and unmounts tracefs if it mounted it. RECLAIMLAB
# names the binary (default: reclaimlab on PATH).
set -u
out=$1; events=$2; shift 2; mkdir -p "$out"
if [ $# -eq 0 ]; then
  set -- anon-sweep --swap zram:4G --set run.duration=8s --set workload.bytes=128M --set workload.threads=1 \
    --set workload.write_ratio=1.0 --set workload.pattern=sequential --set workload.processes=1 \
    --set workload.cpus=all --set memcg.limit=64M
fi
B=${RECLAIMLAB:-reclaimlab}
R=/sys/kernel/tracing
mounted=0
if [ ! -d $R/instances ]; then mount -t tracefs nodev $R && mounted=1; fi
T=$R/instances/rltrace$$
cleanup() {
  echo 0 > $T/tracing_on 2>/dev/null
  for e in ${STACKS:-}; do echo '!stacktrace' > $T/events/$e/trigger 2>/dev/null; done
  rmdir $T 2>/dev/null; [ $mounted = 1 ] && umount $R
}
trap cleanup EXIT
mkdir $T
echo 65536 > $T/buffer_size_kb
echo 0 > $T/tracing_on
echo ${TRACE_CLOCK:-local} > $T/trace_clock
for e in $events; do echo 1 > $T/events/$e/enable; done
for e in ${STACKS:-}; do echo stacktrace > $T/events/$e/trigger; done
$B bench "$@" --json --out $out/bench.json > $out/bench.log 2>&1 &
bp=$!
sleep ${SKIP:-4}; echo 1 > $T/tracing_on; echo "t0 $(date +%s%N)" > $T/trace_marker
sleep ${SPAN:-1}; echo "t1 $(date +%s%N)" > $T/trace_marker; echo 0 > $T/tracing_on
wait $bp
cat $T/trace > $out/trace.txt
cat $T/per_cpu/cpu*/stats > $out/stats.txt
