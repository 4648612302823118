//! Swap-in from a block device through the swap cache (mm/swap_state.c, and do_swap_page's
//! path for a device without SWP_SYNCHRONOUS_IO in mm/memory.c).
//!
//! A fault on a swap entry with no folio in the swap cache is a major fault: swapin_readahead
//! → swap_vma_readahead (a non-rotational device: swap_use_vma_readahead) reads the swap
//! entries of a window around the faulting address (swap_vma_ra_win, sized by
//! __swapin_nr_pages from the VMA's last fault and readahead hits, at most 2^page_cluster
//! pages, within the VMA and the faulting address's PMD) into new swap-cache folios, one bio
//! for all (swap_read_submit), the neighbours tagged PG_readahead (SWAP_RA). While a
//! rotational swap device is on (nr_rotate_swap), swap_cluster_readahead reads instead the
//! slots of the 2^n-aligned block around the faulting entry's slot (n from swapin_nr_pages's
//! device-wide hits and previous slot), whichever pages they hold: with the device's one
//! allocation cursor these are often another task's pages (mm/swapfile.rs). The faulting task
//! sleeps until its folio's read completes (folio_lock_or_retry), woken by the completion.
//! The folio stays in the swap cache: a read fault keeps the slot (unless vm_swap_full), a
//! write fault frees it (should_try_to_free_swap, mm/memory.rs map_swapped_in).
//!
//! A fault that finds its folio in the swap cache (swap_cache_get_folio) is a minor fault:
//! swap_update_readahead counts a hit on a PG_readahead folio (SWAP_RA_HIT, the VMA's hits,
//! or the device's, that grow the next window), and a read still in flight puts the task to sleep until it
//! completes.
//!
//! Simplified: a readahead folio is charged without the memcg OOM path (try_charge_noretry:
//! readahead stops at the first folio that does not fit after reclaim); pswpin counts a read
//! when it is submitted, not when it completes; every window is read by one request (the
//! block layer merges the bios of adjacent slots under the plug; a VMA window's slots and a
//! cluster window with holes would take several).

use crate::cputime::Spent;
use crate::kernel::{CpuId, Kernel, MmId};
use crate::mm::folio::{pg, Pfn};
use crate::mm::pgtable::*;
use crate::mm::swap::{VmaRa, SWAP_RA_ORDER_CEILING};
use crate::mm::vmstat::VmEventItem::*;

/// SWAP_RA_HITS_MAX (SWAP_RA_HITS_MASK with PAGE_SHIFT 12).
const SWAP_RA_HITS_MAX: u64 = 63;
/// PMD_SIZE in pages.
const PMD_PAGES: u64 = 512;

/// __swapin_nr_pages: the readahead window after a fault at `offset` whose previous fault was
/// at `prev_offset`, with `hits` readahead hits since and the previous window `prev_win`.
pub fn swapin_nr_pages(
    prev_offset: u64,
    offset: u64,
    hits: u64,
    max_pages: u64,
    prev_win: u64,
) -> u64 {
    let mut pages = hits + 2;
    if pages == 2 {
        // No hits to judge by: read ahead only after an adjacent fault.
        if offset != prev_offset.wrapping_add(1) && offset != prev_offset.wrapping_sub(1) {
            pages = 1;
        }
    } else {
        pages = pages.next_power_of_two().max(4);
    }
    // Don't shrink readahead too fast.
    pages.min(max_pages).max(prev_win / 2)
}

impl Kernel {
    /// swap_vma_ra_win: the window [start, end) of pages read for a fault at `vp` of `mm`
    /// (one page when readahead is off or finds no pattern); updates the VMA's readahead
    /// state (the fault's address, the window, hits reset).
    fn swap_vma_ra_win(&mut self, mm: MmId, vp: u64) -> (u64, u64) {
        let len = self.mms[mm].ptes.len() as u64;
        let b = self.swap.block.as_mut().expect("a block swap device");
        let cluster = b.cfg.map_or(3, |c| c.page_cluster);
        let max_win = 1u64 << cluster.min(SWAP_RA_ORDER_CEILING);
        if max_win == 1 {
            return (vp, vp + 1);
        }
        if b.vma_ra.len() <= mm {
            b.vma_ra.resize(mm + 1, VmaRa::default());
        }
        let prev = b.vma_ra[mm];
        let win = swapin_nr_pages(prev.addr, vp, prev.hits, max_win, prev.win);
        b.vma_ra[mm] = VmaRa {
            addr: vp,
            win,
            hits: 0,
        };
        if win == 1 {
            return (vp, vp + 1);
        }
        let left = if vp == prev.addr.wrapping_add(1) {
            vp as i64
        } else if prev.addr == vp + 1 {
            vp as i64 - win as i64 + 1
        } else {
            vp as i64 - ((win as i64 - 1) / 2)
        };
        let right = left + win as i64;
        let pmd = vp & !(PMD_PAGES - 1);
        let start = (left.max(0) as u64).max(pmd);
        let end = (right.max(0) as u64).min(len).min(pmd + PMD_PAGES);
        (start, end)
    }

    /// swap_cluster_readahead's window for a fault on `vp` of `mm` (a rotational device): the
    /// pages in the slots of the page-cluster-aligned block around its slot, whoever's they
    /// are (swapin_nr_pages sizes the block from the device-wide readahead hits and the
    /// previous fault's slot); the faulting page itself is left out. Also how many of them lie
    /// before its slot. None when no window is read (swapin_nr_pages gives one page).
    fn swap_cluster_ra_win(&mut self, mm: MmId, vp: u64) -> Option<(Vec<(MmId, u64)>, usize)> {
        let b = self.swap.block.as_mut().expect("a block swap device");
        let cluster = b.cfg.map_or(3, |c| c.page_cluster);
        let map = b.map.as_ref().expect("a block device's slot map");
        let off = map.slot_of(mm, vp).map(u64::from)?;
        let max_pages = 1u64 << cluster.min(31);
        if max_pages <= 1 {
            return None;
        }
        let ra = &mut b.cluster_ra;
        let hits = std::mem::take(&mut ra.hits);
        let pages = swapin_nr_pages(ra.prev_offset, off, hits, max_pages, ra.last_pages);
        if hits == 0 {
            ra.prev_offset = off;
        }
        ra.last_pages = pages;
        let mask = pages - 1;
        if mask == 0 {
            return None;
        }
        // The first slot is the swap header.
        let start = (off & !mask).max(1);
        let end = (off | mask).min(u64::from(map.max()) - 1);
        let owned = |r: std::ops::Range<u64>| r.filter_map(|s| map.owner(s as u32));
        let mut pages: Vec<(MmId, u64)> = owned(start..off).collect();
        let before = pages.len();
        pages.extend(owned(off + 1..end + 1));
        Some((pages, before))
    }

    /// do_swap_page → swapin_readahead for a swap entry at `vp` of `mm` that has no folio in
    /// the swap cache, `pfn` being the faulting page's new folio (allocated and charged) and
    /// `pte` its swap entry. Reads the readahead window in one request and puts the task to
    /// sleep until the read completes; maps the page (the task runs on it after the sleep).
    pub(crate) fn swapin_readahead(
        &mut self,
        cpu: CpuId,
        mm: MmId,
        vp: u64,
        write: bool,
        pfn: Pfn,
        pte: Pte,
    ) {
        self.charge_parts(
            cpu,
            &[
                (self.cost.alloc_anon_folio, Spent::AllocFolio),
                (self.cost.do_swap_page, Spent::DoSwapPage),
            ],
        );
        // The window's neighbours in slot (or address) order, how many of them come before the
        // faulting entry, and whether a window was read at all (more than the one page).
        let (neighbours, before, window) = if self.swap.cluster_readahead() {
            self.swap_cluster_ra_win(mm, vp)
                .map_or((Vec::new(), 0, false), |(n, b)| (n, b, true))
        } else {
            let (start, end) = self.swap_vma_ra_win(mm, vp);
            let n = (start..end).filter(|&p| p != vp).map(|p| (mm, p)).collect();
            (n, vp.saturating_sub(start) as usize, end - start > 1)
        };
        let mut folios = vec![pfn];
        // The folios in the order the window's loop allocates them (it reads the faulting
        // entry in its place), for the lru_add batch.
        let mut lru_order = Vec::with_capacity(neighbours.len() + 1);
        let mut placed = false;
        self.swap_cache_add(mm, vp, pfn, pte);
        for (i, (m, p)) in neighbours.into_iter().enumerate() {
            if i == before {
                lru_order.push(pfn);
                placed = true;
            }
            let e = self.mms[m].ptes[p as usize];
            if !is_swap_pte(e) || e & PTE_SWPCACHE != 0 {
                continue;
            }
            // __swap_cache_alloc_folio for a neighbour; its charge may reclaim.
            if !self.prepare_alloc_pages(cpu, 1) || !self.try_charge_noretry(cpu, 1) {
                break;
            }
            let ra = self
                .folios
                .alloc(pg::ANON | pg::SWAPBACKED, m as u32, p as u32);
            self.luf_flush_on_alloc(cpu, ra);
            if self.mms[m].ptes[p as usize] != e {
                // Another thread faulted it in while this one reclaimed for the charge.
                self.memcg.uncharge(1);
                self.oracle_discard(ra);
                self.folios.free(ra);
                continue;
            }
            self.charge_parts(
                cpu,
                &[
                    (self.cost.alloc_anon_folio, Spent::AllocFolio),
                    (self.cost.add_to_swap, Spent::AddToSwap),
                ],
            );
            self.swap_cache_add(m, p, ra, e);
            let b = self.swap.block.as_mut().expect("a block swap device");
            b.readahead.insert((m, p));
            self.vmstat.count_vm_event(SWAP_RA);
            folios.push(ra);
            lru_order.push(ra);
        }
        if !placed {
            lru_order.push(pfn);
        }
        // folio_add_lru through this CPU's lru_add batch in the loop's order; a window that was
        // read goes on the LRU at once (swap_*_readahead's lru_add_drain after the loop), a
        // lone page waits in the batch. The reads keep the folios locked, so reclaim skips
        // them until the bio completes.
        for f in lru_order {
            self.lru_add_fault(cpu, f);
        }
        if window {
            self.lru_add_drain(cpu);
        }
        self.vmstat.count_vm_events(PSWPIN, folios.len() as u64);
        let read = self.swap_read_submit(cpu, &folios);
        self.swap_read_wait(cpu, read, false);
        if self.mms[mm].ptes[vp as usize] == swp_entry_swapcache(pfn) {
            // (Unless another thread of the mm mapped it while this one reclaimed.)
            self.map_swapped_in(mm, vp, pfn, write);
        }
    }

    /// Add a new folio for the swap entry `pte` at `vp` of `mm` to the swap cache (its PTE
    /// now finds it there), with the workingset refault check of its shadow.
    fn swap_cache_add(&mut self, mm: MmId, vp: u64, pfn: Pfn, pte: Pte) {
        self.folios.get_mut(pfn).set(pg::SWAPCACHE);
        self.mms[mm].ptes[vp as usize] = swp_entry_swapcache(pfn);
        self.workingset_refault(pfn, pte & PTE_LOW_MASK);
        if let Some(b) = self.swap.block.as_mut() {
            // A PG_readahead mark left by a folio reclaim freed unread.
            b.readahead.remove(&(mm, vp));
        }
    }

    /// do_swap_page finding `pfn` in the swap cache for `vp` of `mm`: swap_update_readahead
    /// (a PG_readahead folio counts a hit), then folio_lock_or_retry sleeps while its read is
    /// in flight.
    pub(crate) fn swap_cache_hit(&mut self, cpu: CpuId, mm: MmId, vp: u64, pfn: Pfn) {
        let now = self.cpus[cpu].clock;
        let cluster_ra = self.swap.cluster_readahead();
        let b = self.swap.block.as_mut().expect("a block swap device");
        let readahead = b.readahead.remove(&(mm, vp));
        if readahead {
            self.vmstat.count_vm_event(SWAP_RA_HIT);
        }
        if cluster_ra {
            // swap_update_readahead without VMA readahead: the hit is the device's.
            b.cluster_ra.hits += u64::from(readahead);
        } else {
            if b.vma_ra.len() <= mm {
                b.vma_ra.resize(mm + 1, VmaRa::default());
            }
            let v = &mut b.vma_ra[mm];
            v.addr = vp;
            if readahead {
                v.hits = (v.hits + 1).min(SWAP_RA_HITS_MAX);
            }
        }
        if let Some(read) = self.swap.read_in_flight(pfn, now) {
            self.swap_read_wait(cpu, read, true);
        }
    }

    /// exit_mmap: the readahead state of `mm` goes with it.
    pub(crate) fn swap_exit_mm(&mut self, mm: MmId) {
        if let Some(b) = self.swap.block.as_mut() {
            b.readahead.retain(|&(m, _)| m != mm);
            if let Some(v) = b.vma_ra.get_mut(mm) {
                *v = VmaRa::default();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::swapin_nr_pages;

    #[test]
    fn readahead_window_grows_with_hits_and_shrinks_slowly() {
        // No hits: one page unless the fault is next to the previous one.
        assert_eq!(swapin_nr_pages(100, 200, 0, 8, 0), 1);
        assert_eq!(swapin_nr_pages(100, 101, 0, 8, 0), 2);
        assert_eq!(swapin_nr_pages(100, 99, 0, 8, 0), 2);
        // Hits: hits + 2 rounded up to a power of two, at least 4, at most max_pages.
        assert_eq!(swapin_nr_pages(0, 500, 1, 8, 0), 4);
        assert_eq!(swapin_nr_pages(0, 500, 3, 8, 0), 8);
        assert_eq!(swapin_nr_pages(0, 500, 40, 8, 0), 8);
        // The window halves at most per fault.
        assert_eq!(swapin_nr_pages(100, 300, 0, 8, 8), 4);
    }
}
