#!/usr/bin/env bash
# The random reader row of validation/file.toml on the live kernel, with a private tracefs
# instance recording the workqueue's execution of each work item, the queueing CPU and every
# context switch. Run as root under the host lock:
#   flock /tmp/reclaimlab-host.lock bash measure.sh RECLAIMLAB OUTDIR
# The quiet marker is set for the measurement only; the instance is removed on every exit.
set -euo pipefail
BIN=$1
OUT=$2
T=/sys/kernel/tracing
INST=$T/instances/rl-vmpressure-$$
cleanup() {
    [ -d "$INST" ] && { echo 0 > "$INST/tracing_on" || true; rmdir "$INST" || true; }
    rm -f /tmp/reclaimlab-quiet
}
trap cleanup EXIT INT TERM
mountpoint -q $T || mount -t tracefs nodev $T
touch /tmp/reclaimlab-quiet
# Wait (at most 5 min) until no other build, test or reclaimlab process runs.
for _ in $(seq 300); do
    ps -eo comm | grep -qE '^(cargo|rustc|reclaimlab)$' || break
    sleep 1
done
mkdir "$INST"
echo 32768 > "$INST/buffer_size_kb"
for e in workqueue/workqueue_queue_work workqueue/workqueue_execute_start \
         workqueue/workqueue_execute_end sched/sched_switch sched/sched_wakeup; do
    echo 1 > "$INST/events/$e/enable"
done
date -u +%FT%TZ > "$OUT/start.txt"
echo 1 > "$INST/tracing_on"
"$BIN" bench file-mmap-rw --set run.duration=10s --set workload.file_bytes=1G \
    --set workload.threads=2 --set 'workload.cpus=[0,1]' --set memcg.limit=256M \
    --set workload.write=false --set workload.pattern=random --repeat 1 --json \
    --out "$OUT/bench.json" > "$OUT/bench.stdout" 2>&1
echo 0 > "$INST/tracing_on"
cat "$INST/per_cpu/cpu0/stats" "$INST/per_cpu/cpu1/stats" > "$OUT/trace-stats.txt"
cat "$INST/trace" > "$OUT/trace.txt"
