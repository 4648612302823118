//! The arch side of the deferred unmap flush (CONFIG_ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH):
//! each arch's struct arch_tlbflush_unmap_batch (arch/*/include/asm/tlbbatch.h) and the
//! hooks mm/rmap.c calls on it. The generic half, struct tlbflush_unmap_batch (`TlbUbc`:
//! flush_required, writable), is in mm/mm_types_task.rs.
//!
//! The kernel picks one arch at build time; the model picks it per run (`machine.arch`), so
//! the batch generic code holds is [`ArchTlbBatch`], an enum over the arch structs that
//! forwards each hook with a match (no virtual call on the unmap path).

use super::{arm64, x86, Arch};
use crate::kernel::{CpuId, Kernel, MmId};

/// What an arch's struct arch_tlbflush_unmap_batch provides.
pub trait TlbBatch {
    /// arch_tlbbatch_should_defer(mm): whether try_to_unmap may leave the flush of `mm`'s
    /// cleared PTEs to the batch (should_defer_flush), for a reclaimer on `cpu`.
    fn should_defer(k: &Kernel, cpu: CpuId, mm: MmId) -> bool
    where
        Self: Sized;

    /// arch_tlbbatch_add_pending(batch, mm, start, end): pages [start, end) of `mm` were
    /// cleared and their flush is deferred.
    fn add_pending(&mut self, k: &mut Kernel, cpu: CpuId, mm: MmId, start: u64, end: u64);

    /// arch_tlbbatch_flush(batch): flush everything added since the last flush, from `cpu`.
    fn flush(&mut self, k: &mut Kernel, cpu: CpuId);
}

impl Kernel {
    /// The paranoid check after a batch flush: no usable TLB entry disagrees with its PTE.
    /// Not inside another reclaimer's preemption window (engine.rs): that reclaimer may hold
    /// a batch of its own whose flush is still pending, and the entries it covers are stale
    /// by design until then (its own flush checks them).
    pub(crate) fn check_tlb_coherent_after_batch(&mut self) {
        if self.paranoid() && !self.in_reclaim_preempt {
            self.check_tlb_coherent("after arch_tlbbatch_flush");
        }
    }
}

/// The simulated arch's struct arch_tlbflush_unmap_batch.
#[derive(Clone, Debug)]
pub enum ArchTlbBatch {
    X86(x86::tlbbatch::ArchTlbflushUnmapBatch),
    Arm64(arm64::tlbbatch::ArchTlbflushUnmapBatch),
}

impl ArchTlbBatch {
    /// An empty batch for `arch` on a machine of `nr_cpus` CPUs.
    pub fn new(arch: Arch, nr_cpus: usize) -> ArchTlbBatch {
        match arch {
            Arch::X86 => ArchTlbBatch::X86(x86::tlbbatch::ArchTlbflushUnmapBatch::new(nr_cpus)),
            Arch::Arm64 => ArchTlbBatch::Arm64(arm64::tlbbatch::ArchTlbflushUnmapBatch),
        }
    }
}

impl Kernel {
    /// arch_tlbbatch_should_defer.
    pub fn arch_tlbbatch_should_defer(&self, cpu: CpuId, mm: MmId) -> bool {
        match self.arch {
            Arch::X86 => x86::tlbbatch::ArchTlbflushUnmapBatch::should_defer(self, cpu, mm),
            Arch::Arm64 => arm64::tlbbatch::ArchTlbflushUnmapBatch::should_defer(self, cpu, mm),
        }
    }

    /// arch_tlbbatch_add_pending(batch, mm, start, end): pages [start, end) of `mm` were
    /// cleared and their flush is deferred. x86 ignores the range; arm64 issues the TLBIs now.
    pub fn arch_tlbbatch_add_pending(
        &mut self,
        cpu: CpuId,
        batch: &mut ArchTlbBatch,
        mm: MmId,
        start: u64,
        end: u64,
    ) {
        match batch {
            ArchTlbBatch::X86(b) => b.add_pending(self, cpu, mm, start, end),
            ArchTlbBatch::Arm64(b) => b.add_pending(self, cpu, mm, start, end),
        }
    }

    /// arch_tlbbatch_flush.
    pub fn arch_tlbbatch_flush(&mut self, cpu: CpuId, batch: &mut ArchTlbBatch) {
        match batch {
            ArchTlbBatch::X86(b) => b.flush(self, cpu),
            ArchTlbBatch::Arm64(b) => b.flush(self, cpu),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Policy, SimConfig};
    use crate::kernel::Backing;
    use crate::mm::vmstat::VmEventItem::*;

    /// 4 CPUs: CPU 0 reclaims (idle), mm 0 runs on CPU 1, mm 1 on CPU 2, CPU 3 idle.
    fn machine(arch: Arch) -> Kernel {
        let mut k = Kernel::new(
            SimConfig::default(),
            Policy::linux_6_18(),
            4,
            1024,
            1024,
            60,
            1,
        );
        k.set_arch(arch);
        for cpu in [1, 2] {
            let mm = k.mm_alloc(8, Backing::Anon, true);
            let t = k.task_new(mm, Some(cpu), 0, 8);
            k.context_switch(cpu, Some(t));
        }
        k
    }

    fn interrupts(k: &Kernel) -> Vec<u64> {
        k.irq.tlb_shootdowns.clone()
    }

    #[test]
    fn x86_gathers_the_mms_cpumasks_and_flushes_them_with_one_ipi_round() {
        let mut k = machine(Arch::X86);
        assert!(k.arch_tlbbatch_should_defer(0, 0), "CPU 1 runs mm 0");
        assert!(
            !k.arch_tlbbatch_should_defer(1, 0),
            "only the reclaimer's CPU"
        );
        let mut batch = ArchTlbBatch::new(Arch::X86, 4);
        let gens = (k.mms[0].tlb_gen, k.mms[1].tlb_gen);
        k.arch_tlbbatch_add_pending(0, &mut batch, 0, 0, 4);
        k.arch_tlbbatch_add_pending(0, &mut batch, 1, 0, 1);
        let ArchTlbBatch::X86(b) = &batch else {
            panic!("an x86 batch")
        };
        assert_eq!(b.cpumask.iter().collect::<Vec<_>>(), [1, 2]);
        assert!(b.unmapped_pages);
        assert_eq!(
            (k.mms[0].tlb_gen, k.mms[1].tlb_gen),
            (gens.0 + 1, gens.1 + 1)
        );
        assert_eq!(
            interrupts(&k),
            [0, 0, 0, 0],
            "nothing sent before the flush"
        );
        k.arch_tlbbatch_flush(0, &mut batch);
        assert_eq!(k.vmstat[NR_TLB_REMOTE_FLUSH], 1, "one flush for both mms");
        assert_eq!(
            interrupts(&k),
            [0, 1, 1, 0],
            "to the CPUs gathered, once each"
        );
        let ArchTlbBatch::X86(b) = &batch else {
            panic!("an x86 batch")
        };
        assert!(b.cpumask.iter().next().is_none() && !b.unmapped_pages);
        k.arch_tlbbatch_flush(0, &mut batch);
        assert_eq!(interrupts(&k), [0, 1, 1, 0], "an empty batch sends nothing");
    }

    #[test]
    fn arm64_issues_the_tlbis_at_add_pending_and_one_dsb_at_the_flush() {
        let mut k = machine(Arch::Arm64);
        // No cpumask is consulted: deferral is always allowed.
        assert!(k.arch_tlbbatch_should_defer(1, 0));
        let mut batch = ArchTlbBatch::new(Arch::Arm64, 4);
        assert!(matches!(batch, ArchTlbBatch::Arm64(_)));
        k.arch_tlbbatch_add_pending(0, &mut batch, 0, 0, 4);
        k.arch_tlbbatch_add_pending(0, &mut batch, 1, 0, 1);
        let range = crate::arch::arm64::tlb::tlbi_range_ops(4, k.arm64_tlbi_range);
        assert_eq!(k.vmstat[TLBI_OPS], range + 1, "the TLBIs went out already");
        assert_eq!(k.vmstat[DSB_ISH], 0, "without waiting");
        k.arch_tlbbatch_flush(0, &mut batch);
        assert_eq!(k.vmstat[DSB_ISH], 1, "one DSB ISH for the batch");
        assert_eq!(k.vmstat[TLBI_OPS], range + 1);
        assert_eq!(interrupts(&k), [0, 0, 0, 0], "broadcast TLBI: no IPIs");
        assert_eq!(k.vmstat[NR_TLB_REMOTE_FLUSH], 0);
    }
}
