#!/usr/bin/env python3
"""Random 4 KiB O_DIRECT writes to an existing file from N threads for S seconds: the
writeback device's request rate with N requests in flight (the flusher keeps its queue full).

    python3 scripts/device-write-bench.py FILE THREADS SECONDS

Prints the writes done, the rate and the time per write. FILE must exist (e.g. written first
with dd oflag=direct); it is overwritten in place, not removed.

With many threads on few CPUs the client's own CPU time bounds the rate: on the 2-vCPU guest
32 threads gave 60 K writes/s where fio (libaio, one thread, the same queue depth) gives
95-110 K; the profile's file_write_request now comes from fio (profiles/kvm-guest-2vcpu.device.txt).
"""
import os, mmap, random, sys, threading, time
path, threads, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
size = os.path.getsize(path)
pages = size // 4096
counts = [0]*threads
def work(t):
    fd = os.open(path, os.O_WRONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, 4096); buf.write(b'\x5a'*4096)
    r = random.Random(t)
    end = time.time() + secs
    n = 0
    while time.time() < end:
        os.pwrite(fd, buf, r.randrange(pages) * 4096)
        n += 1
    counts[t] = n
    os.close(fd)
ts = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
t0 = time.time()
for t in ts: t.start()
for t in ts: t.join()
el = time.time() - t0
print(f"threads={threads} writes={sum(counts)} seconds={el:.2f} iops={sum(counts)/el:.0f} us_per_write_per_thread={el*1e6*threads/sum(counts):.1f}")
