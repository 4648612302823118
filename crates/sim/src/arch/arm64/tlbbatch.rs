//! arm64's struct arch_tlbflush_unmap_batch (arch/arm64/include/asm/tlbbatch.h) and its
//! hooks (arch/arm64/include/asm/tlbflush.h): empty, since the hardware broadcasts TLBIs and
//! no cpumask is needed for IPIs. Adding to the batch issues the range's TLBIs at once
//! (nosync); the flush is one DSB ISH that waits for all of them.

use crate::arch::tlbbatch::TlbBatch;
use crate::kernel::{CpuId, Kernel, MmId};

/// struct arch_tlbflush_unmap_batch: nothing to record.
#[derive(Clone, Copy, Debug, Default)]
pub struct ArchTlbflushUnmapBatch;

impl TlbBatch for ArchTlbflushUnmapBatch {
    /// Always (no mm_cpumask to look at; the REPEAT_TLBI erratum, which disables deferral,
    /// is not modelled).
    fn should_defer(_k: &Kernel, _cpu: CpuId, _mm: MmId) -> bool {
        true
    }

    /// __flush_tlb_range_nosync: the TLBIs for the unmapped range go out now.
    fn add_pending(&mut self, k: &mut Kernel, cpu: CpuId, mm: MmId, start: u64, end: u64) {
        k.arm64_flush_tlb_range_nosync(cpu, mm, start, end);
    }

    /// dsb(ish): one DSB completes every TLBI of the batch.
    fn flush(&mut self, k: &mut Kernel, cpu: CpuId) {
        k.arm64_dsb_ish(cpu);
        k.check_tlb_coherent_after_batch();
    }
}
