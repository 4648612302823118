#!/usr/bin/env bash
# seq-reader-flush-trace.sh OUTDIR [EXTRA_EVENTS...]: one bench run of the file suite's sequential
# reader ("read, sequential, CPUs 0,1") with a private tracefs instance that records, for WIN
# seconds (default 1) from 3 s after reclaim starts, tlb:tlb_flush with a kernel stack at each
# TLB_REMOTE_SEND_IPI, vmscan:mm_vmscan_lru_shrink_inactive and the page cache's adds and deletes
# (filemap:mm_filemap_add_to_page_cache / _delete_from_page_cache, with the folio order), plus any
# EXTRA_EVENTS (group/name, e.g. readahead/page_cache_ra_order). This kernel has no hist
# triggers, so the events go to the ring buffer (256 MiB per CPU). Run it as root on a quiet
# machine under the host lock; it removes its instance on exit and unmounts tracefs only if it
# mounted it and no other instance is left. Read the trace with flushes-per-reclaim-call.py.
set -u
out=$1; shift; mkdir -p "$out"
B=${RECLAIMLAB:-reclaimlab}
TR=/sys/kernel/tracing
T=$TR/instances/seqflush$$
mounted=0
if ! grep -q " $TR tracefs " /proc/mounts; then mount -t tracefs nodev $TR && mounted=1; fi
cleanup() {
  echo 0 > $T/tracing_on 2>/dev/null
  echo '!stacktrace if reason == 4' > $T/events/tlb/tlb_flush/trigger 2>/dev/null
  echo 0 > $T/events/enable 2>/dev/null
  rmdir $T 2>/dev/null
  if [ $mounted = 1 ] && [ -z "$(ls $TR/instances 2>/dev/null)" ]; then umount $TR; fi
}
trap cleanup EXIT
mkdir $T
echo 0 > $T/tracing_on
echo 262144 > $T/buffer_size_kb
for e in tlb/tlb_flush vmscan/mm_vmscan_lru_shrink_inactive filemap/mm_filemap_add_to_page_cache \
         filemap/mm_filemap_delete_from_page_cache "$@"; do
  echo 1 > $T/events/$e/enable
done
echo 'stacktrace if reason == 4' > $T/events/tlb/tlb_flush/trigger
s0=$(awk '/^pgscan_file /{print $2}' /proc/vmstat)
$B bench file-mmap-rw --set run.duration=10s --set workload.file_bytes=1G \
  --set workload.threads=2 --set 'workload.cpus=[0,1]' --set memcg.limit=256M \
  --set workload.write=false --set workload.pattern=sequential --json --out $out/bench.json \
  > /dev/null 2> $out/bench.err &
bp=$!
while [ "$(awk '/^pgscan_file /{print $2}' /proc/vmstat)" = "$s0" ] && kill -0 $bp 2>/dev/null; do sleep 0.05; done
sleep 3; echo 1 > $T/tracing_on; sleep ${WIN:-1}; echo 0 > $T/tracing_on
wait $bp
cat $T/per_cpu/cpu*/stats > $out/stats.txt
cat $T/trace > $out/trace.txt
