//! Reverse mapping (mm/rmap.c): reference checks and unmapping, with the deferred TLB flush
//! (CONFIG_ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH). Every folio here has at most one mapping, found
//! from its (owner, index) — the anon_vma / i_mmap walk of a single VMA.

use crate::arch::x86::tlb::ArchTlbBatch;
use crate::kernel::{Backing, CpuId, Kernel, MmId};
use crate::mm::folio::{pg, Pfn};
use crate::mm::pgtable::*;

/// current->tlb_ubc (struct tlbflush_unmap_batch).
pub struct TlbUbc {
    pub arch: ArchTlbBatch,
    pub flush_required: bool,
    /// A dirty PTE was deferred: a CPU may hold a writable, dirty translation.
    pub writable: bool,
}

impl TlbUbc {
    pub fn new(nr_cpus: usize) -> TlbUbc {
        TlbUbc {
            arch: ArchTlbBatch::new(nr_cpus),
            flush_required: false,
            writable: false,
        }
    }
}

/// TTU_* flags we model.
pub const TTU_BATCH_FLUSH: u32 = 1;

impl Kernel {
    /// The (mm, vpage) mapping a folio, if mapped.
    pub fn folio_mapping_of(&self, pfn: Pfn) -> Option<(MmId, u64)> {
        let f = self.folios.get(pfn);
        if !f.test(pg::MAPPED) {
            return None;
        }
        if f.is_anon() {
            Some((f.owner as MmId, f.index as u64))
        } else {
            // A file folio is mapped by the mm that maps its file.
            let file = f.owner as usize;
            let mm = self
                .mms
                .iter()
                .position(|m| m.backing == Backing::File(file))
                .expect("mapped file folio has an mm");
            Some((mm, f.index as u64))
        }
    }

    /// folio_referenced: the number of VMAs with a young mapping; clears the young bits.
    /// x86 ptep_clear_flush_young only clears the accessed bit: it never flushes the TLB.
    pub fn folio_referenced(&mut self, cpu: CpuId, pfn: Pfn) -> u32 {
        let Some((mm, vp)) = self.folio_mapping_of(pfn) else {
            return 0;
        };
        self.charge(cpu, self.cost.rmap_walk);
        let pte = &mut self.mms[mm].ptes[vp as usize];
        debug_assert!(pte_present(*pte) && pte_pfn(*pte) == pfn);
        if *pte & PTE_YOUNG != 0 {
            *pte &= !PTE_YOUNG;
            1
        } else {
            0
        }
    }

    /// should_defer_flush.
    fn should_defer_flush(&self, cpu: CpuId, mm: MmId, flags: u32) -> bool {
        flags & TTU_BATCH_FLUSH != 0 && self.arch_tlbbatch_should_defer(cpu, mm)
    }

    /// set_tlb_ubc_flush_pending.
    fn set_tlb_ubc_flush_pending(&mut self, ubc: &mut TlbUbc, mm: MmId, pteval: Pte) {
        self.arch_tlbbatch_add_pending(&mut ubc.arch, mm);
        ubc.flush_required = true;
        if pteval & PTE_DIRTY != 0 {
            ubc.writable = true;
        }
    }

    /// try_to_unmap (one VMA, order-0: folio_unmap_pte_batch gives nr = 1). Returns whether
    /// the folio is now unmapped. Anon PTEs become swap entries pointing at the swap cache.
    pub fn try_to_unmap(&mut self, cpu: CpuId, ubc: &mut TlbUbc, pfn: Pfn, flags: u32) -> bool {
        let Some((mm, vp)) = self.folio_mapping_of(pfn) else {
            return true;
        };
        self.charge(cpu, self.cost.rmap_walk);
        // get_and_clear_ptes
        let pteval = self.mms[mm].ptes[vp as usize];
        let anon = self.folios.get(pfn).is_anon();
        self.mms[mm].ptes[vp as usize] = if anon {
            swp_entry_swapcache(pfn)
        } else {
            PTE_NONE
        };
        if self.should_defer_flush(cpu, mm, flags) {
            self.set_tlb_ubc_flush_pending(ubc, mm, pteval);
        } else {
            // flush_tlb_range (tlb-batch off: flush_tlb_page, as before 4.3).
            let freed = self.policy.range_flush_freed_tables && self.policy.tlb_batch;
            self.flush_tlb_mm_range(cpu, mm, vp, vp + 1, freed);
        }
        let f = self.folios.get_mut(pfn);
        if pteval & PTE_DIRTY != 0 {
            f.set(pg::DIRTY);
        }
        f.clear(pg::MAPPED);
        let m = &mut self.mms[mm];
        m.rss -= 1;
        if anon {
            m.swapents += 1;
        }
        true
    }

    /// try_to_unmap_flush: flush everything deferred so far.
    pub fn try_to_unmap_flush(&mut self, cpu: CpuId, ubc: &mut TlbUbc) {
        if !ubc.flush_required {
            return;
        }
        self.arch_tlbbatch_flush(cpu, &mut ubc.arch);
        ubc.flush_required = false;
        ubc.writable = false;
    }

    /// try_to_unmap_flush_dirty: flush only if a dirty PTE was deferred.
    pub fn try_to_unmap_flush_dirty(&mut self, cpu: CpuId, ubc: &mut TlbUbc) {
        if ubc.writable {
            self.try_to_unmap_flush(cpu, ubc);
        }
    }
}
