#!/usr/bin/env bash
# Trace how bench's workers start: every task's scheduler events (switch, waking, wake-up,
# new task, migration, fork) and cgroup attaches on both CPUs, from just before bench starts
# until RECORD seconds later, in a private tracefs instance removed on every exit path.
#
#   sudo scripts/start-race-trace.sh OUT.trace [RECORD_S] -- reclaimlab bench anon-sweep ...
#
# PREROLL_S=N (environment) traces N seconds before starting the command, so that every
# task's PELT history at the start can be replayed (scripts/sis-util-check.py).
#
# The raw trace goes to OUT.trace; bench's JSON (if it prints one) to OUT.json.
set -euo pipefail
out=$1; shift
record=2
if [[ ${1:-} != -- ]]; then record=$1; shift; fi
[[ ${1:-} == -- ]] || { echo "usage: $0 OUT.trace [RECORD_S] -- COMMAND..." >&2; exit 2; }
shift
T=/sys/kernel/tracing
[[ -d $T/instances ]] || mount -t tracefs nodev $T
inst=$T/instances/reclaimlab-start-$$
mkdir "$inst"
cleanup() {
    echo 0 > "$inst/tracing_on" 2>/dev/null || true
    rmdir "$inst" 2>/dev/null || true
}
trap cleanup EXIT INT TERM
echo 16384 > "$inst/buffer_size_kb"
for e in sched/sched_switch sched/sched_waking sched/sched_wakeup sched/sched_wakeup_new \
         sched/sched_migrate_task sched/sched_process_fork cgroup/cgroup_attach_task; do
    echo 1 > "$inst/events/$e/enable"
done
echo 1 > "$inst/tracing_on"
sleep "${PREROLL_S:-0}"
"$@" > "${out%.trace}.json" &
pid=$!
sleep "$record"
echo 0 > "$inst/tracing_on"
cat "$inst/trace" > "$out"
wait "$pid"
