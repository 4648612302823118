//! Where a block swap device puts each page (mm/swapfile.c's cluster allocator, order 0), so
//! that swap cluster readahead can read a slot's neighbours by offset (mm/swap_state.rs).
//!
//! The device is split into clusters of SWAPFILE_CLUSTER slots. cluster_alloc_swap_entry
//! continues from a cursor: one per CPU on a non-rotational device (percpu_swap_cluster), one
//! for the whole device on a rotational one (si->global_cluster, serialised by its lock), so
//! on a rotational device the pages that concurrent reclaimers write out interleave slot by
//! slot. alloc_swap_scan_cluster scans forward from the cursor for a free slot; when the
//! cursor's cluster has none left the allocator takes a cluster from nonfull_clusters (those
//! that had slots freed), then free_clusters, then frag_clusters. relocate_cluster files a
//! cluster after each allocation (partly used: frag, full: full, empty: free) and
//! swap_entries_free after each free (empty: free, else nonfull).
//!
//! Not modelled: reclaiming slots held only by the swap cache when the device is half full
//! (cluster_scan_range's need_reclaim, swap_reclaim_full_clusters), discard, large orders.

use crate::kernel::{CpuId, MmId};
use crate::mm::folio::Pfn;
use std::collections::{BTreeMap, VecDeque};

/// SWAPFILE_CLUSTER with CONFIG_THP_SWAP (HPAGE_PMD_NR).
pub const SWAPFILE_CLUSTER: u32 = 512;
/// SWAP_ENTRY_INVALID / a free slot.
const NONE: u32 = u32::MAX;

/// Which list a cluster is on (ci->flags).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum List {
    Free,
    Nonfull,
    Frag,
    Full,
    /// Taken off its list by isolate_lock_cluster while the allocator scans it.
    Isolated,
}

#[derive(Clone, Copy, Debug)]
struct Cluster {
    count: u32,
    list: List,
    /// Bumped at every move, so a list's stale entries (left where the cluster was) are
    /// skipped when popped.
    seq: u32,
}

/// Where swapped-out pages lie on the device (SwapMap::layout).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct SlotLayout {
    /// Pages out (a swap PTE) with a slot.
    pub pages: u64,
    /// Mean length of a run of consecutive slots held by one mm.
    pub mean_run: f64,
    /// Over the aligned blocks of `block` slots that hold such pages: the mean share of the
    /// block's pages that its largest holder has (1.0: one mm per block).
    pub block_majority_share: f64,
    /// Pages out whose next virtual page is out too.
    pub next_page_pairs: u64,
    /// Of those, pairs whose slots are adjacent in that order (slot + 1).
    pub next_page_in_next_slot: u64,
}

/// The slots of one block swap device and who holds each.
#[derive(Debug)]
pub struct SwapMap {
    /// SWP_SOLIDSTATE: per-CPU cursors; otherwise one global cursor.
    solidstate: bool,
    /// si->max: slots on the device (slot 0 is the header).
    max: u32,
    /// swap_map: the page each slot holds, (mm, page); (NONE, NONE) when free.
    owner: Vec<(u32, u32)>,
    clusters: Vec<Cluster>,
    /// Clusters never used yet: they follow the free list's entries in index order.
    virgin: u32,
    free: VecDeque<(u32, u32)>,
    nonfull: VecDeque<(u32, u32)>,
    frag: VecDeque<(u32, u32)>,
    /// The cursor (next[0]) per CPU, or one for the device.
    next: Vec<u32>,
    /// The slot each swapped page holds, per mm (NONE: none).
    slot_of: Vec<Vec<u32>>,
    /// Slots of swap-cache folios whose mm exited while reclaim had them isolated: freed
    /// with the folio.
    orphans: BTreeMap<Pfn, u32>,
}

impl SwapMap {
    /// A device of `pages` slots (`solidstate`: bdev_nonrot) on a machine of `cpus` CPUs.
    pub fn new(pages: u64, solidstate: bool, cpus: usize) -> SwapMap {
        let max = pages.clamp(2, u64::from(u32::MAX - 1)) as u32;
        let nr = max.div_ceil(SWAPFILE_CLUSTER) as usize;
        let mut clusters = vec![
            Cluster {
                count: 0,
                list: List::Free,
                seq: 0,
            };
            nr
        ];
        // setup_clusters: the header slot is bad, so cluster 0 starts partly used (nonfull).
        clusters[0].count = 1;
        clusters[0].list = List::Nonfull;
        SwapMap {
            solidstate,
            max,
            owner: vec![(0, 0)],
            clusters,
            virgin: 1,
            free: VecDeque::new(),
            nonfull: VecDeque::from([(0, 0)]),
            frag: VecDeque::new(),
            next: vec![NONE; if solidstate { cpus.max(1) } else { 1 }],
            slot_of: Vec::new(),
            orphans: BTreeMap::new(),
        }
    }

    /// The slot `vp` of `mm` holds, if any.
    pub fn slot_of(&self, mm: MmId, vp: u64) -> Option<u32> {
        let s = *self.slot_of.get(mm)?.get(vp as usize)?;
        (s != NONE).then_some(s)
    }

    /// How the pages that `swapped` says are out (a swap PTE: what /proc/PID/pagemap shows
    /// as swapped) lie on the device: `scripts/swap-slot-layout.py` measures the same on the
    /// host. Used slots whose page is mapped again (a read fault keeps the slot) are left out.
    pub fn layout(&self, block: u32, swapped: impl Fn(MmId, u64) -> bool) -> SlotLayout {
        let mut l = SlotLayout::default();
        let mut prev: Option<(u32, MmId)> = None;
        let mut runs = 0u64;
        let (mut blk, mut counts): (u32, Vec<(MmId, u64)>) = (u32::MAX, Vec::new());
        let mut shares = (0.0f64, 0u64);
        let mut close = |counts: &mut Vec<(MmId, u64)>| {
            let used: u64 = counts.iter().map(|c| c.1).sum();
            if used > 0 {
                let top = counts.iter().map(|c| c.1).max().unwrap_or(0);
                shares.0 += top as f64 / used as f64;
                shares.1 += 1;
            }
            counts.clear();
        };
        for slot in 1..self.owner.len() as u32 {
            let Some((mm, vp)) = self.owner(slot).filter(|&(m, p)| swapped(m, p)) else {
                continue;
            };
            l.pages += 1;
            if prev != Some((slot.wrapping_sub(1), mm)) {
                runs += 1;
            }
            prev = Some((slot, mm));
            if slot / block != blk {
                close(&mut counts);
                blk = slot / block;
            }
            match counts.iter_mut().find(|c| c.0 == mm) {
                Some(c) => c.1 += 1,
                None => counts.push((mm, 1)),
            }
            if let Some(next) = self.slot_of(mm, vp + 1).filter(|_| swapped(mm, vp + 1)) {
                l.next_page_pairs += 1;
                if next == slot + 1 {
                    l.next_page_in_next_slot += 1;
                }
            }
        }
        close(&mut counts);
        l.mean_run = if runs > 0 {
            l.pages as f64 / runs as f64
        } else {
            0.0
        };
        l.block_majority_share = if shares.1 > 0 {
            shares.0 / shares.1 as f64
        } else {
            0.0
        };
        l
    }

    /// The page slot `slot` holds, if any.
    pub fn owner(&self, slot: u32) -> Option<(MmId, u64)> {
        match self.owner.get(slot as usize) {
            Some(&(m, p)) if m != NONE && slot != 0 => Some((m as MmId, u64::from(p))),
            _ => None,
        }
    }

    /// Slots on the device (si->max).
    pub fn max(&self) -> u32 {
        self.max
    }

    /// cluster_alloc_swap_entry (order 0) for `vp` of `mm`, reclaimed on `cpu`: the slot, or
    /// None when no cluster has a free one.
    pub fn alloc(&mut self, cpu: CpuId, mm: MmId, vp: u64) -> Option<u32> {
        let c = if self.solidstate { cpu } else { 0 };
        let off = self.next[c];
        let mut found = None;
        if off != NONE {
            let ci = off / SWAPFILE_CLUSTER;
            let from = if self.clusters[ci as usize].count == 0 {
                ci * SWAPFILE_CLUSTER
            } else {
                off
            };
            found = self.scan_cluster(c, ci, from, mm, vp);
        }
        // new_cluster: nonfull_clusters (all of them), free_clusters, one frag cluster.
        while found.is_none() {
            let Some(ci) = self.isolate(List::Nonfull) else {
                break;
            };
            found = self.scan_cluster(c, ci, ci * SWAPFILE_CLUSTER, mm, vp);
        }
        for list in [List::Free, List::Frag] {
            if found.is_none() {
                if let Some(ci) = self.isolate(list) {
                    found = self.scan_cluster(c, ci, ci * SWAPFILE_CLUSTER, mm, vp);
                }
            }
        }
        if let Some(s) = found {
            if self.slot_of.len() <= mm {
                self.slot_of.resize(mm + 1, Vec::new());
            }
            let v = &mut self.slot_of[mm];
            if v.len() <= vp as usize {
                v.resize(vp as usize + 1, NONE);
            }
            debug_assert_eq!(
                v[vp as usize], NONE,
                "mm {mm} page {vp} holds a slot already"
            );
            v[vp as usize] = s;
        }
        found
    }

    /// swap_entries_free for the slot `vp` of `mm` holds (no slot: nothing to free).
    pub fn free(&mut self, mm: MmId, vp: u64) {
        let Some(s) = self.slot_of(mm, vp) else {
            return;
        };
        self.slot_of[mm][vp as usize] = NONE;
        self.free_slot(s);
    }

    /// exit_mmap of `mm` met `pfn`, the swap-cache folio of its page `vp`, isolated by
    /// reclaim: the slot goes with the folio when reclaim frees it.
    pub fn orphan(&mut self, mm: MmId, vp: u64, pfn: Pfn) {
        if let Some(s) = self.slot_of(mm, vp) {
            self.slot_of[mm][vp as usize] = NONE;
            self.orphans.insert(pfn, s);
        }
    }

    /// The orphan `pfn` is freed: its slot with it.
    pub fn free_orphan(&mut self, pfn: Pfn) {
        if let Some(s) = self.orphans.remove(&pfn) {
            self.free_slot(s);
        }
    }

    fn free_slot(&mut self, s: u32) {
        self.owner[s as usize] = (NONE, NONE);
        let ci = s / SWAPFILE_CLUSTER;
        let c = &mut self.clusters[ci as usize];
        c.count -= 1;
        if c.count == 0 {
            self.relocate(ci, List::Free);
        } else if c.list != List::Nonfull {
            // partial_free_cluster.
            self.relocate(ci, List::Nonfull);
        }
    }

    /// alloc_swap_scan_cluster: the first free slot of cluster `ci` from `from` on; sets the
    /// cursor after it (or invalid when the cluster is full or scanned to its end) and files
    /// the cluster (relocate_cluster).
    fn scan_cluster(&mut self, c: usize, ci: u32, from: u32, mm: MmId, vp: u64) -> Option<u32> {
        let start = ci * SWAPFILE_CLUSTER;
        let end = (start + SWAPFILE_CLUSTER).min(self.max);
        let mut found = None;
        let mut next = NONE;
        if self.clusters[ci as usize].count < SWAPFILE_CLUSTER {
            if self.owner.len() < end as usize {
                self.owner.resize(end as usize, (NONE, NONE));
            }
            if let Some(s) = (from..end).find(|&s| self.owner[s as usize].0 == NONE) {
                self.owner[s as usize] = (mm as u32, vp as u32);
                let cl = &mut self.clusters[ci as usize];
                cl.count += 1;
                found = Some(s);
                if cl.count < SWAPFILE_CLUSTER && s + 1 < end {
                    next = s + 1;
                }
            }
        }
        let cl = self.clusters[ci as usize];
        let to = if cl.count == 0 {
            List::Free
        } else if cl.count < end - start {
            List::Frag
        } else {
            List::Full
        };
        if cl.list != to {
            self.relocate(ci, to);
        }
        self.next[c] = next;
        found
    }

    /// move_cluster (or free_cluster): onto the tail of `to`.
    fn relocate(&mut self, ci: u32, to: List) {
        let c = &mut self.clusters[ci as usize];
        c.seq = c.seq.wrapping_add(1);
        c.list = to;
        let e = (ci, c.seq);
        match to {
            List::Free => self.free.push_back(e),
            List::Nonfull => self.nonfull.push_back(e),
            List::Frag => self.frag.push_back(e),
            List::Full | List::Isolated => {}
        }
    }

    /// isolate_lock_cluster: the first cluster on `list`, taken off it.
    fn isolate(&mut self, list: List) -> Option<u32> {
        loop {
            let q = match list {
                List::Free => &mut self.free,
                List::Nonfull => &mut self.nonfull,
                List::Frag => &mut self.frag,
                List::Full | List::Isolated => return None,
            };
            let Some((ci, seq)) = q.pop_front() else {
                break;
            };
            let c = self.clusters[ci as usize];
            if c.seq == seq && c.list == list {
                self.relocate(ci, List::Isolated);
                return Some(ci);
            }
        }
        if list == List::Free && (self.virgin as usize) < self.clusters.len() {
            let ci = self.virgin;
            self.virgin += 1;
            self.relocate(ci, List::Isolated);
            return Some(ci);
        }
        None
    }
}

/// How many requests a plug holding bios for `slots` sends: one per run of adjacent slots
/// (blk_attempt_plug_merge merges a bio into the request it extends).
pub fn plug_requests(slots: &mut [u32]) -> u64 {
    slots.sort_unstable();
    slots.windows(2).filter(|w| w[1] != w[0] + 1).count() as u64 + u64::from(!slots.is_empty())
}

/// The new requests a plug starts for write bios of `slots` when its last request is
/// `last` (its last slot and pages) and a request holds at most `max` pages: a bio whose slot
/// follows the last request's, with room, merges into it (blk_attempt_plug_merge tries the
/// plug's last request only); any other starts a request. `last` is left at the plug's new
/// last request.
pub fn plug_merge(slots: &mut [u32], last: &mut Option<(u32, u32)>, max: u32) -> u64 {
    slots.sort_unstable();
    let mut new = 0;
    for &s in slots.iter() {
        *last = match *last {
            Some((l, n)) if s == l.wrapping_add(1) && n < max => Some((s, n + 1)),
            _ => {
                new += 1;
                Some((s, 1))
            }
        };
    }
    new
}

/// Write requests the I/O scheduler holds until a run of the queue dispatches them: each
/// its last slot, its pages and when its dispatching run comes.
#[derive(Clone, Debug, Default)]
pub struct HeldWrites {
    held: Vec<(u32, u32, u64)>,
}

impl HeldWrites {
    /// Write bios for `slots` inserted at `now`, to be dispatched by the run at `at` if they
    /// start requests: a bio whose slot follows a held request's last, with room in a request
    /// of `max` pages, merges into it (elv_attempt_insert_merge); requests whose run came
    /// by `now` have left. Returns the new requests.
    pub fn insert_merge(&mut self, slots: &mut [u32], max: u32, now: u64, at: u64) -> u64 {
        self.held.retain(|&(_, _, d)| d > now);
        slots.sort_unstable();
        let mut new = 0;
        for &s in slots.iter() {
            match self
                .held
                .iter_mut()
                .find(|(l, n, _)| s == l.wrapping_add(1) && *n < max)
            {
                Some(r) => {
                    r.0 = s;
                    r.1 += 1;
                }
                None => {
                    self.held.push((s, 1, at));
                    new += 1;
                }
            }
        }
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_writes_merge_with_any_held_request_they_extend_until_dispatched() {
        let mut h = HeldWrites::default();
        assert_eq!(h.insert_merge(&mut [10, 11], 8, 0, 100), 1);
        assert_eq!(h.insert_merge(&mut [20], 8, 50, 100), 1);
        // Another CPU's bio continues the first request.
        assert_eq!(h.insert_merge(&mut [12, 21], 8, 60, 100), 0);
        // After the run at 100 they are gone: a new request.
        assert_eq!(h.insert_merge(&mut [13], 8, 101, 200), 1);
    }

    #[test]
    fn a_plug_sends_one_request_per_run_of_adjacent_slots() {
        assert_eq!(plug_requests(&mut []), 0);
        assert_eq!(plug_requests(&mut [7, 5, 6, 8]), 1);
        assert_eq!(plug_requests(&mut [1, 3, 2, 10, 11, 40]), 3);
    }

    #[test]
    fn a_plug_extends_its_last_request_across_bios_up_to_the_request_size() {
        let mut last = None;
        assert_eq!(plug_merge(&mut [3, 1, 2], &mut last, 4), 1);
        assert_eq!(last, Some((3, 3)));
        // The next bio's slots follow: one joins the open request, which is then full.
        assert_eq!(plug_merge(&mut [4, 5], &mut last, 4), 1);
        assert_eq!(last, Some((5, 1)));
        assert_eq!(plug_merge(&mut [9], &mut last, 4), 1);
    }

    #[test]
    fn one_cursor_interleaves_two_reclaimers_and_per_cpu_cursors_do_not() {
        // Rotational: CPU 0 and CPU 1 take turns; their pages sit in alternate slots.
        let mut m = SwapMap::new(4096, false, 2);
        let a = m.alloc(0, 0, 0).unwrap();
        let b = m.alloc(1, 1, 0).unwrap();
        let a2 = m.alloc(0, 0, 1).unwrap();
        assert_eq!((b, a2), (a + 1, a + 2));
        assert_eq!(a, 1, "slot 0 is the header");
        // Solid state: each CPU fills a cluster of its own.
        let mut m = SwapMap::new(4096, true, 2);
        let a = m.alloc(0, 0, 0).unwrap();
        let b = m.alloc(1, 1, 0).unwrap();
        let a2 = m.alloc(0, 0, 1).unwrap();
        assert_eq!(a2, a + 1);
        assert_ne!(a / SWAPFILE_CLUSTER, b / SWAPFILE_CLUSTER);
        assert_eq!(m.owner(b), Some((1, 0)));
        assert_eq!(m.slot_of(0, 1), Some(a2));
    }

    #[test]
    fn the_layout_counts_runs_blocks_and_next_pages_of_pages_out() {
        // Two mms' pages 0..16 taken alternately from one cursor: slots 1, 2, 3, ... hold
        // A0 B0 A1 B1 ...; then A's pages 16..24 in a row.
        let mut m = SwapMap::new(4096, false, 2);
        for vp in 0..16 {
            m.alloc(0, 0, vp).unwrap();
            m.alloc(1, 1, vp).unwrap();
        }
        for vp in 16..24 {
            m.alloc(0, 0, vp).unwrap();
        }
        let l = m.layout(8, |_, _| true);
        assert_eq!(l.pages, 40);
        // 32 runs of one slot, then one run of 8: 40 / 33.
        assert!((l.mean_run - 40.0 / 33.0).abs() < 1e-9, "{l:?}");
        // Blocks 0..3 (slots 1-7, 8-15, 16-23, 24-31) are mixed half and half but for the
        // first's 4:3; slots 32 and 33-40 hold A alone.
        assert!(
            l.block_majority_share > 0.5 && l.block_majority_share < 0.8,
            "{l:?}"
        );
        // A's next pages: 0..15 two slots on, 15 → 16 two on, 16..23 one on.
        assert_eq!((l.next_page_pairs, l.next_page_in_next_slot), (15 + 23, 7));
        // Pages mapped again are left out: only B's.
        let b = m.layout(8, |mm, _| mm == 1);
        assert_eq!(
            (b.pages, b.mean_run, b.block_majority_share),
            (16, 1.0, 1.0)
        );
    }

    #[test]
    fn freed_slots_are_reused_through_the_nonfull_list_once_the_cursor_moves_on() {
        let mut m = SwapMap::new(4 * u64::from(SWAPFILE_CLUSTER), false, 1);
        // Fill cluster 0 (511 slots after the header).
        for p in 0..511 {
            m.alloc(0, 0, p).unwrap();
        }
        // Free one slot in it: cluster 0 goes to the nonfull list.
        m.free(0, 10);
        assert_eq!(m.owner(11), None);
        // The cursor was invalidated when cluster 0 filled up: the next allocation takes the
        // nonfull cluster first, and finds the freed slot.
        assert_eq!(m.alloc(0, 1, 0), Some(11));
        // Then a fresh cluster.
        assert_eq!(m.alloc(0, 1, 1), Some(SWAPFILE_CLUSTER));
        // Emptying a cluster makes it free again (cluster 0 never empties: the header).
        m.free(1, 1);
        assert_eq!(m.clusters[1].count, 0);
        assert_eq!(m.clusters[1].list, List::Free);
        assert_eq!(m.clusters[0].count, SWAPFILE_CLUSTER);
    }
}
