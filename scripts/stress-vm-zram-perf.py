#!/usr/bin/env python3
"""zram's compression and decompression time per page for each stress-ng vm method, as the
live kernel spends it while reclaim swaps the method's buffer.

For every method: `reclaimlab bench stress-vm` with one worker (400M in a 256M memcg, zram
swap, 6 s) under `perf record -a -F 999 -e cpu-clock`; the samples in the lzo-rle compressor
(lzo1x_1_do_compress, lzogeneric1x_1_compress) and decompressor (lzo1x_decompress_safe) give
their CPU seconds (samples / 999), divided by the run's pswpout and pswpin. Prints one JSON
document. Needs root, perf and a free zram device. Usage:
    scripts/stress-vm-zram-perf.py [--reclaimlab PATH] [--seconds 6] [METHOD ...]
"""
import argparse, json, os, re, subprocess, sys, tempfile

METHODS = ("cache-lines cache-stripe checkerboard flip fwdrev galpat-0 galpat-1 gray grayflip "
           "rowhammer incdec inc-nybble lfsr32 rand-set rand-sum read64 ror swap move-inv "
           "modulo-x mscan wrrd128nt prime-0 prime-1 prime-gray-0 prime-gray-1 prime-incdec "
           "walk-0d walk-1d walk-0a walk-1a write64 write64nt write1024v zero-one").split()
FREQ = 999
COMPRESS = ("lzo1x_1_do_compress", "lzogeneric1x_1_compress")
DECOMPRESS = ("lzo1x_decompress_safe",)


def samples_by_symbol(data):
    out = subprocess.run(["perf", "report", "-i", data, "--sort", "sym", "--stdio", "-n"],
                         capture_output=True, text=True, check=True).stdout
    by = {}
    for line in out.splitlines():
        m = re.match(r"\s*[\d.]+%\s+(\d+)\s+\[[k.]\]\s+(\S+)", line)
        if m:
            name = m.group(2).split(".")[0]
            by[name] = by.get(name, 0) + int(m.group(1))
    return by


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reclaimlab", default="reclaimlab")
    ap.add_argument("--seconds", type=int, default=6)
    ap.add_argument("methods", nargs="*", default=METHODS)
    a = ap.parse_args()
    out = {"command": " ".join(sys.argv), "kernel": os.uname().release, "freq": FREQ,
           "methods": {}}
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "perf.data")
        for m in a.methods:
            bench = subprocess.run(
                ["perf", "record", "-q", "-a", "-F", str(FREQ), "-e", "cpu-clock", "-o", data, "--",
                 a.reclaimlab, "bench", "stress-vm", "--set", "workload.workers=1",
                 "--set", "workload.bytes=400M", "--set", f"workload.method={m}",
                 "--set", "memcg.limit=256M", "--set", f"run.duration={a.seconds}s",
                 "--swap", "zram:4G", "--json"], capture_output=True, text=True, check=True)
            c = json.loads(bench.stdout)["runs"][0]["counters"]
            by = samples_by_symbol(data)
            comp = sum(by.get(s, 0) for s in COMPRESS)
            decomp = sum(by.get(s, 0) for s in DECOMPRESS)
            r = {"pswpout": c["pswpout"], "pswpin": c["pswpin"], "oom_kills": c.get("oom_kills", 0),
                 "compress_samples": comp, "decompress_samples": decomp,
                 "compress_ns": round(comp / FREQ * 1e9 / c["pswpout"], 1) if c["pswpout"] else None,
                 "decompress_ns": round(decomp / FREQ * 1e9 / c["pswpin"], 1) if c["pswpin"] else None}
            out["methods"][m] = r
            print(m, r["pswpout"], r["pswpin"], r["compress_ns"], r["decompress_ns"], file=sys.stderr)
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
