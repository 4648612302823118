#!/usr/bin/env python3
"""Where the live kernel's CPU time per stolen page goes in an anon-sweep configuration.

Runs `reclaimlab bench anon-sweep` with the given --set keys (a row of validation/default.toml)
and, from --delay s after its start for --seconds s, `perf record -a -g -e cpu-clock`; reads
/proc/vmstat and the workers' /proc/PID/stat at the window's two ends (from the command perf
runs, so they bound the samples). Every sample of the sweeping workers (the bench's child
processes) goes to the innermost frame of its stack that a component below names (leaf first,
as calibrate's cycle family classes them, but finer: the zram codec, zsmalloc and the LRU add
apart); a sample with a user-space leaf is `user`. A sample stands for the workers' CPU time
over the window divided by their samples, so perf's throttling of its rate does not bias it.
Prints one JSON document: samples and ns per stolen page by component, the vmstat deltas, the
bench's throughput. Needs root, perf and a free zram device. Usage:
    scripts/anon-path-perf.py [--reclaimlab PATH] [--out-report FILE] -- --set KEY=VALUE ...
"""
import argparse, json, os, subprocess, sys, tempfile, time

# (component, frames): the first frame, walking from the leaf up, named in any component.
COMPONENTS = [
    ("zram compress (lzo-rle)", ["zcomp_compress", "lzorle_compress", "lzo1x_1_do_compress",
                                 "lzogeneric1x_1_compress"]),
    ("zram decompress", ["zcomp_decompress", "lzo1x_decompress_safe", "lzorle_decompress"]),
    ("zsmalloc", ["zs_malloc", "zs_free", "zs_obj_write", "zs_obj_read_begin", "zs_obj_read_end",
                  "zs_map_object", "zs_unmap_object"]),
    ("zram other", ["zram_write_page", "zram_read_page", "zram_bio_write", "zram_bio_read",
                    "zram_submit_bio", "zram_slot_free_notify", "zram_free_page"]),
    ("tlb flush", ["flush_tlb_mm_range", "arch_tlbbatch_flush", "native_flush_tlb_multi",
                   "flush_tlb_func"]),
    ("folio_referenced", ["folio_referenced"]),
    ("try_to_unmap", ["try_to_unmap"]),
    ("add_to_swap", ["folio_alloc_swap", "swap_cache_add_folio", "add_to_swap"]),
    ("swap writeout (no zram)", ["swap_writeout", "pageout", "__swap_writepage"]),
    ("folio free (remove_mapping, uncharge, free)", [
        "__remove_mapping", "free_unref_folios", "__mem_cgroup_uncharge_folios",
        "mem_cgroup_uncharge_folios", "free_swap_cache", "folios_put_refs"]),
    ("shrink_folio_list own", ["shrink_folio_list"]),
    ("lru scan (isolate, putback)", ["shrink_lruvec", "shrink_node", "do_try_to_free_pages",
                                     "try_to_free_mem_cgroup_pages"]),
    ("lru add", ["folio_add_lru", "lru_add", "folio_batch_move_lru", "lru_add_drain",
                 "lru_add_drain_cpu"]),
    ("memcg charge", ["try_charge_memcg", "charge_memcg", "mem_cgroup_swapin_charge_folio",
                      "__mem_cgroup_charge"]),
    ("page zeroing", ["clear_page_erms", "clear_page_rep", "clear_page_orig"]),
    ("page alloc", ["vma_alloc_folio_noprof", "alloc_anon_folio", "__alloc_pages_noprof",
                    "__alloc_frozen_pages_noprof", "get_page_from_freelist", "alloc_pages_mpol"]),
    ("swap-in read (no decompress)", ["swap_read_folio", "swap_cache_get_folio",
                                      "__read_swap_cache_async"]),
    ("do_swap_page own", ["do_swap_page"]),
    ("do_anonymous_page own", ["do_anonymous_page"]),
    ("fault entry and exit", ["asm_exc_page_fault", "exc_page_fault", "handle_mm_fault",
                              "__handle_mm_fault", "lock_vma_under_rcu",
                              "irqentry_exit_to_user_mode"]),
]
BY_FRAME = {}
for name, frames in COMPONENTS:
    for f in frames:
        BY_FRAME.setdefault(f, name)


# zsmalloc and zram's own work serve both directions: split by the nearer of the two paths
# above them (reclaim, and so a swap-out, runs inside the swap-in fault's memcg charge).
SPLIT = ("zsmalloc", "zram other")
SWAP_IN = {"swap_read_folio"}
SWAP_OUT = {"swap_writeout", "pageout", "__swap_writepage"}


def direction(frames):
    for f, _ in frames:
        if f in SWAP_IN:
            return " (swap-in)"
        if f in SWAP_OUT:
            return " (swap-out)"
    return ""


def classify(frames):
    """frames: leaf first, (symbol, in kernel)."""
    for sym, _ in frames:
        c = BY_FRAME.get(sym)
        if c in SPLIT:
            return c + direction(frames)
        if c:
            return c
    if frames and not frames[0][1]:
        return "user"
    return "kernel other"


def samples(text):
    """`perf script -F comm,pid,tid,ip,sym,dso` → [(comm, pid, frames)]."""
    out, cur = [], None
    for line in text.splitlines():
        if not line.strip():
            if cur:
                out.append(cur)
            cur = None
        elif line[0].isspace():
            if cur is not None:
                parts = line.split()
                sym = parts[1] if len(parts) > 1 else "[unknown]"
                cur[2].append((sym.split("+0x")[0], "[kernel.kallsyms]" in line))
        else:
            if cur:
                out.append(cur)
            head = line.split()
            pid = next((w.split("/")[0] for w in head if w.split("/")[0].isdigit()), "-1")
            cur = (head[0], int(pid), [])
    if cur:
        out.append(cur)
    return out


def vmstat(path):
    return {k: int(v) for k, v in (l.split() for l in open(path))}


def children(pid):
    """The bench's child processes (its forked workers)."""
    out = []
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            out += [int(c) for c in open(f"/proc/{pid}/task/{t}/children").read().split()]
        except OSError:
            pass
    return out


def cpu_ns(path):
    """utime + stime summed over /proc/PID/stat lines (all threads; USER_HZ 100)."""
    total = 0
    for line in open(path):
        f = line.rsplit(")", 1)[1].split()
        total += (int(f[11]) + int(f[12])) * 10_000_000
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reclaimlab", default="reclaimlab")
    ap.add_argument("--delay", type=float, default=4.0)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--freq", type=int, default=1999)
    ap.add_argument("--duration", default="15s")
    ap.add_argument("--out-report", help="write perf report --stdio --no-children here")
    ap.add_argument("sets", nargs="*", help="--set KEY=VALUE ... (after --)")
    a = ap.parse_args()
    cmd = [a.reclaimlab, "bench", "anon-sweep", "--set", f"run.duration={a.duration}",
           "--swap", "zram:4G", "--json", *a.sets]
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "perf.data")
        bench = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        time.sleep(a.delay)
        kids = children(bench.pid)
        # The snapshots are taken by the command perf runs, so they bound the sampled window.
        snap = lambda n: (f"cat /proc/vmstat > {tmp}/vm{n}; "
                          + "".join(f"cat /proc/{k}/stat >> {tmp}/st{n}; " for k in kids))
        t0 = time.monotonic()
        subprocess.run(["perf", "record", "-q", "-a", "-g", "-e", "cpu-clock", "-F", str(a.freq),
                        "-o", data, "--", "sh", "-c", f"{snap(0)} sleep {a.seconds}; {snap(1)}"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t1 = time.monotonic()
        v0, v1 = (vmstat(f"{tmp}/vm{n}") for n in (0, 1))
        c0, c1 = (cpu_ns(f"{tmp}/st{n}") for n in (0, 1))
        out, _ = bench.communicate()
        if bench.returncode != 0:
            sys.exit(f"bench failed: {bench.returncode}")
        result = json.loads(out)
        text = subprocess.run(["perf", "script", "-F", "comm,pid,tid,ip,sym,dso", "-i", data],
                              capture_output=True, text=True, check=True).stdout
        if a.out_report:
            rep = subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children",
                                  "--sort", "comm,sym", "-g", "none", "--percent-limit", "0.3"],
                                 capture_output=True, text=True, check=True).stdout
            with open(a.out_report, "w") as f:
                f.write(f"# {' '.join(cmd)}\n# perf record -a -g -e cpu-clock -F {a.freq} "
                        f"-- sleep {a.seconds} ({a.delay} s after the bench started)\n")
                f.write(rep)
    ss = samples(text)
    # The sweeping workers: the bench's forked children, named as the bench binary.
    comm = os.path.basename(a.reclaimlab)[:15]
    pids = {}
    for c, pid, _ in ss:
        if c == comm:
            pids[pid] = pids.get(pid, 0) + 1
    workers = set(kids)
    by = {}
    by_comm = {}
    for c, pid, frames in ss:
        key = "worker" if pid in workers else c
        by_comm[key] = by_comm.get(key, 0) + 1
        if pid in workers:
            k = classify(frames)
            by[k] = by.get(k, 0) + 1
    d = {k: v1[k] - v0[k] for k in ("pgsteal_anon", "pgscan_anon", "pswpin", "pswpout",
                                     "pgfault", "pgmajfault", "pgalloc_normal", "pgfree")}
    window = t1 - t0
    ns_per_sample = (c1 - c0) / max(sum(by.values()), 1)
    steal = max(d["pgsteal_anon"], 1)
    doc = {
        "command": " ".join(cmd), "kernel": os.uname().release, "freq": a.freq,
        "window_seconds": round(window, 3), "sampled_seconds": a.seconds, "samples": len(ss), "ns_per_sample": ns_per_sample,
        "worker_cpu_seconds": (c1 - c0) / 1e9, "worker_processes": kids,
        "vmstat": d, "samples_by_pid": pids,
        "throughput": result["runs"][0].get("throughput"),
        "samples_by_task": dict(sorted(by_comm.items(), key=lambda x: -x[1])),
        "worker_samples_by_component": dict(sorted(by.items(), key=lambda x: -x[1])),
        "worker_ns_per_steal_by_component": {
            k: round(n * ns_per_sample / steal, 1) for k, n in sorted(by.items(), key=lambda x: -x[1])},
        "worker_ns_per_steal": round(sum(by.values()) * ns_per_sample / steal, 1),
    }
    json.dump(doc, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
