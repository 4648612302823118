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
use crate::mm::vmpressure::Vmpr;
use crate::mm::vmscan::{ScanControl, DEF_PRIORITY, SWAP_CLUSTER_MAX};
use crate::mm::vmstat::VmEventItem::*;
use std::collections::BTreeMap;

/// A task's direct reclaim call in progress (do_try_to_free_pages' loop state).
#[derive(Clone, Copy, Debug)]
pub struct DirectReclaim {
    pub priority: i32,
    pub reclaimed: u64,
}

/// The node (pg_data_t with its one zone).
#[derive(Clone, Debug, Default)]
pub struct Pgdat {
    pub enabled: bool,
    /// zone_managed_pages.
    pub managed: u64,
    pub min_free_kbytes: u64,
    /// `_watermark[WMARK_MIN]`, `[WMARK_LOW]`, `[WMARK_HIGH]` in pages.
    pub wmark_min: u64,
    pub wmark_low: u64,
    pub wmark_high: u64,
    /// Allocations let through after MAX_RECLAIM_RETRIES direct reclaims without progress
    /// (the kernel would OOM-kill); any is an invariant failure.
    pub forced: u64,
    /// Direct reclaim calls in progress, by task.
    pub direct: BTreeMap<usize, DirectReclaim>,
    /// Direct reclaim calls in a row that reclaimed nothing, by task.
    pub no_progress: BTreeMap<usize, u32>,
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
    /// wakes kswapd, retries at ALLOC_WMARK_MIN and reclaims directly while that fails.
    ///
    /// Returns false when the allocation must wait: the task is in direct reclaim, which runs
    /// one priority pass (one shrink_node) per engine step, so reclaimers on all CPUs
    /// interleave as they do in the kernel instead of one CPU doing a whole
    /// do_try_to_free_pages call at once (which at priority 0 scans the whole LRU). The fault
    /// is then abandoned and retried in the task's next step (VM_FAULT_RETRY-like).
    /// Not modelled: the per-CPU page lists, throttle_direct_reclaim (waiting for kswapd when
    /// free pages fall below half the min watermark), compaction and the OOM killer.
    pub fn prepare_alloc_pages(&mut self, cpu: CpuId, nr: u64) -> bool {
        if !self.pgdat.enabled || self.zone_watermark_ok(self.pgdat.wmark_low, nr) {
            return true;
        }
        self.wakeup_kswapd(cpu);
        let task = self.cpus[cpu].curr.unwrap_or(usize::MAX);
        if !self.pgdat.direct.contains_key(&task)
            && self.zone_watermark_ok(self.pgdat.wmark_min, nr)
        {
            return true;
        }
        if self.try_to_free_pages_pass(cpu, task) {
            // The call ended: allocate if the min watermark passes now.
            if self.zone_watermark_ok(self.pgdat.wmark_min, nr) {
                return true;
            }
            if self.pgdat.no_progress.get(&task).copied().unwrap_or(0) > MAX_RECLAIM_RETRIES {
                self.pgdat.forced += 1;
                self.pgdat.no_progress.remove(&task);
                self.invariant_fail(format!(
                    "global reclaim made no progress on CPU {cpu}: allocation forced below min"
                ));
                return true;
            }
        }
        false
    }

    /// One pass of try_to_free_pages → do_try_to_free_pages for `task` on `cpu`: global
    /// direct reclaim of SWAP_CLUSTER_MAX pages, priority 12 → 0, one shrink_node per pass.
    /// The node has one lruvec, so shrink_node is the memcg reclaim's. Returns whether the
    /// call ended (target met or priority 0 done). Not modelled: proportional scanning at
    /// DEF_PRIORITY, file_is_tiny / cache_trim_mode, the forced-deactivation retry.
    fn try_to_free_pages_pass(&mut self, cpu: CpuId, task: usize) -> bool {
        let t0 = self.cpus[cpu].clock;
        let st = match self.pgdat.direct.get(&task) {
            Some(s) => *s,
            None => {
                self.vmstat.count_vm_event(ALLOCSTALL);
                self.vmstat.count_vm_event(DIRECT_RECLAIMS);
                DirectReclaim {
                    priority: DEF_PRIORITY,
                    reclaimed: 0,
                }
            }
        };
        let mut sc = ScanControl::new(SWAP_CLUSTER_MAX, st.priority);
        sc.nr_reclaimed = st.reclaimed;
        // do_try_to_free_pages: vmpressure_prio before the priority's pass; global reclaim
        // feeds the root memcg's vmpressure.
        sc.vmpr = Vmpr::Root;
        self.vmpressure_prio(cpu, sc.vmpr, st.priority);
        let (scanned, stolen) = self.shrink_node_counted(cpu, &mut sc);
        self.vmstat.count_vm_events(PGSCAN_DIRECT_NODE, scanned);
        self.vmstat.count_vm_events(PGSTEAL_DIRECT_NODE, stolen);
        if sc.nr_reclaimed > st.reclaimed {
            // shrink_node: a node where reclaim made progress is no longer hopeless for kswapd.
            self.kswapd.failures = 0;
        }
        let done = sc.nr_reclaimed >= sc.nr_to_reclaim || st.priority == 0;
        if done {
            self.pgdat.direct.remove(&task);
            self.snapshot_refaults();
            if !self.writeback_queue.is_empty() {
                self.wakeup_flusher_threads(cpu);
            }
            if sc.nr_reclaimed == 0 {
                *self.pgdat.no_progress.entry(task).or_insert(0) += 1;
            } else {
                self.pgdat.no_progress.remove(&task);
            }
        } else {
            self.pgdat.direct.insert(
                task,
                DirectReclaim {
                    priority: st.priority - 1,
                    reclaimed: sc.nr_reclaimed,
                },
            );
        }
        self.vmstat
            .count_vm_events(RECLAIM_NS, self.cpus[cpu].clock - t0);
        done
    }
}
