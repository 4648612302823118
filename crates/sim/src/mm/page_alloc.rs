//! The node's free pages and watermarks (mm/page_alloc.c): calculate_min_free_kbytes,
//! __setup_per_zone_wmarks, the watermark checks of get_page_from_freelist and the slow path
//! (wake kswapd below low, reclaim directly below min).
//!
//! One node with one zone: the machine's memory (`machine.memory`) is the zone's managed pages
//! (the kernel's own memory, page tables and per-CPU page lists are not modelled). Free pages
//! are the managed pages no folio holds. Off (`enabled = false`) unless a workload turns global
//! reclaim on; the memcg-limit workloads never reach these watermarks.

use crate::kernel::{CpuId, Kernel};
use crate::mm::memcontrol::MAX_RECLAIM_RETRIES;
use crate::mm::vmscan::SWAP_CLUSTER_MAX;

/// The node (pg_data_t with its one zone).
#[derive(Clone, Debug, Default)]
pub struct Pgdat {
    pub enabled: bool,
    /// zone_managed_pages.
    pub managed: u64,
    pub min_free_kbytes: u64,
    /// _watermark[WMARK_MIN], [WMARK_LOW], [WMARK_HIGH] in pages.
    pub wmark_min: u64,
    pub wmark_low: u64,
    pub wmark_high: u64,
    /// ALLOCSTALL: global direct reclaim entries (try_to_free_pages).
    pub allocstall: u64,
    /// pgscan_direct / pgsteal_direct of global direct reclaim (memcg reclaim is not counted).
    pub pgscan_direct: u64,
    pub pgsteal_direct: u64,
    /// Allocations let through after MAX_RECLAIM_RETRIES direct reclaims without progress
    /// (the kernel would OOM-kill); any is an invariant failure.
    pub forced: u64,
}

/// int_sqrt.
fn int_sqrt(x: u64) -> u64 {
    let mut r = (x as f64).sqrt() as u64;
    while r * r > x {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= x {
        r += 1;
    }
    r
}

impl Pgdat {
    /// A node of `managed` pages. `watermark_scale_factor` 0 selects the rule before 4.6
    /// (low = min + min/4, high = min + min/2); otherwise the gap between the watermarks is
    /// max(min/4, managed * factor / 10000) (__setup_per_zone_wmarks; the default factor is 10).
    pub fn new(managed: u64, watermark_scale_factor: u64) -> Pgdat {
        // calculate_min_free_kbytes: int_sqrt(lowmem_kbytes * 16), clamped to [128, 262144].
        let min_free_kbytes = int_sqrt(managed * 4 * 16).clamp(128, 262_144);
        let min = min_free_kbytes / 4;
        let gap = if watermark_scale_factor == 0 {
            min / 4
        } else {
            (min / 4).max(managed * watermark_scale_factor / 10_000)
        };
        Pgdat {
            enabled: true,
            managed,
            min_free_kbytes,
            wmark_min: min,
            wmark_low: min + gap,
            wmark_high: min + 2 * gap,
            ..Default::default()
        }
    }
}

impl Kernel {
    /// NR_FREE_PAGES of the node.
    pub fn node_free_pages(&self) -> u64 {
        self.pgdat.managed.saturating_sub(self.folios.nr_allocated)
    }

    /// zone_watermark_ok for an allocation of `nr` pages (order 0 when nr = 1): free pages
    /// minus the allocation's extra pages must stay above the mark.
    pub fn zone_watermark_ok(&self, mark: u64, nr: u64) -> bool {
        self.node_free_pages() + 1 > mark + nr
    }

    /// pgdat_balanced for order 0: the zone is at or above its high watermark.
    pub fn pgdat_balanced(&self) -> bool {
        self.node_free_pages() >= self.pgdat.wmark_high
    }

    /// The page allocator's watermark logic before `nr` pages are taken from the node on
    /// `cpu`: get_page_from_freelist at ALLOC_WMARK_LOW; failing that __alloc_pages_slowpath
    /// wakes kswapd, retries at ALLOC_WMARK_MIN and reclaims directly until that passes.
    /// Not modelled: the per-CPU page lists, throttle_direct_reclaim (waiting for kswapd when
    /// free pages fall below half the min watermark), compaction and the OOM killer.
    pub fn prepare_alloc_pages(&mut self, cpu: CpuId, nr: u64) {
        if !self.pgdat.enabled || self.zone_watermark_ok(self.pgdat.wmark_low, nr) {
            return;
        }
        self.wakeup_kswapd(cpu);
        let mut no_progress = 0;
        while !self.zone_watermark_ok(self.pgdat.wmark_min, nr) {
            if self.try_to_free_pages(cpu) > 0 {
                no_progress = 0;
                continue;
            }
            no_progress += 1;
            if no_progress > MAX_RECLAIM_RETRIES {
                self.pgdat.forced += 1;
                self.invariant_fail(format!(
                    "global reclaim made no progress on CPU {cpu}: allocation forced below min"
                ));
                return;
            }
        }
    }

    /// try_to_free_pages: global direct reclaim of SWAP_CLUSTER_MAX pages on the allocating
    /// CPU. The node has one lruvec (the memcg's), so do_try_to_free_pages is the memcg
    /// reclaim loop (priority 12 → 0) with the global counters. Not modelled: global reclaim's
    /// proportional scanning at DEF_PRIORITY and file_is_tiny / cache_trim_mode.
    pub fn try_to_free_pages(&mut self, cpu: CpuId) -> u64 {
        self.pgdat.allocstall += 1;
        let scanned = self.vmstat.pgscan_anon + self.vmstat.pgscan_file;
        let stolen = self.vmstat.pgsteal_anon + self.vmstat.pgsteal_file;
        let r = self.try_to_free_mem_cgroup_pages(cpu, SWAP_CLUSTER_MAX);
        self.pgdat.pgscan_direct += self.vmstat.pgscan_anon + self.vmstat.pgscan_file - scanned;
        self.pgdat.pgsteal_direct += self.vmstat.pgsteal_anon + self.vmstat.pgsteal_file - stolen;
        if r > 0 {
            // shrink_node: a node where reclaim made progress is no longer hopeless for kswapd.
            self.kswapd.failures = 0;
        }
        r
    }
}
