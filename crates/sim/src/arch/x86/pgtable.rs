//! x86 young-bit clearing (arch/x86/mm/pgtable.c).

use crate::kernel::{Kernel, MmId};
use crate::mm::pgtable::PTE_YOUNG;

impl Kernel {
    /// ptep_clear_flush_young on each of pages [vp, vp + nr) (the generic
    /// clear_flush_young_ptes loop): ptep_test_and_clear_young clears the accessed bit and
    /// x86 does not flush (a stale accessed bit can only mis-age a page). The caller's walk
    /// costs cover the test of each PTE. Returns whether any was young.
    pub fn x86_ptep_clear_young_range(&mut self, mm: MmId, vp: u64, nr: u64) -> bool {
        let mut young = false;
        for pte in &mut self.mms[mm].ptes[vp as usize..(vp + nr) as usize] {
            young |= *pte & PTE_YOUNG != 0;
            *pte &= !PTE_YOUNG;
        }
        young
    }
}
