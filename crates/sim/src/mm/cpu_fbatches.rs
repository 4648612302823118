//! The per-CPU lru_add folio batch (mm/swap.c: `cpu_fbatches.lru_add`).
//!
//! folio_add_lru does not put a new folio on its list: it queues it in this CPU's folio_batch
//! (PAGEVEC_SIZE, 31 folios), and folio_batch_move_lru puts the whole batch on the lists under
//! one lru_lock hold when it fills, when a large folio joins it (folio_may_be_lru_cached), or
//! when something drains it (lru_add_drain: reclaim before it isolates, swap readahead after
//! its window). Until then the folio is not on the LRU (no PG_lru): reclaim cannot isolate it,
//! and the LRU's order is the order of the drains, so each CPU's new folios reach the list in
//! runs of up to 31. That order is what reclaim later takes from the tail and what a block swap
//! device's one allocation cursor lays out as slots (mm/swapfile.rs), so swap readahead
//! (mm/swap_state.rs) reads a run of one task's pages where a per-fault order would interleave
//! the CPUs' tasks page by page.
//!
//! Simplified: folio_mark_accessed's `__lru_cache_activate_folio` looks for the folio only in
//! the local CPU's batch; the model finds it in any CPU's (the callers here run on the CPU that
//! added it). The zap of a batched folio marks it an orphan (as for an isolated one), and the
//! drain frees it: the batch's reference is the last.

use crate::cputime::Spent;
use crate::kernel::{CpuId, Kernel};
use crate::mm::folio::{Pfn, LRU_FBATCH, LRU_NONE};

/// PAGEVEC_SIZE (include/linux/pagevec.h).
pub const FOLIO_BATCH_SIZE: usize = 31;

impl Kernel {
    /// folio_add_lru: queue a new folio in `cpu`'s lru_add batch; move the batch to the lists
    /// when it is full or the folio is large.
    pub(crate) fn folio_add_lru(&mut self, cpu: CpuId, pfn: Pfn) {
        let f = self.folios.get_mut(pfn);
        debug_assert_eq!(f.lru, LRU_NONE, "folio {pfn} already on a list or batch");
        f.lru = LRU_FBATCH;
        let large = f.order > 0;
        let b = &mut self.cpu_fbatches[cpu];
        b.push(pfn);
        if large || b.len() >= FOLIO_BATCH_SIZE {
            self.folio_batch_move_lru(cpu);
        }
    }

    /// lru_add_drain (lru_add_drain_cpu's lru_add part): put this CPU's queued folios on their
    /// lists now.
    pub fn lru_add_drain(&mut self, cpu: CpuId) {
        if !self.cpu_fbatches[cpu].is_empty() {
            self.folio_batch_move_lru(cpu);
        }
    }

    /// folio_batch_move_lru(lru_add): the batch's folios go on their lists in the order they
    /// were queued, under one lru_lock hold; a folio zapped meanwhile is freed instead
    /// (the batch held the last reference).
    fn folio_batch_move_lru(&mut self, cpu: CpuId) {
        let batch = std::mem::take(&mut self.cpu_fbatches[cpu]);
        let n = batch.len() as u64;
        for &pfn in &batch {
            self.folios.get_mut(pfn).lru = LRU_NONE;
            if self.put_orphan(pfn) {
                continue;
            }
            self.lruvec.add(&mut self.folios, pfn);
        }
        let mut batch = batch;
        batch.clear();
        self.cpu_fbatches[cpu] = batch;
        self.lru_lock_irq_section(cpu, n * self.cost.lru_lock_add_per_folio, Spent::LruAdd);
    }

    /// Whether `pfn` waits in a CPU's lru_add batch (not yet on the LRU).
    pub(crate) fn folio_in_lru_add_batch(&self, pfn: Pfn) -> bool {
        self.folios.get(pfn).lru == LRU_FBATCH
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Policy, SimConfig};
    use crate::mm::folio::{pg, LRU_INACTIVE_ANON};

    fn kernel() -> Kernel {
        Kernel::new(
            SimConfig::default(),
            Policy::linux_6_18(),
            2,
            1 << 20,
            0,
            60,
            1,
        )
    }

    #[test]
    fn folios_reach_the_list_in_runs_of_a_batch_per_cpu() {
        let mut k = kernel();
        // Two CPUs add folios alternately: the list gets each CPU's batch as one run.
        let mut added = [Vec::new(), Vec::new()];
        for i in 0..61u32 {
            let cpu = (i % 2) as usize;
            let pfn = k.folios.alloc(pg::ANON | pg::SWAPBACKED, cpu as u32, i);
            k.folio_add_lru(cpu, pfn);
            added[cpu].push(pfn);
        }
        assert_eq!(
            k.lruvec.size(LRU_INACTIVE_ANON),
            31,
            "only CPU 0's batch filled"
        );
        assert!(k.folio_in_lru_add_batch(added[1][0]));
        assert!(!k.folios.get(added[1][0]).test(pg::LRU));
        k.lru_add_drain(1);
        let list: Vec<Pfn> = k.lruvec.iter(&k.folios, LRU_INACTIVE_ANON).collect();
        // The head is the newest: CPU 1's run, then CPU 0's, each in the order added.
        let mut want: Vec<Pfn> = added[1].iter().rev().copied().collect();
        want.extend(added[0].iter().rev());
        assert_eq!(list, want);
        assert!(k.cpu_fbatches.iter().all(|b| b.is_empty()));
    }

    #[test]
    fn a_large_folio_moves_the_batch_at_once() {
        let mut k = kernel();
        let small = k.folios.alloc(pg::ANON | pg::SWAPBACKED, 0, 0);
        k.folio_add_lru(0, small);
        assert_eq!(k.lruvec.total(), 0);
        let large = k.folios.alloc_order(0, 0, 0, 2);
        k.folio_add_lru(0, large);
        assert!(k.folios.get(small).test(pg::LRU) && k.folios.get(large).test(pg::LRU));
        assert!(k.cpu_fbatches[0].is_empty());
    }

    #[test]
    fn a_zapped_folio_is_freed_by_the_drain() {
        let mut k = kernel();
        let pfn = k.folios.alloc(pg::ANON | pg::SWAPBACKED, 0, 0);
        let _ = k.try_charge(0, 1);
        k.folio_add_lru(0, pfn);
        k.folios.get_mut(pfn).set(pg::ORPHAN);
        let before = k.folios.nr_allocated;
        k.lru_add_drain(0);
        assert_eq!(k.folios.nr_allocated, before - 1);
        assert_eq!(k.lruvec.total(), 0);
    }
}
