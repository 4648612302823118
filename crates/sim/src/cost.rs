//! The cost tables (x86, arm64): every time the model charges, in nanoseconds, with its source.
//!
//! One table so that a reviewer can see (and a validation run can calibrate) every physical
//! figure in one place. docs/cost-model.md repeats the table with the full citations. None of
//! these is fitted to a seed's result.

use serde::{Deserialize, Serialize};

/// Costs in nanoseconds of simulated time. Serde gives each field its name as a profile's cost
/// name (`[costs.NAME]`), so a field added here is at once settable from a profile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostTable {
    /// Workload store bandwidth for one 4 KiB page (one pass of stores over the page).
    /// ~10 GB/s single-core streaming store bandwidth on a Zen-class core: 4096 B / 10 B/ns.
    pub touch_page: u64,
    /// A workload's load or store of one byte of a page (one cache line, and the loop around
    /// it), for workloads that touch a page once per visit (anon-sweep's worker: a one-byte
    /// atomic add or a volatile load per page). The line was just written by the fault that
    /// mapped the page (clear_page, the decompression), so it is cached: ~50 ns with the loop;
    /// estimate. The page walk after a TLB miss is `tlb_walk`, apart.
    pub touch_line: u64,
    /// Hardware page walk on a TLB miss (4-level walk, mostly cache hits): ~30 ns
    /// (Intel/AMD optimization manuals give 20-40 cycles for a walk hitting the caches).
    pub tlb_walk: u64,
    /// Exception entry + handle_mm_fault + return, without the page work: ~700 ns
    /// (lmbench lat_pagefault-style figures for a minor fault on current x86).
    pub fault_base: u64,
    /// clear_page of a 4 KiB page (rep stosb at ~20 GB/s): ~200 ns.
    pub zero_page: u64,
    /// Per 4 KiB page of one long clear: folio_zero_segment zeroes a whole large page-cache
    /// folio with one memset (zero_user_segments without HIGHMEM), so a folio of n pages costs
    /// `zero_page` once and this for each further page. Estimate: 200 ns, as `zero_page` (no
    /// saving assumed where it is not measured).
    pub zero_page_long: u64,
    /// Compress one 4 KiB page in zram (lzo-rle, ~700 MB/s per core): ~6 us.
    pub zram_compress: u64,
    /// Decompress one 4 KiB page from zram (lzo-rle, ~2 GB/s): ~2 us.
    pub zram_decompress: u64,
    /// Compress a page that is zero but for a byte or a few (drivers/zram.rs `Sparse`): lzo-rle
    /// codes the zero run as one long match, so it is a scan of the page at ~10 GB/s: ~400 ns.
    /// Estimate.
    pub zram_compress_sparse: u64,
    /// Decompress such a page: writing 4 KiB of mostly zeros at memset speed, ~200 ns. Estimate.
    pub zram_decompress_sparse: u64,
    /// Try to compress an incompressible page: lzo's match search gives up faster the longer it
    /// finds nothing (its skip grows), so less than a pattern's ~6 us: ~2 us. Estimate.
    pub zram_compress_random: u64,
    /// Read back a page zram stored whole (huge class): a 4 KiB copy, ~300 ns. Estimate.
    pub zram_decompress_random: u64,
    /// Read one 4 KiB page of file data that is not cached (NVMe 4K random read ~80 us,
    /// sequential with readahead much less; we charge a readahead-amortized ~10 us).
    pub file_read_page: u64,
    /// Reclaim: isolate one folio from the LRU under lru_lock (also the lru_lock hold per
    /// isolated folio, locking.rs).
    pub isolate_folio: u64,
    /// Reclaim: shrink_folio_list's own work per folio on its list, beyond the calls the
    /// model charges apart (folio_referenced, try_to_unmap, the swap-out, the free):
    /// folio_trylock, folio_check_dirty_writeback, the mapping and flag tests, the list moves
    /// and the per-folio statistics. A few hundred instructions with a few cache misses on the
    /// folio: ~100 ns; estimate.
    pub shrink_folio: u64,
    /// Reclaim: one rmap walk of an order-0 anon/file folio (folio_referenced or try_to_unmap),
    /// anon_vma lock + page_vma_mapped_walk: ~250 ns.
    pub rmap_walk: u64,
    /// Reclaim: folio_alloc_swap + swap cache insert: ~300 ns.
    pub add_to_swap: u64,
    /// Reclaim: __remove_mapping + workingset_eviction + free to the allocator: ~300 ns.
    pub remove_mapping: u64,
    /// Memcg charge slow path (page_counter_try_charge with atomics on a shared counter): ~100 ns.
    pub memcg_charge: u64,
    /// Send one call-function IPI (x2APIC ICR write; smp_call_function_many bookkeeping per
    /// target): ~300 ns per target on bare metal.
    pub ipi_send: u64,
    /// IPI delivery latency, sender's send to the target's handler entry: ~1 us bare metal
    /// (published APIC IPI round trips of 1-2 us).
    pub ipi_delivery: u64,
    /// Interrupt entry/exit + flush_tlb_func bookkeeping on the receiver: ~1 us.
    pub ipi_handle: u64,
    /// Full ASID flush (CR3 write, or INVPCID single-context): ~200 ns, plus refills later.
    pub local_flush_all: u64,
    /// One INVLPG: ~100 ns (the figure behind tlb_single_page_flush_ceiling = 33).
    pub local_flush_one: u64,
    /// Context switch (switch_mm_irqs_off + scheduler): ~2 us.
    pub context_switch: u64,
    /// __schedule's interrupts-off section up to context_switch's enter_lazy_tlb when it
    /// finds a task to run (a preemption): local_irq_disable, rq_lock, pick_next_task. A flush
    /// call queued in it to a CPU switching to a kernel thread is taken after the switch,
    /// lazy (flush_tlb_func then leaves for init_mm).
    pub schedule_irqs_off: u64,
    /// The same section when a task sleeps and the CPU goes idle: the dequeue and
    /// pick_next_task_fair's new-idle balancing lengthen it.
    pub schedule_irqs_off_idle: u64,
    /// MADV_POPULATE_READ per resident page: the GUP walk (follow_page_pte) and
    /// folio_mark_accessed, a few cache misses: ~100 ns (estimate).
    pub gup_page: u64,
    /// One more iteration of try_to_unmap_one's page_vma_mapped_walk loop beyond the first
    /// (which `rmap_walk` includes): the walk's next-PTE check, ptep_get_and_clear,
    /// set_tlb_ubc_flush_pending (cpumask_or + inc_mm_tlb_gen), folio_remove_rmap_pte
    /// (mapcount atomics + lruvec stat), the mm counter and folio_put: ~6-8 uncontended
    /// atomic RMWs (~20 cycles each) plus bookkeeping, ~150 ns. Estimate, not measured.
    pub ttu_step: u64,
    /// One more PTE cleared inside a batched step (folio_pte_batch's compare and
    /// get_and_clear_ptes' xchg on a cached PTE line): ~10 ns. Estimate, not measured.
    pub pte_clear: u64,
    /// A fault that finds its folio locked by reclaim (`sim.interleave = "folio"` only): the
    /// task sleeps in folio_wait_bit until reclaim unlocks it; modelled as a 1 us wait and a
    /// retry. Estimate, not measured.
    pub folio_lock_wait: u64,
    /// One more iteration of folio_referenced_one's page_vma_mapped_walk loop beyond the
    /// first (which `rmap_walk` includes): next PTE, check_pte's pfn compare, the VM_LOCKED
    /// check and the ptep_clear_flush_young_notify call with one test-and-clear of the
    /// accessed bit: ~40-60 instructions, ~20 ns. Estimate, not measured.
    pub pvmw_step: u64,
    /// A further accessed-bit test-and-clear beyond one per PTE visited (arm64 contpte
    /// clears all 16 PTEs of a block on every call): one cmpxchg on a cached PTE line, ~10 ns
    /// (as `pte_clear`). Estimate.
    pub young_clear: u64,
    /// arm64: issue one broadcast TLBI (VALE1IS / RVALE1IS): the DVM message is posted and
    /// the CPU moves on. ~30 ns. Estimate (0 on x86, which has no TLBI).
    pub tlbi_op: u64,
    /// arm64: DSB ISH waiting for the broadcast TLBIs in flight: a fixed part plus a part per
    /// CPU of the inner-shareable domain (every PE must acknowledge the DVM sync).
    /// Estimates: 200 ns + 20 ns per CPU (~840 ns on 32 CPUs); see docs/cost-model.md.
    pub dsb_ish: u64,
    pub dsb_ish_per_cpu: u64,
    /// MGLRU's page-table walk and look-around, per PTE examined (walk_pte_range reads eight
    /// PTEs per cache line and tests the young bit): ~2 ns. Estimate, not measured; a young
    /// PTE adds `pte_clear`.
    pub walk_pte: u64,
    /// The writeback device: one 4 KiB page written, in submission order (NVMe-class 4K
    /// writes at ~100k IOPS, 400 MB/s, the same figure as `file_read_page`). Estimate.
    pub file_write_page: u64,
    /// The writeback device: the fixed cost of one write request beyond its pages (command
    /// submission and completion), charged when the flusher starts a request that cannot merge
    /// with the previous one; only with `sim.writeback_queue_depth` > 0, where requests exist.
    /// 0 here: the built-in `file_write_page` already stands for a whole 4 KiB request.
    /// Estimate.
    pub file_write_request: u64,
    /// The page cache's device: the fixed service of one read request beyond its pages (the
    /// device takes requests one after another; a burst of readahead's small requests, or a
    /// read behind the flusher's writes, waits for this per request ahead of it). A lone
    /// request's round trip is `file_read_page` + `file_read_latency` whatever this is: the
    /// latency, measured with one request in flight, already holds the request's own service.
    /// 0 here: the built-in `file_read_page` stands for a whole 4 KiB request. Estimate.
    pub file_read_request: u64,
    /// The page cache's device (the disk the file lives on): a read request's latency beyond
    /// its transfer, from submission to the completion that unlocks the folio; requests
    /// overlap in it (one is served while others wait for theirs), so it is not device
    /// time. A page-cache miss that reads one folio waits `file_read_page` + this. The same
    /// reasoning and figure as `swap_read_latency` (an NVMe-class disk, 4K random read at
    /// QD1 ~80 us). Estimate.
    pub file_read_latency: u64,
    /// The same for a writeback request: the time from its transfer to its completion
    /// (folio_end_writeback), ~20 us on an NVMe disk's write cache, as `swap_write_latency`.
    /// Estimate.
    pub file_write_latency: u64,
    /// lru_lock hold per folio put back on its list (move_folios_to_lru, MGLRU's putback in
    /// evict_folios): folio_set_lru, lruvec_add_folio's list_add and update_lru_size (per-CPU
    /// lruvec/memcg stat updates): the mirror of `isolate_folio`'s list_del, so the same
    /// ~50 ns. Estimate, not measured.
    pub lru_lock_putback_per_folio: u64,
    /// lru_lock hold per folio in an lru_add folio_batch move (folio_batch_move_lru →
    /// lru_add: folio_set_lru, lruvec_add_folio, the same lruvec so no relock): ~50 ns, as
    /// `lru_lock_putback_per_folio`. Estimate, not measured.
    pub lru_lock_add_per_folio: u64,
    /// do_anonymous_page's new folio beyond the charge and the zeroing: the page allocator's
    /// per-CPU list (rmqueue_pcplist), folio_add_new_anon_rmap, the mm counter and the lru_add
    /// batch entry: a few hundred instructions and cache misses, ~300 ns. Estimate.
    pub alloc_anon_folio: u64,
    /// do_swap_page beyond the fault, the new folio (`alloc_anon_folio`), the charge and the
    /// decompression: the swap cache lookup, the swap device's read path (swap_read_folio's
    /// synchronous call into zram), swap_free_nr and the swap count, the PTE install with its
    /// swap checks: ~1 us. Estimate.
    pub do_swap_page: u64,
    /// The swap write path per page beyond compression (pageout → swap_writeout →
    /// __swap_writepage): folio_alloc_swap's slot, the bio and zram's slot bookkeeping,
    /// zsmalloc's allocation and copy, the swap cache insert and delete: ~1 us. Estimate.
    pub swap_writeout: u64,
    /// flush_tlb_mm_range's fixed work for a ranged local flush, beyond its INVLPGs: the
    /// flush_tlb_info set-up, inc_mm_tlb_gen, the checks in flush_tlb_func and
    /// preempt/irq toggling: ~100 ns. Estimate.
    pub flush_tlb_range_fixed: u64,
    /// x86 with `machine.invlpgb`: issue one INVLPGB (a broadcast invalidation the CPU posts
    /// and does not wait for, as arm64's TLBI): ~30 ns. Estimate, the `tlbi_op` reasoning (no
    /// latency figure for INVLPGB was found published; 0 on arm64).
    pub invlpgb: u64,
    /// TLBSYNC waiting for this CPU's INVLPGBs to complete on every CPU: a fixed part and a
    /// part per CPU (each core acknowledges). Estimates, the `dsb_ish` reasoning: 200 ns +
    /// 20 ns per CPU (no latency figure was found published; 0 on arm64).
    pub tlbsync: u64,
    pub tlbsync_per_cpu: u64,
    /// A block swap device (`swap.device = "block"`, mm/page_io.rs): a read request's
    /// latency beyond its transfer, from submission to the completion interrupt. Datacenter
    /// NVMe drives list 4K random reads at QD1 around 80 us (e.g. Intel SSD DC P4510's data
    /// sheet: 77 us); a SATA SSD is slower, a virtio-blk disk depends on its host. Estimate
    /// for an NVMe-class disk, not measured.
    pub swap_read_latency: u64,
    /// The same for a write request: NVMe drives acknowledge writes from their write cache,
    /// listed around 20 us at QD1 (P4510: 18 us). Estimate, not measured.
    pub swap_write_latency: u64,
    /// A block swap device's transfer time per 4 KiB page, requests one after another (its
    /// bandwidth): ~2 GB/s, a PCIe 3.0 x4 NVMe drive's sequential rate (swap bios carry up
    /// to SWAP_CLUSTER_MAX pages, so bandwidth, not IOPS, bounds them): 2 us. Estimate.
    pub swap_page_transfer: u64,
    /// One cache line fetched from another CPU's cache because that CPU wrote it last (a
    /// locked section after another CPU's, locking.rs). Same-socket core-to-core transfer
    /// latencies on current x86 servers are ~40-100 ns; 60 ns. Estimate, not measured
    /// (calibrate's `line-turn` measures it on a machine).
    pub line_transfer: u64,
    /// __remove_mapping's part under the page cache lock for a file folio (i_lock and
    /// xa_lock_irq: the refcount freeze, workingset_eviction's shadow, page_cache_delete and
    /// its statistics): about half of `remove_mapping`, whose other half (the uncharge and the
    /// free) runs unlocked. The locked part is charged out of `remove_mapping`, not on top.
    /// ~100 ns. Estimate (perf on this project's test machine put about as many reclaim
    /// samples in this section as in the lru_lock sections; see docs/cost-model.md).
    pub page_cache_delete_locked: u64,
    /// __filemap_add_folio's section under xas_lock_irq for a new folio (xas_store of its
    /// slots, nrpages, the NR_FILE_PAGES statistics): the mirror of the delete's xarray work,
    /// ~50 ns. Estimate, not measured.
    pub page_cache_insert_locked: u64,
    /// filemap_alloc_folio for a new page-cache folio (readahead's ractl_alloc_folio, a
    /// fault's or read()'s own folio): the page allocator's per-CPU list (rmqueue_pcplist,
    /// prep_new_page), no rmap or mm counter as an anonymous folio has. ~100 ns. Estimate.
    pub page_cache_alloc: u64,
    /// workingset_refault for a page-cache folio filled over a shadow entry: unpack_shadow,
    /// the eviction memcg's lruvec, workingset_test_recent's refault distance against the
    /// flushed LRU sizes, the WORKINGSET_REFAULT statistics. ~100 ns. Estimate.
    pub workingset_refault: u64,
    /// The filesystem's block lookup per 4 KiB block it fills without a device read (a hole or
    /// an unwritten block): ext4_mpage_readpages calls ext4_map_blocks (the extent-status
    /// lookup under its read lock) for each block that does not map, however large the folio.
    /// A page read from the device has this inside `file_read_page`. ~50 ns. Estimate.
    pub fs_map_block: u64,
    /// ext4_mpage_readpages' work per folio it fills without a device read, beyond the block
    /// lookups and the zeroing: readahead_folio (the xarray lookup and reference), the folio's
    /// set-up and the loop around it. ~50 ns. Estimate (with `fs_map_block`, the earlier
    /// 100-ns estimate per order-0 page, split).
    pub fs_read_folio: u64,
    /// filemap_release_folio for a page-cache folio with buffer heads, per page: ext4's
    /// release_folio → try_to_free_buffers: drop_buffers under the mapping's i_private_lock
    /// (`release_buffers_locked`), then free_buffer_head for each (slab free with its memcg
    /// hook). ~150 ns. Estimate: one buffer head per 4 KiB page on 4 KiB blocks, a walk of
    /// its ring and a slab free; perf on this project's test machine measured 180 ns (see
    /// docs/cost-model.md).
    pub release_buffers: u64,
    /// The part of `release_buffers` under i_private_lock (drop_buffers), charged out of
    /// it, not on top. ~90 ns. Estimate, as `release_buffers`.
    pub release_buffers_locked: u64,
    /// CPU time per page a block swap request completes, on the CPU its interrupt runs on:
    /// the hardirq, then (one hardware queue: blk_mq_complete_request raises BLOCK_SOFTIRQ
    /// locally) blk_mq_end_request and each bio's end_io (end_swap_bio_read/write:
    /// folio_end_read with its wake-up, folio_end_writeback with the rotation). Estimate for
    /// bare metal: ~400 ns (a folio's end_io with its LRU rotation, ~200 ns, plus the
    /// request's interrupt and blk-mq completion spread over its pages); not measured.
    pub swap_complete_page: u64,
    /// A block swap device: CPU time per bio on the submitting CPU. swap_read_folio and
    /// __swap_writepage give each folio a bio of its own (swap_read_folio_bdev_async,
    /// swap_writepage_bdev_async: bio_alloc, submit_bio → blk_mq_submit_bio, which merges it
    /// into the task's plug). Estimate for bare metal: ~300 ns, as `writepages_folio`.
    pub swap_submit_bio: u64,
    /// The same per request: a plug's run of bios for adjacent slots is one request, which
    /// blk_finish_plug (or the flush at schedule) dispatches through the I/O scheduler to the
    /// driver, which posts it and notifies the device (on a virtio disk a write to its notify
    /// register, a VM exit). Estimate for bare metal: ~1.5 us, as `writepages_request`.
    pub swap_submit_request: u64,
    /// A block swap device: its fixed service per read request beyond the pages (as
    /// `file_read_request`; a request is a run of adjacent slots in one plug), which delays
    /// the requests queued behind it; a lone request's round trip is `swap_page_transfer` per
    /// page + `swap_read_latency`. 0 here: the built-in transfer stands for a whole request.
    /// Estimate.
    pub swap_read_request: u64,
    /// The same per write request (as `file_write_request`). Estimate: 0.
    pub swap_write_request: u64,
    /// do_writepages' CPU time per folio written back, on the writing CPU (the flusher, or
    /// whoever writes inline): ext4_writepages finding the dirty folio, folio_clear_dirty_for_io
    /// (page_mkclean's rmap walk; the PTE flush itself is charged as a flush), bio_add_folio,
    /// folio_start_writeback: work per folio, whatever its size. Estimate for bare metal: a
    /// few hundred instructions and misses, ~300 ns.
    pub writepages_folio: u64,
    /// do_writepages' CPU time per write request beyond its pages (a folio that does not
    /// merge with the previous one): a bio and a blk-mq request, submit_bio, the driver's
    /// queue_rq. Estimate for bare metal NVMe: ~1.5 µs (a core drives ~700K 4 KiB writes/s).
    pub writepages_request: u64,
    /// The CPU time a page-cache read costs the task that submits it, per device request:
    /// ext4_mpage_readpages' bio (bio_alloc, submit_bio) and the plug's dispatch of the request
    /// through the I/O scheduler to the driver (blk_mq_flush_plug_list, queue_rq, the device's
    /// notification). Folios of adjacent blocks read in one readahead pass share a request.
    /// Estimate for bare metal: ~1.5 us, as `writepages_request`.
    pub readpages_request: u64,
    /// What a request into unwritten blocks (fallocate) adds to its submission: ext4_map_blocks
    /// with EXT4_GET_BLOCKS_IO_CREATE_EXT splits the unwritten extent under a journal handle.
    /// Estimate: ~1 µs.
    pub writepages_unwritten_request: u64,
    /// CPU time per folio a file write completes (folio_end_writeback: the flag, the writeback
    /// counters, the wake-up and a PG_reclaim folio's rotation), on the completion's CPU.
    /// Estimate: ~150 ns.
    pub writeback_complete_folio: u64,
    /// CPU time per file write request completing beyond its pages (the interrupt,
    /// blk_mq_end_request, the bio's end_io), on the completion's CPU. Estimate: ~1 µs.
    pub writeback_complete_request: u64,
    /// What a completed request into unwritten blocks adds: ext4 ends such a write in a kernel
    /// worker (ext4_end_io_rsv_work) that converts the extent to written under a journal handle
    /// before the folio's writeback ends. Charged on the completion's CPU (the worker is queued
    /// from the interrupt and runs there first). Estimate: ~1.5 µs.
    pub writeback_convert_request: u64,
    /// One run of vmpressure's work item (vmpressure_work_fn on the system workqueue): the
    /// sums taken under sr_lock, the level computed, events_lock taken and the listener list
    /// walked at each memcg up to the root. ~500 ns. Estimate: two short lock sections and a
    /// division per level, two levels.
    pub vmpressure_work: u64,
    /// A workqueue kworker's own time per wake-up beyond its items and the context switches:
    /// worker_thread leaving and re-entering idle, process_one_work's pool-lock sections and
    /// bookkeeping. ~1 µs. Estimate.
    pub kworker_run: u64,
    /// A run of a hardware queue on kblockd (blk_mq_run_work_fn) beyond the requests it
    /// dispatches (kblockd.rs): the work item's call and a queue run's checks. ~1 µs.
    /// Estimate.
    pub kblockd_run: u64,
    /// The dispatch part of `swap_submit_request`: the I/O scheduler handing a request to the
    /// driver, virtio_queue_rq and the device notification (blk_mq_flush_plug_list from a
    /// plug, blk_mq_run_work_fn on kblockd for a request that waited on a stopped queue).
    /// ~1.2 µs. Estimate.
    pub blk_dispatch_request: u64,
    /// A TIMER_SOFTIRQ round at a tick that fires a timer-wheel timer waking a kernel thread
    /// (softirq.rs): run_timer_softirq, the expired timer's wake-up, and the tick's other
    /// softirqs (RCU, SCHED) that usually run with it. ~5 µs. Estimate.
    pub softirq_timer: u64,
    /// ksoftirqd's own time per run beyond the softirq handlers it runs (softirq.rs):
    /// smpboot_thread_fn's loop and the pending softirqs' dispatch. ~2 µs. Estimate.
    pub ksoftirqd_run: u64,
}

impl CostTable {
    pub fn x86() -> CostTable {
        CostTable {
            touch_page: 410,
            touch_line: 50,
            tlb_walk: 30,
            fault_base: 700,
            zero_page: 200,
            zero_page_long: 200,
            zram_compress: 6000,
            zram_decompress: 2000,
            zram_compress_sparse: 400,
            zram_decompress_sparse: 200,
            zram_compress_random: 2000,
            zram_decompress_random: 300,
            file_read_page: 10_000,
            isolate_folio: 50,
            shrink_folio: 100,
            rmap_walk: 250,
            add_to_swap: 300,
            remove_mapping: 300,
            memcg_charge: 100,
            ipi_send: 300,
            ipi_delivery: 1000,
            ipi_handle: 1000,
            local_flush_all: 200,
            local_flush_one: 100,
            context_switch: 2000,
            schedule_irqs_off: 1_280,
            schedule_irqs_off_idle: 5_450,
            gup_page: 100,
            ttu_step: 150,
            pte_clear: 10,
            folio_lock_wait: 1000,
            pvmw_step: 20,
            young_clear: 10,
            tlbi_op: 0,
            dsb_ish: 0,
            dsb_ish_per_cpu: 0,
            walk_pte: 2,
            file_write_page: 10_000,
            file_write_request: 0,
            file_read_request: 0,
            file_read_latency: 80_000,
            file_write_latency: 20_000,
            lru_lock_putback_per_folio: 50,
            lru_lock_add_per_folio: 50,
            alloc_anon_folio: 300,
            do_swap_page: 1000,
            swap_writeout: 1000,
            flush_tlb_range_fixed: 100,
            invlpgb: 30,
            tlbsync: 200,
            tlbsync_per_cpu: 20,
            swap_read_latency: 80_000,
            swap_write_latency: 20_000,
            swap_page_transfer: 2_000,
            line_transfer: 60,
            page_cache_delete_locked: 100,
            page_cache_insert_locked: 50,
            page_cache_alloc: 100,
            workingset_refault: 100,
            fs_map_block: 50,
            fs_read_folio: 50,
            release_buffers: 150,
            release_buffers_locked: 90,
            swap_complete_page: 400,
            swap_submit_bio: 300,
            swap_submit_request: 1_500,
            swap_read_request: 0,
            swap_write_request: 0,
            writepages_folio: 300,
            writepages_request: 1_500,
            readpages_request: 1_500,
            writepages_unwritten_request: 1_000,
            writeback_complete_folio: 150,
            writeback_complete_request: 1_000,
            writeback_convert_request: 1_500,
            vmpressure_work: 500,
            kworker_run: 1_000,
            kblockd_run: 1_000,
            blk_dispatch_request: 1_200,
            softirq_timer: 5_000,
            ksoftirqd_run: 2_000,
        }
    }

    /// The architecture's built-in table.
    pub fn for_arch(arch: crate::arch::Arch) -> CostTable {
        match arch {
            crate::arch::Arch::X86 => CostTable::x86(),
            crate::arch::Arch::Arm64 => CostTable::arm64(),
        }
    }

    /// Every cost's name (the fields of the table), sorted.
    pub fn names() -> Vec<String> {
        match serde_json::to_value(CostTable::x86()) {
            Ok(serde_json::Value::Object(m)) => m.keys().cloned().collect(),
            _ => unreachable!("CostTable serializes to an object"),
        }
    }

    /// Overlay a profile's costs on this table by name; returns how many were set. A cost the
    /// table has no field for is an error naming it and listing the valid names.
    ///
    /// Profiles give ns as f64; the simulator's clocks count whole ns, so an integer field gets
    /// the value rounded to the nearest ns (halves away from zero). Rounding is a pure function
    /// of the profile's text, so a run with a profile stays deterministic.
    pub fn overlay<'a>(
        &mut self,
        costs: impl IntoIterator<Item = (&'a str, f64)>,
    ) -> anyhow::Result<usize> {
        let mut v = serde_json::to_value(&*self)?;
        let m = v
            .as_object_mut()
            .expect("CostTable serializes to an object");
        let mut n = 0;
        for (name, ns) in costs {
            let Some(slot) = m.get_mut(name) else {
                let mut valid: Vec<&String> = m.keys().collect();
                valid.sort();
                let valid: Vec<&str> = valid.iter().map(|s| s.as_str()).collect();
                anyhow::bail!(
                    "unknown cost {name:?}: the simulator's costs are {}",
                    valid.join(", ")
                );
            };
            if !ns.is_finite() || ns < 0.0 {
                anyhow::bail!("cost {name}: {ns} ns is not a finite number >= 0");
            }
            *slot = if slot.is_u64() {
                serde_json::Value::from(ns.round() as u64)
            } else {
                serde_json::Value::from(ns)
            };
            n += 1;
        }
        *self = serde_json::from_value(v)?;
        Ok(n)
    }

    /// The table a scenario runs with: the arch's built-in one with `machine.profile`'s costs
    /// laid over it.
    pub fn for_scenario(scn: &reclaimlab_core::Scenario) -> anyhow::Result<CostTable> {
        let mut t = CostTable::for_arch(scn.machine.arch);
        if let Some(p) = &scn.profile {
            t.overlay(
                p.profile
                    .costs
                    .iter()
                    .map(|(name, c)| (name.as_str(), c.ns)),
            )
            .map_err(|e| anyhow::anyhow!("profile {}: {e}", p.origin))?;
        }
        Ok(t)
    }

    /// arm64 (a Neoverse-class server): the generic kernel paths keep the x86 figures (the
    /// same estimates; no arm64 measurement exists yet); the IPI costs are unused (arm64 sends
    /// none) and the TLB maintenance costs are the TLBI/DSB ones.
    pub fn arm64() -> CostTable {
        CostTable {
            ipi_send: 0,
            ipi_delivery: 0,
            ipi_handle: 0,
            tlbi_op: 30,
            dsb_ish: 200,
            dsb_ish_per_cpu: 20,
            invlpgb: 0,
            tlbsync: 0,
            tlbsync_per_cpu: 0,
            ..CostTable::x86()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reclaimlab_core::profile::{Profile, Provenance, SHIPPED};

    fn shipped(name: &str) -> Profile {
        let (_, text) = SHIPPED.iter().find(|(n, _)| *n == name).unwrap();
        Profile::parse(text, name).unwrap()
    }

    /// The generic profiles are the built-in tables with provenance: same names, same values.
    #[test]
    fn builtin_tables_equal_the_generic_profiles() {
        for (name, table) in [
            ("generic-x86", CostTable::x86()),
            ("generic-arm64", CostTable::arm64()),
        ] {
            let p = shipped(name);
            let in_profile: Vec<String> = p.costs.keys().cloned().collect();
            assert_eq!(in_profile, CostTable::names(), "{name}: cost names differ");
            // Overlay on a table of zeros: every field must come from the profile.
            let mut zero = serde_json::to_value(CostTable::x86()).unwrap();
            for v in zero.as_object_mut().unwrap().values_mut() {
                *v = serde_json::Value::from(0u64);
            }
            let mut t: CostTable = serde_json::from_value(zero).unwrap();
            let n = t
                .overlay(p.costs.iter().map(|(k, c)| (k.as_str(), c.ns)))
                .unwrap();
            assert_eq!(n, in_profile.len());
            assert_eq!(t, table, "{name} differs from the built-in table");
        }
    }

    /// The seeds' machines have no per-operation figure of their own: a seed profile's
    /// estimates are the built-in table's, so its runs differ from built-in runs only where a
    /// cost is measured or published (published figures of other machines stay in `source`).
    #[test]
    fn seed_profile_estimates_are_the_builtin_figures() {
        let seeds: Vec<_> = SHIPPED
            .iter()
            .filter(|(n, _)| n.starts_with("seed"))
            .collect();
        assert!(seeds.len() >= 3);
        for (name, _) in seeds {
            let p = shipped(name);
            let arch = crate::arch::Arch::parse(&p.machine.arch).unwrap();
            let builtin = serde_json::to_value(CostTable::for_arch(arch)).unwrap();
            for (k, c) in p
                .costs
                .iter()
                .filter(|(_, c)| c.provenance == Provenance::Estimate)
            {
                let want = builtin[k.as_str()].as_u64();
                assert_eq!(Some(c.ns.round() as u64), want, "{name}: {k}");
            }
        }
    }

    #[test]
    fn every_shipped_profile_names_only_known_costs() {
        for (name, _) in SHIPPED {
            let p = shipped(name);
            let mut t = CostTable::for_arch(crate::arch::Arch::parse(&p.machine.arch).unwrap());
            t.overlay(p.costs.iter().map(|(k, c)| (k.as_str(), c.ns)))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    #[test]
    fn overlay_rounds_to_whole_ns_and_rejects_unknown_names() {
        let mut t = CostTable::x86();
        t.overlay([("fault_base", 812.5), ("ipi_send", 299.4)])
            .unwrap();
        assert_eq!(t.fault_base, 813);
        assert_eq!(t.ipi_send, 299);
        assert_eq!(t.rmap_walk, CostTable::x86().rmap_walk);
        let e = t.overlay([("fault_bse", 1.0)]).unwrap_err().to_string();
        assert!(e.contains("unknown cost \"fault_bse\""), "{e}");
        assert!(
            e.contains("fault_base") && e.contains("zram_compress"),
            "{e}"
        );
        assert!(t.overlay([("fault_base", f64::NAN)]).is_err());
    }
}
