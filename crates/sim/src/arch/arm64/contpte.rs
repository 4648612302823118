//! arm64 contiguous PTEs (CONFIG_ARM64_CONTPTE, arch/arm64/mm/contpte.c).
//!
//! A naturally aligned run of CONT_PTES (16 with 4 KiB pages) PTEs that maps 16 consecutive
//! pages of one large folio carries PTE_CONT: one TLB entry covers the 64 KiB. The kernel
//! folds a block when its last PTE is set (contpte_try_fold) or when set_ptes maps a whole
//! block (fault-around maps a 64 KiB block at once); the model, which maps file pages one
//! fault at a time, folds whenever a set_pte completes such a block. A block is cont while it
//! is complete and has not been unfolded since (`Kernel::contpte_unfolded`).
//!
//! What it changes: young-bit clearing works on whole blocks (contpte_ptep_clear_flush_young
//! clears all 16 and flushes the block), and clearing part of a block for unmap first
//! unfolds it (contpte_convert: clear the 16 PTEs, TLBI the block and wait for it with a DSB,
//! write them back without PTE_CONT).

use crate::arch::Arch;
use crate::cputime::Spent;
use crate::kernel::{CpuId, Kernel, MmId};
use crate::mm::pgtable::*;
use crate::mm::vmstat::VmEventItem::*;

/// CONT_PTES with 4 KiB pages (64 KiB blocks).
pub const CONT_PTES: u64 = 16;

fn block_of(vp: u64) -> u64 {
    vp & !(CONT_PTES - 1)
}

impl Kernel {
    /// Whether the block at `b` is complete: 16 present PTEs mapping one folio of order >= 4
    /// (the PTE holds the folio number; an aligned block of an aligned folio maps consecutive
    /// pages of it).
    fn contpte_block_complete(&self, mm: MmId, b: u64) -> bool {
        let ptes = &self.mms[mm].ptes;
        if b + CONT_PTES > ptes.len() as u64 {
            return false;
        }
        let first = ptes[b as usize];
        if !pte_present(first) || pte_pfn(first) == ZERO_PFN {
            return false;
        }
        let pfn = pte_pfn(first);
        if self.folios.get(pfn).order < 4 {
            return false;
        }
        ptes[b as usize..(b + CONT_PTES) as usize]
            .iter()
            .all(|&p| pte_present(p) && pte_pfn(p) == pfn)
    }

    /// pte_valid_cont(__ptep_get(ptep)) for page `vp` of `mm`.
    pub fn pte_cont(&self, mm: MmId, vp: u64) -> bool {
        let b = block_of(vp);
        self.arch == Arch::Arm64
            && self.contpte_block_complete(mm, b)
            && !self.contpte_unfolded.contains(&(mm, b))
    }

    /// contpte_try_fold after a PTE was set: a block this completes is (again) contiguous.
    pub fn contpte_try_fold(&mut self, mm: MmId, vp: u64) {
        if self.arch != Arch::Arm64 {
            return;
        }
        let b = block_of(vp);
        if self.contpte_block_complete(mm, b) {
            self.contpte_unfolded.remove(&(mm, b));
        }
    }

    /// contpte_convert to unfold the block holding `vp`: 16 get_and_clear, a synchronous
    /// block flush (__flush_tlb_range: TLBI + DSB ISH, no BBML2 elision modelled), 16 sets.
    fn contpte_unfold(&mut self, cpu: CpuId, mm: MmId, vp: u64) {
        let b = block_of(vp);
        self.contpte_unfolded.insert((mm, b));
        self.vmstat.count_vm_event(CONTPTE_UNFOLDS);
        self.charge(
            cpu,
            2 * CONT_PTES * self.cost.pte_clear,
            Spent::TlbBroadcast,
        );
        self.arm64_flush_tlb_range(cpu, mm, b, b + CONT_PTES);
    }

    /// contpte_try_unfold_partial before clearing PTEs [vp, vp + nr): unfold the first and
    /// the last block if the range covers them only in part (nr = 1, the per-PTE unmap of
    /// 6.18, always unfolds a contiguous block).
    pub fn contpte_try_unfold_partial(&mut self, cpu: CpuId, mm: MmId, vp: u64, nr: u64) {
        let end = vp + nr;
        if (vp != block_of(vp) || nr < CONT_PTES) && self.pte_cont(mm, vp) {
            self.contpte_unfold(cpu, mm, vp);
        }
        if end != block_of(end) && self.pte_cont(mm, end - 1) {
            self.contpte_unfold(cpu, mm, end - 1);
        }
    }

    /// clear_flush_young_ptes on arm64 (ptep_clear_flush_young is the nr = 1 case): a single
    /// non-contiguous PTE is __ptep_clear_flush_young (test-and-clear, TLBI of the page if it
    /// was young); otherwise contpte_clear_flush_young_ptes widens [vp, vp + nr) to whole
    /// blocks at a contiguous start or end, test-and-clears every PTE in it (a cmpxchg each,
    /// young or not) and, if any was young, issues one range TLBI over it. No DSB: a stale
    /// access flag only risks reclaiming a hot page. Returns (young, PTEs test-and-cleared).
    pub fn arm64_clear_flush_young_ptes(
        &mut self,
        cpu: CpuId,
        mm: MmId,
        vp: u64,
        nr: u64,
    ) -> (bool, u64) {
        let (mut s, mut e) = (vp, vp + nr);
        if self.pte_cont(mm, s) {
            s = block_of(s);
        }
        if self.pte_cont(mm, e - 1) {
            e = block_of(e - 1) + CONT_PTES;
        }
        let mut young = false;
        for pte in &mut self.mms[mm].ptes[s as usize..e as usize] {
            young |= *pte & PTE_YOUNG != 0;
            *pte &= !PTE_YOUNG;
        }
        if young {
            self.arm64_flush_tlb_range_nosync(cpu, mm, s, e);
        }
        (young, e - s)
    }
}
