//! Architecture code (arch/*): x86 (IPI shootdowns, arch/x86/mm/tlb.c) and arm64 (broadcast
//! TLBI, arch/arm64/include/asm/tlbflush.h, arch/arm64/mm/contpte.c).
//!
//! The generic mm code (rmap.rs, vmscan.rs, memory.rs, sched.rs) calls the kernel's arch hook
//! names below; each is a thin dispatch on `Kernel::arch` (`machine.arch`) to the arch's own
//! implementation, as the kernel selects them at build time. The deferred unmap flush's
//! batch and its hooks (arch_tlbbatch_*) are in tlbbatch.rs, with each arch's struct in
//! `x86::tlbbatch` and `arm64::tlbbatch`.

pub mod arm64;
pub mod tlbbatch;
pub mod x86;

use crate::cost::CostTable;
use crate::kernel::{CpuId, Kernel, MmId};
pub use tlbbatch::{ArchTlbBatch, TlbBatch};

/// The simulated machine's architecture (`machine.arch`).
pub use reclaimlab_core::Arch;

/// `sim.arm64_tlbi_range` (default true): whether the simulated arm64 CPUs have
/// FEAT_TLBIRANGE (ARMv8.4; Neoverse N2/V1 and later do, N1-era servers do not). Without it a
/// range is invalidated one TLBI per page.
pub fn arm64_tlbi_range(scn: &reclaimlab_core::Scenario) -> anyhow::Result<bool> {
    Ok(scn.source.bool_or("sim.arm64_tlbi_range", true)?)
}

impl Kernel {
    /// Select the architecture (and its cost table). `Kernel::new` starts as x86.
    pub fn set_arch(&mut self, arch: Arch) {
        self.arch = arch;
        self.cost = match arch {
            Arch::X86 => CostTable::x86(),
            Arch::Arm64 => CostTable::arm64(),
        };
    }

    /// flush_tlb_range / flush_tlb_page of pages [start, end) of `mm` (x86:
    /// flush_tlb_mm_range; arm64: __flush_tlb_range, TLBI + DSB).
    pub fn flush_tlb_mm_range(
        &mut self,
        cpu: CpuId,
        mm: MmId,
        start: u64,
        end: u64,
        freed_tables: bool,
    ) {
        match self.arch {
            Arch::X86 => self.x86_flush_tlb_mm_range(cpu, mm, start, end, freed_tables),
            Arch::Arm64 => self.arm64_flush_tlb_range(cpu, mm, start, end),
        }
    }

    /// switch_mm (next = Some) or enter_lazy_tlb (next = None, the idle task).
    pub fn switch_mm(&mut self, cpu: CpuId, next: Option<MmId>) {
        self.schedule_switch_mm(cpu, next, 0);
    }

    /// switch_mm from __schedule's context_switch, `irqs_off` ns after it disabled interrupts.
    pub fn schedule_switch_mm(&mut self, cpu: CpuId, next: Option<MmId>, irqs_off: u64) {
        match self.arch {
            Arch::X86 => self.x86_switch_mm(cpu, next, irqs_off),
            Arch::Arm64 => self.arm64_switch_mm(cpu, next),
        }
    }

    /// clear_flush_young_ptes(vma, addr, ptep, nr) over pages [vp, vp + nr) of `mm`, all
    /// present and mapping one folio (nr = 1 is ptep_clear_flush_young). Returns (young, the
    /// number of PTE test-and-clears done): x86 clears the accessed bits and never flushes;
    /// arm64 widens to contpte blocks and issues a TLBI (no DSB) when something was young.
    pub fn clear_flush_young_ptes(
        &mut self,
        cpu: CpuId,
        mm: MmId,
        vp: u64,
        nr: u64,
    ) -> (bool, u64) {
        match self.arch {
            Arch::X86 => (self.x86_ptep_clear_young_range(mm, vp, nr), nr),
            Arch::Arm64 => self.arm64_clear_flush_young_ptes(cpu, mm, vp, nr),
        }
    }

    /// Called before clearing PTEs [vp, vp + nr) for unmap (get_and_clear_full_ptes): arm64
    /// unfolds a contpte block the range covers only in part (contpte_try_unfold_partial).
    pub fn arch_prepare_clear_ptes(&mut self, cpu: CpuId, mm: MmId, vp: u64, nr: u64) {
        if self.arch == Arch::Arm64 {
            self.contpte_try_unfold_partial(cpu, mm, vp, nr);
        }
    }
}
