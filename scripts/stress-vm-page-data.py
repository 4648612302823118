#!/usr/bin/env python3
"""What each stress-ng vm method leaves in its buffer, and what zram pays for it.

For every method: run `stress-ng --vm 1 --vm-keep --vm-method M` on a small buffer without
memory pressure, copy the worker's buffer out of /proc/PID/mem after a few passes, then write
those pages to a zram block device (not swap) with O_DIRECT and read them back, timing each
page against the same write/read of a zero page (same-filled: no compression), paired per
round. Prints one JSON document: per method, the compressed bytes per page and same-filled
share zram's mm_stat reports, and the write/read time per page beyond a zero page's.

Needs root and a free zram device (disksize 0, not swap); resets it afterwards. Usage:
    scripts/stress-vm-page-data.py [--device zram0] [--mib 16] [--rounds 5] [METHOD ...]
"""
import argparse, json, mmap, os, re, signal, statistics, subprocess, sys, time
from proctree import descendants

PAGE = 4096
METHODS = ("cache-lines cache-stripe checkerboard flip fwdrev galpat-0 galpat-1 gray grayflip "
           "rowhammer incdec inc-nybble lfsr32 rand-set rand-sum read64 ror swap move-inv "
           "modulo-x mscan wrrd128nt prime-0 prime-1 prime-gray-0 prime-gray-1 prime-incdec "
           "walk-0d walk-1d walk-0a walk-1a write64 write64nt write1024v zero-one").split()


def calibrate_pattern(mib):
    """calibrate's stress-ng-like page (mem.rs Data::Pattern): 64-bit words counting up from
    page index * 512; timed the same way, it relates this script's figures to the profile's
    zram_compress / zram_decompress."""
    words = (mib << 20) // 8
    return b"".join(w.to_bytes(8, "little") for w in range(words))


def capture(method, mib, settle):
    """The worker's buffer (mib MiB) after `settle` seconds of the method."""
    if method == "calibrate-pattern":
        return calibrate_pattern(mib)
    size = mib << 20
    p = subprocess.Popen(["stress-ng", "--vm", "1", "--vm-bytes", f"{mib}M", "--vm-keep",
                          "--vm-method", method, "--no-madvise", "--timeout", str(settle + 5)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(settle)
        for pid in descendants(p.pid):
            try:
                maps = open(f"/proc/{pid}/maps").read()
            except OSError:
                continue
            for line in maps.splitlines():
                m = re.match(r"([0-9a-f]+)-([0-9a-f]+) rw", line)
                if m and int(m.group(2), 16) - int(m.group(1), 16) == size and len(line.split()) == 5:
                    with open(f"/proc/{pid}/mem", "rb") as f:
                        f.seek(int(m.group(1), 16))
                        return f.read(size)
        raise RuntimeError(f"{method}: no {mib} MiB anonymous mapping in stress-ng's workers")
    finally:
        p.send_signal(signal.SIGINT)
        p.wait()


def sysfs(dev, name, value=None):
    path = f"/sys/block/{dev}/{name}"
    if value is None:
        return open(path).read()
    with open(path, "w") as f:
        f.write(value)


def zram_costs(dev, data, rounds):
    """(compressed bytes/page, same-filled share, write ns/page, read ns/page, per-round lists):
    each data page's write (read) timed against a zero page's written (read) right after it,
    every round on fresh slots, so no write frees an earlier one."""
    n = len(data) // PAGE
    sysfs(dev, "disksize", str(2 * rounds * len(data) + (16 << 20)))
    try:
        buf = mmap.mmap(-1, PAGE)
        zero = mmap.mmap(-1, PAGE)
        fd = os.open(f"/dev/{dev}", os.O_RDWR | os.O_DIRECT)
        clock = time.perf_counter_ns
        try:
            w, r = [], []
            for k in range(rounds):
                base = 2 * k * n
                dw = dz = 0
                for i in range(n):
                    buf[:] = data[i * PAGE:(i + 1) * PAGE]
                    t0 = clock()
                    os.pwrite(fd, buf, (base + i) * PAGE)
                    t1 = clock()
                    os.pwrite(fd, zero, (base + n + i) * PAGE)
                    t2 = clock()
                    dw += t1 - t0
                    dz += t2 - t1
                if k == 0:
                    stat = sysfs(dev, "mm_stat").split()
                rw = rz = 0
                for i in range(n):
                    t0 = clock()
                    os.preadv(fd, [buf], (base + i) * PAGE)
                    t1 = clock()
                    os.preadv(fd, [zero], (base + n + i) * PAGE)
                    t2 = clock()
                    rw += t1 - t0
                    rz += t2 - t1
                w.append((dw - dz) / n)
                r.append((rw - rz) / n)
            # mm_stat after round 0: n data pages and n same-filled zero pages stored.
            compr, same = int(stat[1]), int(stat[5])
            return (compr / n, (same - n) / n, statistics.median(w), statistics.median(r), w, r)
        finally:
            os.close(fd)
    finally:
        sysfs(dev, "reset", "1")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="zram0")
    ap.add_argument("--mib", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--settle", type=float, default=2.0, help="seconds of the method before the copy")
    ap.add_argument("methods", nargs="*", default=METHODS + ["calibrate-pattern"],
                    help="stress-ng vm methods, or calibrate-pattern (default: every method, then it)")
    a = ap.parse_args()
    if sysfs(a.device, "disksize").strip() != "0":
        sys.exit(f"{a.device} is in use (disksize not 0)")
    out = {"command": " ".join(sys.argv), "kernel": os.uname().release,
           "comp_algorithm": sysfs(a.device, "comp_algorithm").strip(), "mib": a.mib,
           "rounds": a.rounds, "methods": {}}
    for m in a.methods:
        data = capture(m, a.mib, a.settle)
        cb, same, w, r, ws, rs = zram_costs(a.device, data, a.rounds)
        out["methods"][m] = {"compressed_bytes_per_page": round(cb, 1), "same_filled": round(same, 4),
                             "write_ns": round(w, 1), "read_ns": round(r, 1),
                             "write_ns_rounds": [round(x, 1) for x in ws],
                             "read_ns_rounds": [round(x, 1) for x in rs]}
        print(m, out["methods"][m]["compressed_bytes_per_page"], out["methods"][m]["same_filled"],
              out["methods"][m]["write_ns"], out["methods"][m]["read_ns"], file=sys.stderr)
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
