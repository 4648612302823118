//! Every event counter the simulator reports, one line each (include/linux/vm_event_item.h's
//! enum vm_event_item and mmzone.h's node_stat_item names where the kernel has the counter;
//! the model's own names for the rest).
//!
//! Adding a counter is one line here, `ITEM: Place = "json_name",`, plus the
//! `count_vm_event(ITEM)` where it happens: the result document then carries it under its name
//! wherever its [`Place`] is serialised (mm/vmstat.rs, result.rs). Items are grouped by the
//! subsystem that counts them.

use super::vmstat::Place;

macro_rules! vm_event_items {
    ($($(#[$doc:meta])* $item:ident: $place:ident = $name:literal,)*) => {
        /// An event counter: an index into [`super::vmstat::VmEvents`].
        #[allow(non_camel_case_types, clippy::upper_case_acronyms)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum VmEventItem { $($(#[$doc])* $item,)* }

        /// NR_VM_EVENT_ITEMS.
        pub const NR_VM_EVENT_ITEMS: usize = VmEventItem::ALL.len();

        impl VmEventItem {
            /// Every item, in declaration order.
            pub const ALL: &'static [VmEventItem] = &[$(VmEventItem::$item),*];

            /// The name the result document uses (vmstat_text).
            pub const fn name(self) -> &'static str {
                match self { $(VmEventItem::$item => $name,)* }
            }

            /// Where the result document carries it.
            pub const fn place(self) -> Place {
                match self { $(VmEventItem::$item => Place::$place,)* }
            }
        }
    };
}

vm_event_items! {
    // /proc/vmstat (enum vm_event_item, node_stat_item).
    PGFAULT: Vmstat = "pgfault",
    PGMAJFAULT: Vmstat = "pgmajfault",
    PGSCAN_ANON: Vmstat = "pgscan_anon",
    PGSCAN_FILE: Vmstat = "pgscan_file",
    PGSCAN_DIRECT: Vmstat = "pgscan_direct",
    PGSTEAL_ANON: Vmstat = "pgsteal_anon",
    PGSTEAL_FILE: Vmstat = "pgsteal_file",
    PGSTEAL_DIRECT: Vmstat = "pgsteal_direct",
    PGREFILL: Vmstat = "pgrefill",
    PGACTIVATE: Vmstat = "pgactivate",
    PGDEACTIVATE: Vmstat = "pgdeactivate",
    PSWPIN: Vmstat = "pswpin",
    PSWPOUT: Vmstat = "pswpout",
    NR_VMSCAN_WRITE: Vmstat = "nr_vmscan_write",
    NR_VMSCAN_IMMEDIATE: Vmstat = "nr_vmscan_immediate_reclaim",
    WORKINGSET_REFAULT_ANON: Vmstat = "workingset_refault_anon",
    WORKINGSET_REFAULT_FILE: Vmstat = "workingset_refault_file",
    WORKINGSET_ACTIVATE_ANON: Vmstat = "workingset_activate_anon",
    WORKINGSET_ACTIVATE_FILE: Vmstat = "workingset_activate_file",
    WORKINGSET_RESTORE_ANON: Vmstat = "workingset_restore_anon",
    WORKINGSET_RESTORE_FILE: Vmstat = "workingset_restore_file",
    NR_TLB_REMOTE_FLUSH: Vmstat = "nr_tlb_remote_flush",
    NR_TLB_REMOTE_FLUSH_RECEIVED: Vmstat = "nr_tlb_remote_flush_received",
    NR_TLB_LOCAL_FLUSH_ALL: Vmstat = "nr_tlb_local_flush_all",
    NR_TLB_LOCAL_FLUSH_ONE: Vmstat = "nr_tlb_local_flush_one",
    OOM_KILL: Vmstat = "oom_kill",

    // The engine (engine.rs).
    /// Engine steps.
    SIM_STEPS: Extra = "sim_steps",
    /// Engine steps other CPUs ran inside reclaim preemption windows (sim.interleave=folio).
    RECLAIM_PREEMPT_STEPS: InterleaveFolio = "reclaim_preempt_steps",

    // Reclaim (mm/vmscan.rs, mm/page_alloc.rs).
    /// Direct reclaim entries, memcg (try_to_free_mem_cgroup_pages) and global.
    DIRECT_RECLAIMS: Extra = "direct_reclaims",
    /// CPU time in direct reclaim; reported as reclaim_cpu_seconds.
    RECLAIM_NS: Custom = "reclaim_ns",
    /// Dirty file folios shrink_folio_list activated, and so unlocked for the flusher, while
    /// its batch still held a deferred flush of a dirty PTE: how often the window opens in
    /// which writeback can snapshot a folio a CPU may still store to (docs/kernel-facts.md §5);
    /// under `flush-dirty-before-activate`, the flushes that policy adds.
    DIRTY_ACTIVATIONS_FLUSH_PENDING: ExtraNonzero = "dirty_file_activations_flush_pending",

    // Unmapping and the TLB (mm/rmap.rs, mm/memory.rs).
    /// try_to_unmap_one steps (each: one get_and_clear_ptes, one set_tlb_ubc_flush_pending
    /// or flush, one rmap removal) and the PTEs they cleared.
    TTU_STEPS: Extra = "ttu_steps",
    TTU_PTES: Extra = "ttu_ptes",
    /// Writes through a stale TLB entry to a page already unmapped.
    STALE_TLB_WRITES: Extra = "stale_tlb_writes",

    // arm64 (arch/arm64/tlb.rs, contpte.rs; folio_referenced in mm/rmap.rs).
    /// TLBI instructions issued and DSB ISH waits.
    TLBI_OPS: Arm64 = "tlbi_ops",
    DSB_ISH: Arm64 = "dsb_ish",
    /// contpte blocks unfolded.
    CONTPTE_UNFOLDS: Arm64 = "contpte_unfolds",
    /// folio_referenced_one iterations (page_vma_mapped_walk steps) and the PTE
    /// test-and-clears of the accessed bit they did.
    REFERENCED_STEPS: Arm64 = "referenced_steps",
    YOUNG_TESTS: Arm64 = "young_tests",

    // Cross-CPU calls (smp.rs).
    /// Calls queued to remote CPUs, those that found the queue non-empty (no IPI sent), and
    /// interrupts whose handler started late because the target had interrupts off (and the
    /// total delay, ns).
    SMP_CALLS: Extra = "smp_calls",
    SMP_CALLS_SHARING_IRQ: Extra = "smp_calls_sharing_irq",
    IPI_IRQ_OFF_DELAYED: Extra = "ipi_irq_off_delayed",
    IPI_IRQ_OFF_DELAY_NS: Extra = "ipi_irq_off_delay_ns",
    /// Time senders spent in csd_lock_wait for the slowest target's flush (after their own
    /// local flush; with the handlers they ran meanwhile), and the handler time the calls
    /// charged to their targets (ns; read by workloads that report them, e.g. limit-reclaim).
    SMP_CALL_WAIT_NS: Custom = "smp_call_wait_ns",
    SMP_CALL_HANDLER_NS: Custom = "smp_call_handler_ns",
    /// The handler time that ran while its CPU was in its own csd_lock_wait (interrupts on):
    /// time the CPU would have spun anyway, but for what ran past its acknowledgement.
    SMP_CALL_HANDLER_IN_WAIT_NS: Custom = "smp_call_handler_in_wait_ns",

    // x86 INVLPGB (arch/x86/invlpgb.rs).
    INVLPGB_OPS: Invlpgb = "invlpgb_ops",
    TLBSYNC: Invlpgb = "tlbsync",

    // Lazy unmap flush (mm/luf.rs): pages whose flush was deferred; flushes at allocation.
    LUF_DEFERRED_PAGES: Luf = "luf_deferred_pages",
    LUF_FLUSHES: Luf = "luf_flushes",

    // Multi-gen LRU (mm/lru_gen.rs).
    /// Aging passes (inc_max_seq); folios sort_folio moved to min_seq + 1 for being dirty or
    /// under writeback (`6.18+mglru` only); flusher wake-ups for dirty folios.
    MGLRU_AGING: Mglru = "mglru_aging",
    MGLRU_DIRTY_BUMPED: Mglru = "mglru_dirty_bumped",
    MGLRU_FLUSHER_WAKEUPS: Mglru = "mglru_flusher_wakeups",
    /// Measurement only (docs/targets-mglru.md): reclaim passes (lru_gen_shrink_lruvec
    /// calls), bumps of a folio already bumped since it was last dirtied (PG_reclaim still
    /// set: the ping-pong), and, summed over the aging passes, the pages in the two oldest
    /// generations that carry PG_workingset or PG_referenced right after inc_max_seq (hot
    /// folios left at the reclaim end), and all pages there.
    MGLRU_PASSES: MglruBreakdown = "reclaim_passes",
    MGLRU_DIRTY_REBUMPED: MglruBreakdown = "dirty_rebumped",
    MGLRU_AGING_HOT_IN_OLDEST: MglruBreakdown = "aging_hot_pages_in_two_oldest_gens",
    MGLRU_AGING_PAGES_IN_OLDEST: MglruBreakdown = "aging_pages_in_two_oldest_gens",

    // Global reclaim: kswapd (mm/kswapd.rs) and direct reclaim (mm/page_alloc.rs).
    KSWAPD_WAKEUPS: Kswapd = "kswapd_wakeups",
    PAGEOUTRUN: Kswapd = "pageoutrun",
    /// kswapd's engine steps, and those it ran lazily on another mm.
    KSWAPD_STEPS: Kswapd = "kswapd_steps",
    KSWAPD_STEPS_LAZY: Kswapd = "kswapd_steps_lazy",
    PGSCAN_KSWAPD: Kswapd = "pgscan_kswapd",
    PGSTEAL_KSWAPD: Kswapd = "pgsteal_kswapd",
    /// The node's pgscan_direct / pgsteal_direct (global direct reclaim, try_to_free_pages;
    /// memcg reclaim is not counted). /proc/vmstat's PGSCAN_DIRECT above is not counted by
    /// the model (always 0): kept apart so that documents stay as they were.
    PGSCAN_DIRECT_NODE: Kswapd = "pgscan_direct",
    PGSTEAL_DIRECT_NODE: Kswapd = "pgsteal_direct",
    ALLOCSTALL: Kswapd = "allocstall",
    /// kswapd's CPU time and time awake; reported in seconds.
    KSWAPD_CPU_NS: Custom = "kswapd_cpu_ns",
    KSWAPD_AWAKE_NS: Custom = "kswapd_awake_ns",

    // Writeback (mm/page_writeback.rs): page-cache pages written back, dirtied, and rotated
    // by end of writeback (node_stat_item NR_WRITTEN, NR_DIRTIED; PGROTATED).
    NR_WRITTEN: Vmstat = "nr_written",
    NR_DIRTIED: Vmstat = "nr_dirtied",
    PGROTATED: Vmstat = "pgrotated",
    /// Flusher runs by reason (wb_reason: WB_REASON_VMSCAN, _BACKGROUND, _PERIODIC).
    WB_RUNS_VMSCAN: FlusherRuns = "vmscan",
    WB_RUNS_BACKGROUND: FlusherRuns = "background",
    WB_RUNS_PERIODIC: FlusherRuns = "periodic",
    /// The flusher thread's engine steps, and those it ran lazily on another mm.
    FLUSHER_STEPS: Flusher = "flusher_steps",
    FLUSHER_STEPS_LAZY: Flusher = "flusher_steps_lazy",
    /// Measurement only: the flusher thread's page_mkclean flushes of an mm whose cpumask
    /// holds another CPU, counted per such CPU by what it was doing when the flush left
    /// (should_flush_tlb reaches only the first): running the mm, lazy on it while idle or
    /// while a kernel thread runs, on init_mm, or on another mm.
    MKCLEAN_TARGETS: FlusherFlushes = "targets",
    MKCLEAN_TARGET_RUNNING_MM: FlusherFlushes = "running_the_mm",
    MKCLEAN_TARGET_LAZY_IDLE: FlusherFlushes = "lazy_idle",
    MKCLEAN_TARGET_LAZY_KTHREAD: FlusherFlushes = "lazy_kthread",
    MKCLEAN_TARGET_INIT_MM: FlusherFlushes = "init_mm",
    MKCLEAN_TARGET_OTHER_MM: FlusherFlushes = "other_mm",
    /// The flusher thread's sleeps for a free request (blk_mq_get_tag); result.rs reports
    /// it when nonzero.
    FLUSHER_REQUEST_WAITS: Custom = "flusher_request_waits",
    /// balance_dirty_pages pauses; cgroup v1 reclaim's folio_wait_writeback calls on a
    /// PG_reclaim folio (shrink_folio_list) and reclaim_throttle(VMSCAN_THROTTLE_WRITEBACK)
    /// calls from shrink_inactive_list, and the sleeps they took.
    DIRTY_PAUSES: DirtyThrottling = "balance_dirty_pages_pauses",
    RECLAIM_WRITEBACK_WAITS: DirtyThrottling = "reclaim_folio_wait_writeback",
    RECLAIM_THROTTLES: DirtyThrottling = "reclaim_throttle_writeback",
    RECLAIM_THROTTLE_SLEEPS: DirtyThrottling = "reclaim_throttle_sleeps",
    /// Time paused in balance_dirty_pages; reported in ms.
    DIRTY_PAUSE_NS: Custom = "dirty_pause_ns",
    /// Measurement only: pages whose writeback started, and those of them reclaim had tagged
    /// PG_reclaim (waiting at the LRU's old end), with the summed time (ns, per page) from
    /// their dirtying to the start of their writeback (reported as means, in ms).
    DIRTY_WAIT_PAGES: MglruBreakdown = "dirty_pages_written",
    RECLAIM_WAIT_PAGES: MglruBreakdown = "reclaim_tagged_written",
    DIRTY_WAIT_NS: Custom = "dirty_wait_ns",
    RECLAIM_WAIT_NS: Custom = "reclaim_wait_ns",
    /// The summed device-read waits; reported in seconds.
    FILE_READ_WAIT_NS: Custom = "file_read_wait_ns",
    /// CPU time of writeback: do_writepages on the writing CPU, the completions (end_io,
    /// ext4's extent conversion) on the disk's interrupt CPU; reported in ms.
    WRITEBACK_SUBMIT_NS: Custom = "writeback_submit_ns",
    WRITEBACK_COMPLETE_NS: Custom = "writeback_complete_ns",

    // Page-cache reads (mm/readahead.rs, mm/filemap.rs).
    /// Page-cache pages filled by zeroing (holes, unwritten blocks) and by device reads.
    FILE_PAGES_ZEROED: FileRead = "file_pages_zeroed",
    FILE_PAGES_READ_FROM_DEVICE: FileRead = "file_pages_read_from_device",
    /// Device requests those reads made (a run of adjacent folios in one pass is one).
    FILE_READ_REQUESTS: FileRead = "file_read_requests",
    /// Readahead windows cut short because a folio's __GFP_NORETRY charge failed; pages
    /// fault-around mapped (filemap_map_pages), the faulting ones included.
    READAHEAD_CHARGE_FAILURES: ExtraNonzero = "readahead_charge_failures",
    /// Page-cache readahead charges whose reclaim slept in reclaim_throttle and went on after
    /// the sleep (try_charge_memcg with __GFP_NORETRY still reclaims, and may sleep, first).
    READAHEAD_CHARGE_THROTTLED: ExtraNonzero = "readahead_charge_throttled",
    FAULT_AROUND_MAPPED: ExtraNonzero = "fault_around_pages",
    /// Page-cache pages whose buffer heads reclaim freed (filemap_release_folio).
    BUFFERS_RELEASED: ExtraNonzero = "buffer_head_pages_released",
    /// page_cache_async_ra windows started from a fault (tracefs readahead:page_cache_async_ra
    /// counts the same on the host), and of those the hits on a dirty folio reclaim had
    /// tagged PG_reclaim, which is the PG_readahead bit.
    READAHEAD_ASYNC_WINDOWS: ExtraNonzero = "readahead_async_windows",
    READAHEAD_ON_RECLAIM_TAG: ExtraNonzero = "readahead_on_reclaim_tag",
    /// Pages brought in by readahead, the faulting pages included.
    READAHEAD_PAGES_READ: Kswapd = "readahead_pages_read",

    // The block swap device (mm/page_io.rs, mm/swap_state.rs).
    /// Readahead pages read (SWAP_RA) and faults that found one (SWAP_RA_HIT); read and
    /// write requests (bios).
    SWAP_RA: VmstatBlockSwap = "swap_ra",
    SWAP_RA_HIT: VmstatBlockSwap = "swap_ra_hit",
    SWAP_READ_REQUESTS: SwapBlock = "read_requests",
    SWAP_WRITE_REQUESTS: SwapBlock = "write_requests",
    /// Requests the plugs dispatched to the device for those bios (one per run of adjacent
    /// slots), reads and writes.
    SWAP_SUBMIT_REQUESTS: SwapBlock = "device_requests",
    /// Pages whose swap write completed.
    SWAP_WRITES_COMPLETED: SwapBlock = "writes_completed",
    /// Faulting tasks put to sleep on a read (their own, or a readahead still in flight) and
    /// the summed sleep (ns, reported in ms).
    SWAPIN_SLEEPS: SwapBlock = "swapin_sleeps",
    SWAPIN_SLEEPS_ON_READAHEAD: SwapBlock = "swapin_sleeps_on_readahead",
    SWAPIN_SLEEP_NS: Custom = "swapin_sleep_ns",
    /// CPU time the completions took on their interrupt's CPU (ns, reported in ms):
    /// `swap_complete_page` per page completed.
    SWAP_COMPLETE_NS: Custom = "swap_complete_ns",

    // The scheduler (sched/): task migrations by cause (try_to_wake_up's placement, periodic
    // and new-idle load balancing, active balancing).
    MIGRATIONS_WAKEUP: MigrationsByCause = "wakeup",
    MIGRATIONS_PERIODIC_BALANCE: MigrationsByCause = "periodic_balance",
    MIGRATIONS_NEWIDLE_BALANCE: MigrationsByCause = "newidle_balance",
    MIGRATIONS_ACTIVE_BALANCE: MigrationsByCause = "active_balance",
    /// Call-function IPIs of remote wake-ups (ttwu_queue_wakelist), part of the CAL count.
    WAKELIST_IPIS: ExtraNonzero = "wakelist_ipis",
    /// Context switches from a running workload task to a system workqueue kworker on its CPU
    /// (the kworker preempted it: wake-up preemption, a tick or a pick).
    KWORKER_PREEMPTIONS: ExtraNonzero = "kworker_preemptions",
    /// x86: switches to the idle task or a kernel thread that left a user mm loaded, lazy
    /// (enter_lazy_tlb), and those of them a flush call reached inside __schedule's
    /// interrupts-off section, so that flush_tlb_func took the CPU to init_mm.
    LAZY_TLB_SWITCHES: ExtraNonzero = "lazy_tlb_switches",
    LAZY_TLB_SWITCHES_TO_INIT_MM: ExtraNonzero = "lazy_tlb_switches_to_init_mm",

    // The system workqueue (workqueue.rs) and vmpressure (mm/vmpressure.rs).
    /// Work items queued (a schedule_work that found the item not pending).
    WORKQUEUE_ITEMS: ExtraNonzero = "workqueue_items_queued",
    /// Work items run (process_one_work).
    WORKQUEUE_RUNS: ExtraNonzero = "workqueue_items_run",
    /// vmpressure_work_fn runs that took a window's sums (and signalled the levels).
    VMPRESSURE_EVENTS: ExtraNonzero = "vmpressure_events",

    // kblockd (kblockd.rs).
    /// Asynchronous runs of a hardware queue queued (not already pending).
    KBLOCKD_QUEUED: ExtraNonzero = "kblockd_runs_queued",
    /// blk_mq_run_work_fn runs (pending runs merged).
    KBLOCKD_RUNS: ExtraNonzero = "kblockd_runs",
    /// Swap write requests that waited on a stopped queue (a full virtqueue) for kblockd.
    SWAP_WRITE_REQUESTS_HELD: ExtraNonzero = "swap_write_requests_held",

    // Softirqs (softirq.rs).
    /// Completions and timers raised inside a round that had set need_resched: left to
    /// ksoftirqd.
    SOFTIRQ_LEFT_TO_KSOFTIRQD: ExtraNonzero = "softirqs_left_to_ksoftirqd",
    /// Ticks inside the rest of such a round: their softirqs left to ksoftirqd.
    SOFTIRQ_TICKS_LEFT_TO_KSOFTIRQD: ExtraNonzero = "softirq_ticks_left_to_ksoftirqd",
    /// ksoftirqd wake-ups (wakeup_softirqd on a sleeping ksoftirqd).
    KSOFTIRQD_WAKEUPS: ExtraNonzero = "ksoftirqd_wakeups",
    /// ksoftirqd runs (a wake-up's, or more work found after one).
    KSOFTIRQD_RUNS: ExtraNonzero = "ksoftirqd_runs",
    /// Tasks woken from ksoftirqd (their completion's softirq was left to it).
    KSOFTIRQD_TASK_WAKEUPS: ExtraNonzero = "ksoftirqd_task_wakeups",
}
