#!/usr/bin/env python3
"""Where a file-mmap-rw bench run's worker CPU time goes, from `perf script` output.

Each sample of the workers (the threads bench's placement record lists, not the process's
main thread) goes to the first rule naming one of its frames, leaf first (the random
reader's rules of profiles/kvm-guest-2vcpu.random-reader.txt, with a few more classes);
prints samples, ns per stolen page (pgsteal_file) and per page allocated (pgalloc_normal), then
each class's callers and leaves. Usage:
    perf script -i perf.data -F comm,tid,time,ip,sym > script.txt
    scripts/perf-worker-classes.py script.txt bench.json [ms per sample, default 0.5]
"""
import json, sys, collections
RULES = [
    ("ipi handler (flush_tlb_func)", ["flush_tlb_func", "__flush_smp_call_function_queue", "sysvec_call_function", "sysvec_call_function_single", "__sysvec_call_function", "__sysvec_call_function_single"]),
    ("folio_end_read", ["folio_end_read"]),
    ("zero (memset)", ["zero_user_segments.constprop.0", "zero_user_segments", "folio_zero_segments", "folio_zero_segment"]),
    ("ext4 map blocks", ["ext4_map_blocks", "ext4_es_lookup_extent"]),
    ("shrink_slab (shadow nodes)", ["shrink_slab", "do_shrink_slab", "shrink_slab_memcg"]),
    ("tlb flush (sender)", ["flush_tlb_mm_range", "arch_tlbbatch_flush", "native_flush_tlb_multi", "kvm_flush_tlb_multi", "try_to_unmap_flush", "try_to_unmap_flush_dirty"]),
    ("folio_referenced", ["folio_referenced"]),
    ("try_to_unmap", ["try_to_unmap"]),
    ("__remove_mapping", ["__remove_mapping"]),
    ("free/uncharge", ["free_unref_folios", "__mem_cgroup_uncharge_folios", "mem_cgroup_uncharge_folios", "__folio_put", "free_frozen_pages", "destroy_large_folio", "free_unref_page", "__free_pages_ok"]),
    ("shrink_folio_list", ["shrink_folio_list"]),
    ("lru_add_drain (in reclaim)", ["lru_add_drain", "lru_add_drain_cpu"]),
    ("lru isolate/scan", ["isolate_lru_folios", "shrink_lruvec", "shrink_node", "do_try_to_free_pages", "try_to_free_mem_cgroup_pages", "shrink_inactive_list", "shrink_active_list", "move_folios_to_lru"]),
    ("drain_all_stock", ["drain_all_stock", "drain_local_stock"]),
    ("charge", ["try_charge_memcg", "charge_memcg", "__mem_cgroup_charge", "memcg1_commit_charge"]),
    ("page alloc", ["__alloc_frozen_pages_noprof", "folio_alloc_noprof", "alloc_pages_mpol", "get_page_from_freelist", "filemap_alloc_folio_noprof"]),
    ("workingset_refault", ["workingset_refault", "workingset_test_recent"]),
    ("lru add (folio_batch)", ["__folio_batch_add_and_move", "folio_batch_move_lru", "folio_add_lru"]),
    ("i_pages insert", ["__filemap_add_folio"]),
    ("filemap_add_folio other", ["filemap_add_folio"]),
    ("ext4_mpage_readpages other", ["ext4_mpage_readpages", "read_pages"]),
    ("readahead other", ["page_cache_ra_order", "page_cache_ra_unbounded", "do_sync_mmap_readahead", "do_async_mmap_readahead", "page_cache_async_ra", "do_page_cache_ra"]),
    ("fault-around / map (filemap_map_pages, set_pte_range, do_set_pmd)", ["filemap_map_pages", "next_uptodate_folio", "do_fault_around", "filemap_map_pmd", "do_set_pmd", "set_pte_range", "finish_fault", "folio_add_file_rmap_ptes"]),
    ("filemap_fault other", ["filemap_fault", "__do_fault", "__filemap_get_folio"]),
    ("fault other", ["asm_exc_page_fault", "exc_page_fault", "handle_mm_fault", "__handle_mm_fault", "do_user_addr_fault", "do_fault", "do_read_fault"]),
    ("sched / kworker preemption", ["__schedule", "schedule", "finish_task_switch.isra.0", "preempt_schedule_irq", "irqentry_exit"]),
    ("other irq", ["handle_softirqs", "irq_exit_rcu", "sysvec_apic_timer_interrupt", "asm_sysvec_apic_timer_interrupt"]),
]
SYM = {}
for name, syms in RULES:
    for s in syms:
        SYM.setdefault(s, name)

def samples(path, tids):
    cur = None; frames = []
    for line in open(path):
        if not line.strip():
            if cur is not None:
                yield cur, frames
            cur = None; frames = []
            continue
        if not line.startswith(("\t", " ")):
            parts = line.split()
            # comm may contain spaces: tid is the token before the time (ends with ':')
            tid = int(parts[-2]); cur = tid if tid in tids else None
            frames = []
        elif cur is not None:
            f = line.split(None, 1)
            frames.append(f[1].strip() if len(f) > 1 else "?")
    if cur is not None:
        yield cur, frames

def main():
    script, bench = sys.argv[1], sys.argv[2]
    ms = float(sys.argv[3]) if len(sys.argv) > 3 else 0.5
    b = json.load(open(bench)); r = b["runs"][0]; c = r["counters"]; ex = r["extra"]
    tids = set()
    for p in ex["placement"]["processes"]:
        for t in p["threads"]:
            if t["tid"] != p["pid"]:
                tids.add(t["tid"])
    cls = collections.Counter(); callers = collections.defaultdict(collections.Counter)
    leaves = collections.defaultdict(collections.Counter)
    for tid, fr in samples(script, tids):
        name = None
        for i, f in enumerate(fr):
            if f in SYM:
                name = SYM[f]; callers[name][" <- ".join(fr[i:i+4])] += 1; break
        if name is None:
            name = "user: " + (fr[0] if fr else "?") if fr and "touch_until" in " ".join(fr) else "other:" + (fr[0] if fr else "?")
        cls[name] += 1
        if fr: leaves[name][fr[0]] += 1
    steal = c["pgsteal_file"]; alloc = c["pgalloc_normal"]; touched = ex["pages_touched"]
    n = sum(cls.values())
    print(f"workers {sorted(tids)}; samples {n} = {n*ms/1000:.2f} s CPU; pages touched {touched}, pgsteal_file {steal}, pgalloc_normal {alloc}")
    print(f"{'class':60s} {'samples':>8s} {'ns/stolen':>10s} {'ns/alloc':>9s}")
    for k, v in cls.most_common():
        if v < 5: continue
        print(f"{k:60s} {v:8d} {v*ms*1e6/steal:10.1f} {v*ms*1e6/alloc:9.1f}")
    print(f"{'total':60s} {n:8d} {n*ms*1e6/steal:10.1f} {n*ms*1e6/alloc:9.1f}")
    print()
    for k, v in cls.most_common(24):
        print(f"== {k}: {v} samples")
        for cc, m in callers[k].most_common(4): print(f"   {m:6d}  {cc}")
        print("   leaves: " + ", ".join(f"{l} {m}" for l, m in leaves[k].most_common(6)))
main()
