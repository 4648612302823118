//! Reverse mapping (mm/rmap.c): reference checks and unmapping, with the deferred TLB flush
//! (CONFIG_ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH). Every folio here has at most one mapping, found
//! from its (owner, index) — the anon_vma / i_mmap walk of a single VMA; a large folio's PTEs
//! are those of pages index..index + nr that hold its pfn.

use crate::config::Patch;
use crate::cputime::Spent;
use crate::kernel::{CpuId, Kernel, MmId};
use crate::mm::folio::{pg, Pfn};
use crate::mm::mm_types_task::TlbUbc;
use crate::mm::pgtable::*;
use crate::mm::vmstat::VmEventItem::*;

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
            let mm = self.mm_of_file(file).expect("mapped file folio has an mm");
            Some((mm, f.index as u64))
        }
    }

    /// folio_referenced for the folio's single mapping: 1 if a PTE mapping it was young (the
    /// kernel counts VMAs with a young mapping, not PTEs), else 0; the young bits are cleared.
    ///
    /// folio_referenced_one walks the folio's present PTEs (page_vma_mapped_walk). In 6.18
    /// each PTE is one iteration calling ptep_clear_flush_young_notify; with
    /// `clear-flush-young-ptes` (seed 004) a run of consecutive PTEs of a large folio
    /// (folio_pte_batch) is one iteration calling clear_flush_young_ptes once. The arch
    /// decides the flush: none on x86, a TLBI without DSB on arm64 (per young PTE, or per
    /// contpte block, whose 16 young bits every call clears). Costs: `rmap_walk` covers the
    /// lock, the first iteration and its PTE; each further iteration `pvmw_step`, each
    /// further PTE inside a batched iteration `pte_clear`, each test-and-clear beyond one per
    /// PTE (contpte widening) `young_clear`, and the arch's TLBIs.
    pub fn folio_referenced(&mut self, cpu: CpuId, pfn: Pfn) -> u32 {
        let Some((mm, first)) = self.folio_mapping_of(pfn) else {
            return 0;
        };
        let nr_pages = self.folios.get(pfn).nr_pages();
        self.charge(cpu, self.cost.rmap_walk, Spent::FolioReferenced);
        if self.pmd_mapped(mm, first) {
            self.vmstat.count_vm_event(REFERENCED_STEPS);
            return self.pmdp_clear_flush_young(cpu, mm, first) as u32;
        }
        let batch = self.has(Patch::ClearFlushYoungPtes) && nr_pages > 1;
        let mapped = |k: &Kernel, vp: u64| {
            let pte = k.mms[mm].ptes[vp as usize];
            pte_present(pte) && pte_pfn(pte) == pfn
        };
        let end = first + nr_pages;
        let (mut vp, mut steps, mut young) = (first, 0u64, false);
        while vp < end {
            if !mapped(self, vp) {
                vp += 1;
                continue;
            }
            let mut nr = 1;
            if batch {
                while vp + nr < end && mapped(self, vp + nr) {
                    nr += 1;
                }
            }
            let extra = if steps > 0 { self.cost.pvmw_step } else { 0 };
            self.charge(
                cpu,
                extra + (nr - 1) * self.cost.pte_clear,
                Spent::FolioReferenced,
            );
            steps += 1;
            let (y, tests) = self.clear_flush_young_ptes(cpu, mm, vp, nr);
            self.charge(
                cpu,
                (tests - nr) * self.cost.young_clear,
                Spent::FolioReferenced,
            );
            self.vmstat.count_vm_events(YOUNG_TESTS, tests);
            young |= y;
            vp += nr;
        }
        self.vmstat.count_vm_events(REFERENCED_STEPS, steps);
        young as u32
    }

    /// should_defer_flush.
    fn should_defer_flush(&self, cpu: CpuId, mm: MmId, flags: u32) -> bool {
        flags & TTU_BATCH_FLUSH != 0 && self.arch_tlbbatch_should_defer(cpu, mm)
    }

    /// set_tlb_ubc_flush_pending.
    fn set_tlb_ubc_flush_pending(
        &mut self,
        cpu: CpuId,
        ubc: &mut TlbUbc,
        mm: MmId,
        pteval: Pte,
        start: u64,
        end: u64,
    ) {
        self.arch_tlbbatch_add_pending(cpu, &mut ubc.arch, mm, start, end);
        ubc.flush_required = true;
        if pteval & PTE_DIRTY != 0 {
            ubc.writable = true;
        }
    }

    /// try_to_unmap (one VMA). Returns whether the folio is now unmapped. Anon PTEs become
    /// swap entries pointing at the swap cache.
    ///
    /// try_to_unmap_one walks the folio's present PTEs (page_vma_mapped_walk); each iteration
    /// is one step: folio_unmap_pte_batch gives its `nr`, get_and_clear_ptes clears them, one
    /// set_tlb_ubc_flush_pending (or flush_tlb_range) and one rmap removal cover them. In 6.18
    /// `nr` is 1 for file folios; with `file-large-folio-unmap` (seed 001) a file large folio's
    /// run of consecutive present PTEs is one step (bounded by pmd_addr_end and the VMA end; an
    /// aligned folio of order <= 9 never crosses either here). Cost: `rmap_walk` covers the
    /// lock, the first step and its PTE; each further step `ttu_step`, each further PTE
    /// within a step `pte_clear`.
    pub fn try_to_unmap(&mut self, cpu: CpuId, ubc: &mut TlbUbc, pfn: Pfn, flags: u32) -> bool {
        let Some((mm, first)) = self.folio_mapping_of(pfn) else {
            return true;
        };
        let f = *self.folios.get(pfn);
        let anon = f.is_anon();
        let nr_pages = f.nr_pages();
        let batch = self.has(Patch::FileLargeFolioUnmap) && !f.test(pg::SWAPBACKED) && nr_pages > 1;
        self.charge(cpu, self.cost.rmap_walk, Spent::TryToUnmap);
        if self.pmd_mapped(mm, first) {
            // TTU_SPLIT_HUGE_PMD: a file PMD is zapped with its own flush (huge_memory.rs).
            self.zap_huge_pmd(cpu, mm, first, pfn);
            self.vmstat.count_vm_event(TTU_STEPS);
            self.vmstat.count_vm_events(TTU_PTES, nr_pages);
            return true;
        }
        let mut steps = 0u64;
        let mut dirty = false;
        let mut vp = first;
        let end = first + nr_pages;
        let luf = self.luf_may_defer(mm, pfn, first, end);
        while vp < end {
            let pte = self.mms[mm].ptes[vp as usize];
            if !(pte_present(pte) && pte_pfn(pte) == pfn) {
                vp += 1;
                continue;
            }
            // folio_unmap_pte_batch
            let mut nr = 1;
            if batch {
                while vp + nr < end {
                    let next = self.mms[mm].ptes[(vp + nr) as usize];
                    if !(pte_present(next) && pte_pfn(next) == pfn) {
                        break;
                    }
                    nr += 1;
                }
            }
            let extra = if steps > 0 { self.cost.ttu_step } else { 0 };
            self.charge(
                cpu,
                extra + (nr - 1) * self.cost.pte_clear,
                Spent::TryToUnmap,
            );
            steps += 1;
            // get_and_clear_ptes (arm64 first unfolds a contpte block it covers in part): the
            // returned pteval carries the run's dirty/young bits.
            self.arch_prepare_clear_ptes(cpu, mm, vp, nr);
            let mut pteval = 0;
            for p in vp..vp + nr {
                pteval |= self.mms[mm].ptes[p as usize];
                self.mms[mm].ptes[p as usize] = if anon {
                    swp_entry_swapcache(pfn)
                } else {
                    PTE_NONE
                };
            }
            let deferred = self.should_defer_flush(cpu, mm, flags);
            if self.oracle.watch.is_some() {
                for p in vp..vp + nr {
                    self.oracle_unmapped(cpu, mm, p, deferred, luf);
                }
            }
            if deferred && luf {
                self.luf_defer(cpu, mm, pfn, vp, vp + nr);
            } else if deferred {
                self.set_tlb_ubc_flush_pending(cpu, ubc, mm, pteval, vp, vp + nr);
            } else {
                // flush_tlb_range (tlb-batch off: flush_tlb_page, as before 4.3).
                let freed =
                    self.policy.settings.range_flush_freed_tables && self.has(Patch::TlbBatch);
                self.flush_tlb_mm_range(cpu, mm, vp, vp + nr, freed);
            }
            dirty |= pteval & PTE_DIRTY != 0;
            let m = &mut self.mms[mm];
            m.rss -= nr;
            if anon {
                m.swapents += nr;
            }
            self.vmstat.count_vm_event(TTU_STEPS);
            self.vmstat.count_vm_events(TTU_PTES, nr);
            vp += nr;
        }
        if dirty {
            self.folio_mark_dirty(pfn);
        }
        self.folios.get_mut(pfn).clear(pg::MAPPED);
        true
    }

    /// try_to_unmap_flush: flush everything deferred so far.
    pub fn try_to_unmap_flush(&mut self, cpu: CpuId, ubc: &mut TlbUbc) {
        if ubc.flush_required {
            self.oracle_flush(cpu, "try_to_unmap_flush: arch_tlbbatch_flush");
            self.arch_tlbbatch_flush(cpu, &mut ubc.arch);
            ubc.flush_required = false;
            ubc.writable = false;
        }
        // unlock-dirty-after-flush: no writable translation of these is left.
        for pfn in ubc.unlock_at_flush.drain(..) {
            self.folios.get_mut(pfn).clear(pg::LOCKED);
        }
    }

    /// try_to_unmap_flush_dirty: flush only if a dirty PTE was deferred.
    pub fn try_to_unmap_flush_dirty(&mut self, cpu: CpuId, ubc: &mut TlbUbc) {
        if self.has(Patch::UnsafeDeferDirtyFlush) {
            // The 2015 RFC's first form: the dirty flush is left to the batch flush after
            // pageout (deliberately unsafe; `check` must catch it).
            if ubc.writable {
                self.oracle_flush(cpu, "try_to_unmap_flush_dirty: SKIPPED (unsafe policy)");
            }
            return;
        }
        if ubc.writable {
            self.try_to_unmap_flush(cpu, ubc);
        }
    }
}
