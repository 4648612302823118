//! x86's struct arch_tlbflush_unmap_batch (arch/x86/include/asm/tlbbatch.h) and its hooks
//! (arch/x86/mm/tlb.c, arch/x86/include/asm/tlbflush.h): the batch gathers the cpumasks of
//! the mms unmapped from, and the flush is one IPI round to those CPUs (mm = NULL: a full
//! flush of whatever each runs), or one INVLPGB broadcast with the 6.15+ series.

use super::tlb::{FlushTlbInfo, TLB_FLUSH_ALL};
use crate::arch::tlbbatch::TlbBatch;
use crate::cpumask::CpuMask;
use crate::kernel::{CpuId, Kernel, MmId};

/// struct arch_tlbflush_unmap_batch.
#[derive(Clone, Debug)]
pub struct ArchTlbflushUnmapBatch {
    /// Each bit set is a CPU that may hold a TLB entry for one of the pages being flushed.
    pub cpumask: CpuMask,
    /// Pages were unmapped from some mm, even one with no CPU in its cpumask (INVLPGB
    /// flushes then).
    pub unmapped_pages: bool,
}

impl ArchTlbflushUnmapBatch {
    pub fn new(nr_cpus: usize) -> ArchTlbflushUnmapBatch {
        ArchTlbflushUnmapBatch {
            cpumask: CpuMask::new(nr_cpus),
            unmapped_pages: false,
        }
    }
}

impl TlbBatch for ArchTlbflushUnmapBatch {
    /// Some CPU other than this one may cache the mm.
    fn should_defer(k: &Kernel, cpu: CpuId, mm: MmId) -> bool {
        k.mms[mm].cpumask.any_but(cpu)
    }

    /// Bump the mm's generation (inc_mm_tlb_gen) and gather its cpumask; the range is not
    /// needed (the flush is a full one).
    fn add_pending(&mut self, k: &mut Kernel, _cpu: CpuId, mm: MmId, _start: u64, _end: u64) {
        k.mms[mm].tlb_gen += 1;
        self.cpumask.or(&k.mms[mm].cpumask);
        self.unmapped_pages = true;
    }

    /// One flush with mm = NULL over the whole batch mask.
    fn flush(&mut self, k: &mut Kernel, cpu: CpuId) {
        let info = FlushTlbInfo {
            mm: None,
            start: 0,
            end: TLB_FLUSH_ALL,
            new_tlb_gen: None,
            freed_tables: false,
            trim_cpumask: false,
        };
        if k.invlpgb_enabled() && self.unmapped_pages {
            // 6.15+ with INVLPGB: one broadcast of every non-global translation, no IPIs.
            k.invlpgb_flush_all_nonglobals(cpu);
        } else if self.cpumask.any_but(cpu) {
            k.flush_tlb_multi(cpu, &self.cpumask, &info);
        } else if self.cpumask.test(cpu) {
            // Run locally with interrupts off (local_irq_disable around flush_tlb_func).
            let ns = k.flush_tlb_func(cpu, cpu, &info);
            k.irq_off_local(cpu, ns);
        }
        self.cpumask.clear_all();
        self.unmapped_pages = false;
        k.check_tlb_coherent_after_batch();
    }
}
