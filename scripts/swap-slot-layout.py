#!/usr/bin/env python3
"""Where a bench run's swapped-out pages lie on the swap device, from /proc/PID/pagemap.

    swap-slot-layout.py [--at SECONDS]... [--out FILE] -- BENCH ARGS...

Starts `reclaimlab bench BENCH ARGS...` (RECLAIMLAB names the binary), and at each --at
second after the start (default 8) reads, for every descendant process with an anonymous
mapping of 16 MiB or more, the pagemap entries of its largest one: a swapped entry (bit 62)
carries the swap type (bits 0-4) and offset (bits 5-54). It prints, per sample, the figures
the simulator reports as `extra.swap_block.slot_layout` (crates/sim/src/mm/swapfile.rs,
SwapMap::layout), over the slots of the type most pages use:

  pages_out               pages with a swap entry
  mean_run                mean length of a run of consecutive slots held by one process
  block_majority_share    over aligned blocks of 8 slots (swap_cluster_readahead's largest
                          window at page-cluster 3): the mean share its largest holder has
  next_page_in_next_slot  of the pages whose next virtual page is out too, the share whose
                          slot is the next slot

Run as root (pagemap's swap entries of another user's process) on a quiet machine; bench
removes its memcg and swap itself. Writes the samples and bench's exit status as JSON with
--out.
"""
import argparse
import json
import os
import subprocess
import sys
import time

from proctree import descendants

PAGE = 4096
MIN_MAPPING = 16 << 20
BLOCK = 8


def largest_anon_mapping(pid):
    best = None
    try:
        with open(f"/proc/{pid}/maps") as f:
            for line in f:
                parts = line.split()
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                anon = len(parts) < 6 or parts[5] in ("", "[heap]")
                if anon and "rw" in parts[1] and hi - lo >= MIN_MAPPING:
                    if best is None or hi - lo > best[1] - best[0]:
                        best = (lo, hi)
    except OSError:
        return None
    return best


def swap_entries(pid, lo, hi):
    """{page index in the mapping: (type, offset)} for its swapped pages."""
    out = {}
    n = (hi - lo) // PAGE
    try:
        with open(f"/proc/{pid}/pagemap", "rb") as f:
            f.seek(lo // PAGE * 8)
            raw = f.read(n * 8)
    except OSError:
        return out
    for i in range(len(raw) // 8):
        e = int.from_bytes(raw[i * 8:i * 8 + 8], "little")
        if (e >> 62) & 1:
            out[i] = (e & 0x1F, (e >> 5) & ((1 << 50) - 1))
    return out


def layout(procs):
    """The simulator's SwapMap::layout over {pid: {index: (type, offset)}}."""
    types = {}
    for ents in procs.values():
        for t, _ in ents.values():
            types[t] = types.get(t, 0) + 1
    if not types:
        return {"pages_out": 0}
    swap_type = max(types, key=types.get)
    slots = sorted((off, pid) for pid, ents in procs.items()
                   for t, off in ents.values() if t == swap_type)
    runs, prev = 0, None
    shares, blk, counts = [], None, {}
    for off, pid in slots:
        if prev != (off - 1, pid):
            runs += 1
        prev = (off, pid)
        if off // BLOCK != blk:
            if counts:
                shares.append(max(counts.values()) / sum(counts.values()))
            blk, counts = off // BLOCK, {}
        counts[pid] = counts.get(pid, 0) + 1
    if counts:
        shares.append(max(counts.values()) / sum(counts.values()))
    pairs = adjacent = 0
    for ents in procs.values():
        for i, (t, off) in ents.items():
            nxt = ents.get(i + 1)
            if t == swap_type and nxt and nxt[0] == swap_type:
                pairs += 1
                adjacent += nxt[1] == off + 1
    return {
        "processes": len(procs),
        "pages_out": len(slots),
        "mean_run": len(slots) / runs if runs else 0.0,
        "block_slots": BLOCK,
        "block_majority_share": sum(shares) / len(shares) if shares else 0.0,
        "next_page_pairs": pairs,
        "next_page_in_next_slot": adjacent / pairs if pairs else 0.0,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--at", type=float, action="append", help="seconds after the start")
    ap.add_argument("--out", help="write the samples as JSON here")
    ap.add_argument("bench", nargs=argparse.REMAINDER, help="-- BENCH ARGS...")
    a = ap.parse_args()
    args = a.bench[1:] if a.bench[:1] == ["--"] else a.bench
    if not args:
        ap.error("give the bench arguments after --")
    if os.geteuid() != 0:
        sys.exit("swap-slot-layout.py: run as root (pagemap's swap entries)")
    exe = os.environ.get("RECLAIMLAB", "reclaimlab")
    start = time.monotonic()
    bench = subprocess.Popen([exe, "bench", *args], stdout=subprocess.DEVNULL)
    samples = []
    try:
        for at in sorted(a.at or [8.0]):
            time.sleep(max(0.0, start + at - time.monotonic()))
            if bench.poll() is not None:
                print(f"bench ended before {at} s", file=sys.stderr)
                break
            procs = {}
            for pid in descendants(bench.pid)[1:]:
                m = largest_anon_mapping(pid)
                if m:
                    procs[pid] = swap_entries(pid, *m)
            s = {"at_seconds": at, **layout(procs)}
            samples.append(s)
            print(json.dumps(s), flush=True)
    finally:
        status = bench.wait()
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"bench": args, "bench_status": status, "samples": samples}, f, indent=1)
    sys.exit(status)


if __name__ == "__main__":
    main()
