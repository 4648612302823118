//! PMD mappings of page-cache folios (mm/memory.c finish_fault → do_set_pmd, mm/huge_memory.c).
//!
//! A fault on a file page whose folio is PMD-sized (order 9) and naturally aligned, with an
//! empty page table under the PMD, maps the whole folio with one PMD entry: one fault for 512
//! pages. Every operation on such a mapping then covers the 2 MiB at once, each with one TLB
//! flush of the range (x86 flushes a 512-page range with a full flush, one IPI per remote CPU):
//! - reclaim's unmap: TTU_SPLIT_HUGE_PMD on a file PMD zaps it (__split_huge_pmd →
//!   pmdp_huge_clear_flush), a synchronous flush, not a deferred batch;
//! - folio_referenced: pmdp_clear_flush_young flushes when the PMD was young (unlike the PTE
//!   case, where x86 clears the accessed bit without a flush);
//! - the flusher's page_mkclean: page_vma_mkclean_one write-protects and cleans the PMD
//!   (pmdp_invalidate), one flush;
//! - a store to the write-protected PMD: do_huge_pmd_wp_page zaps it for a file mapping
//!   (one flush) and the retried fault maps it again writable and dirty.
//!
//! The model keeps the 512 PTEs in the mm's page table (so the rest of the model sees the
//! pages mapped) and records the PMD in `Mm::pmd_mapped`; the TLB model still caches one entry
//! per page (a PMD mapping uses one TLB entry: TLB reach is not modelled here).

use crate::kernel::{CpuId, Kernel, MmId};
use crate::mm::folio::{pg, Pfn};
use crate::mm::pgtable::*;

/// HPAGE_PMD_ORDER and HPAGE_PMD_NR with 4 KiB pages.
pub const HPAGE_PMD_ORDER: u8 = 9;
pub const HPAGE_PMD_NR: u64 = 1 << HPAGE_PMD_ORDER;

impl Kernel {
    /// Whether `vp` of `mm` lies in a PMD-mapped folio.
    pub fn pmd_mapped(&self, mm: MmId, vp: u64) -> bool {
        self.mms[mm].pmd_mapped.contains(&(vp >> HPAGE_PMD_ORDER))
    }

    /// do_set_pmd: map the whole PMD-sized page-cache folio `pfn` (holding `vp`) if the PMD
    /// is pmd_none: neither PMD-mapped nor holding a PTE table (finish_fault and
    /// filemap_map_pmd try it only then; a table left by an earlier PTE mapping stays until
    /// the mm goes, `Mm::pte_tables`). Returns false if it cannot (then the caller maps the
    /// folio with PTEs). Counts THP_FILE_MAPPED.
    pub(crate) fn do_set_pmd(&mut self, mm: MmId, vp: u64, pfn: Pfn, write: bool) -> bool {
        if !self.cfg.file_pmd_map {
            return false;
        }
        let f = *self.folios.get(pfn);
        if f.order != HPAGE_PMD_ORDER || f.is_anon() {
            return false;
        }
        let start = vp & !(HPAGE_PMD_NR - 1);
        if start != f.index as u64 || start + HPAGE_PMD_NR > self.mms[mm].ptes.len() as u64 {
            return false;
        }
        if self.mms[mm].pte_tables[(start >> HPAGE_PMD_ORDER) as usize]
            || self.mms[mm]
                .pmd_mapped
                .contains(&(start >> HPAGE_PMD_ORDER))
        {
            return false;
        }
        debug_assert!(
            self.mms[mm].ptes[start as usize..(start + HPAGE_PMD_NR) as usize]
                .iter()
                .all(|&p| p == PTE_NONE)
        );
        self.ra.thp_file_mapped += 1;
        let writable = self.mms[mm].writable && write;
        for p in start..start + HPAGE_PMD_NR {
            self.mms[mm].ptes[p as usize] = mk_pte(pfn, writable, write);
        }
        self.mms[mm].rss += HPAGE_PMD_NR;
        self.mms[mm].pmd_mapped.insert(start >> HPAGE_PMD_ORDER);
        self.folios.get_mut(pfn).set(pg::MAPPED);
        true
    }

    /// Zap a PMD-mapped folio's PMD (reclaim's unmap, or the write-protect fault): clear the
    /// 512 entries, flush the range at once, carry a dirty PMD over to the folio. Returns
    /// whether it was dirty.
    pub(crate) fn zap_huge_pmd(&mut self, cpu: CpuId, mm: MmId, start: u64, pfn: Pfn) -> bool {
        let mut pteval = 0;
        for p in start..start + HPAGE_PMD_NR {
            pteval |= self.mms[mm].ptes[p as usize];
            self.mms[mm].ptes[p as usize] = PTE_NONE;
        }
        if self.oracle.watch.is_some() {
            for p in start..start + HPAGE_PMD_NR {
                self.oracle_unmapped(cpu, mm, p, false, false);
            }
        }
        self.flush_tlb_mm_range(cpu, mm, start, start + HPAGE_PMD_NR, false);
        self.mms[mm].rss -= HPAGE_PMD_NR;
        self.mms[mm].pmd_mapped.remove(&(start >> HPAGE_PMD_ORDER));
        self.folios.get_mut(pfn).clear(pg::MAPPED);
        let dirty = pteval & PTE_DIRTY != 0;
        if dirty {
            self.folio_mark_dirty(pfn);
        }
        dirty
    }

    /// pmdp_clear_flush_young for a PMD-mapped folio: test and clear the accessed bit; a
    /// young PMD is flushed (x86). Returns whether it was young.
    pub(crate) fn pmdp_clear_flush_young(&mut self, cpu: CpuId, mm: MmId, start: u64) -> bool {
        let mut young = false;
        for p in start..start + HPAGE_PMD_NR {
            let pte = &mut self.mms[mm].ptes[p as usize];
            young |= *pte & PTE_YOUNG != 0;
            *pte &= !PTE_YOUNG;
        }
        if young {
            self.flush_tlb_mm_range(cpu, mm, start, start + HPAGE_PMD_NR, false);
        }
        young
    }

    /// Whether any page of the PMD mapping at `start` is dirty or writable (pmd_mkclean flushes).
    pub(crate) fn pmd_dirty_or_writable(&self, mm: MmId, start: u64) -> bool {
        (start..start + HPAGE_PMD_NR)
            .any(|p| self.mms[mm].ptes[p as usize] & (PTE_DIRTY | PTE_WRITE) != 0)
    }

    /// page_vma_mkclean_one on a PMD: write-protect and clean the whole PMD, one flush.
    pub(crate) fn pmd_mkclean(&mut self, cpu: CpuId, mm: MmId, start: u64) {
        let mut changed = false;
        for p in start..start + HPAGE_PMD_NR {
            let pte = &mut self.mms[mm].ptes[p as usize];
            if *pte & (PTE_DIRTY | PTE_WRITE) != 0 {
                *pte &= !(PTE_DIRTY | PTE_WRITE);
                changed = true;
            }
        }
        if changed {
            self.flush_tlb_mm_range(cpu, mm, start, start + HPAGE_PMD_NR, false);
        }
    }

    /// do_huge_pmd_wp_page for a file mapping: zap the write-protected PMD and map the folio
    /// again writable and dirty (the retried fault's do_set_pmd).
    pub(crate) fn do_huge_pmd_wp_page(&mut self, cpu: CpuId, mm: MmId, vp: u64, pfn: Pfn) {
        let start = vp & !(HPAGE_PMD_NR - 1);
        self.zap_huge_pmd(cpu, mm, start, pfn);
        let mapped = self.do_set_pmd(mm, vp, pfn, true);
        debug_assert!(mapped);
    }
}
