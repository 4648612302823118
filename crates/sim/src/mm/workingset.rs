//! Workingset detection (mm/workingset.c, classic LRU, mainline formula): shadows record the
//! lruvec's nonresident_age at eviction; a refault is "recent" when the distance travelled
//! since is at most the workingset size.

use crate::cputime::Spent;
use crate::kernel::{CpuId, Kernel};
use crate::mm::folio::{
    pg, Pfn, LRU_ACTIVE_ANON, LRU_ACTIVE_FILE, LRU_INACTIVE_ANON, LRU_INACTIVE_FILE,
};
use crate::mm::vmstat::VmEventItem::*;

/// Shadow layout: bit 0 = the folio had PG_workingset, bits 1.. = eviction stamp.
const STAMP_BITS: u32 = 25;
const EVICTION_MASK: u64 = (1 << STAMP_BITS) - 1;

impl Kernel {
    /// workingset_eviction: stamp, then age (the stamp is read before the advance).
    pub fn workingset_eviction(&mut self, pfn: Pfn) -> u32 {
        if self.lruvec.lrugen.enabled {
            return self.lru_gen_eviction(pfn);
        }
        let f = self.folios.get(pfn);
        let ws = f.test(pg::WORKINGSET) as u32;
        let n = f.nr_pages();
        let stamp = (self.lruvec.nonresident_age & EVICTION_MASK) as u32;
        self.lruvec.nonresident_age += n;
        stamp << 1 | ws
    }

    /// workingset_age_nonresident (activations and active putbacks).
    pub fn workingset_age_nonresident(&mut self, nr: u64) {
        self.lruvec.nonresident_age += nr;
    }

    /// A page-cache folio filled over a shadow entry: workingset_refault's CPU time
    /// (`workingset_refault`), then its decision. An anonymous refault's time is inside
    /// `do_swap_page`, whose measured cost covers its whole path.
    pub(crate) fn file_refault(&mut self, cpu: CpuId, pfn: Pfn, shadow: u32) {
        self.charge(cpu, self.cost.workingset_refault, Spent::PageCache);
        self.workingset_refault(pfn, shadow);
    }

    /// workingset_refault: count, and activate the new folio if the refault distance is short.
    pub fn workingset_refault(&mut self, pfn: Pfn, shadow: u32) {
        if self.lruvec.lrugen.enabled {
            self.lru_gen_refault(pfn, shadow);
            return;
        }
        let file = self.folios.get(pfn).is_file_lru();
        let n = self.folios.get(pfn).nr_pages();
        if file {
            self.vmstat.count_vm_events(WORKINGSET_REFAULT_FILE, n);
        } else {
            self.vmstat.count_vm_events(WORKINGSET_REFAULT_ANON, n);
        }
        let stamp = (shadow >> 1) as u64;
        let workingset = shadow & 1 != 0;
        let distance = (self.lruvec.nonresident_age.wrapping_sub(stamp)) & EVICTION_MASK;
        // workingset_test_recent: the workingset size from the memcg's flushed statistics
        // (lruvec_page_state), as of the last periodic flush.
        let state = |lru| self.lruvec_page_state_lru(lru);
        let swap_on = self.swap.total > 0;
        let mut size = state(LRU_ACTIVE_FILE);
        if !file {
            size += state(LRU_INACTIVE_FILE);
        }
        if swap_on {
            size += state(LRU_ACTIVE_ANON);
            if file {
                size += state(LRU_INACTIVE_ANON);
            }
        }
        if distance > size {
            return;
        }
        let f = self.folios.get_mut(pfn);
        f.set(pg::ACTIVE);
        if file {
            self.vmstat.count_vm_events(WORKINGSET_ACTIVATE_FILE, n);
        } else {
            self.vmstat.count_vm_events(WORKINGSET_ACTIVATE_ANON, n);
        }
        self.workingset_age_nonresident(n);
        if workingset {
            self.folios.get_mut(pfn).set(pg::WORKINGSET);
            if file {
                self.vmstat.count_vm_events(WORKINGSET_RESTORE_FILE, n);
            } else {
                self.vmstat.count_vm_events(WORKINGSET_RESTORE_ANON, n);
            }
            self.lru_note_cost(file, n, 0);
        }
    }
}
