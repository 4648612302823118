//! arm64 TLB maintenance (arch/arm64/include/asm/tlbflush.h).
//!
//! There are no IPIs: a `TLBI <op>IS` is broadcast by the hardware to every PE of the
//! inner-shareable domain, and a later `DSB ISH` waits until all of them have completed it.
//! TLBs are ASID-tagged, so who runs or lazily borrows an mm decides nothing: every CPU's TLB
//! drops the pages. The model applies the invalidation to every CPU's `CpuTlb` when the TLBI
//! is issued (state changes apply at once, docs/sim-model.md) and charges the issuing CPU the
//! TLBI issue cost; the DSB charges the wait. The TLB and CAL interrupt counters and the
//! `nr_tlb_*` vmstat counters stay 0 (arm64 never calls count_vm_tlb_event).

use crate::cputime::Spent;
use crate::kernel::{CpuId, Kernel, MmId};
use crate::mm::vmstat::VmEventItem::*;

/// MAX_DVM_OPS = PTRS_PER_PTE (4 KiB pages): ranges of this many pages or more become one
/// whole-ASID invalidation (__flush_tlb_range_limit_excess → flush_tlb_mm).
pub const MAX_DVM_OPS: u64 = 512;
/// MAX_TLBI_RANGE_PAGES = __TLBI_RANGE_PAGES(31, 3).
pub const MAX_TLBI_RANGE_PAGES: u64 = 32 << 16;

/// How many TLBI instructions __flush_tlb_range_op issues for `pages` pages (stride
/// PAGE_SIZE): one per page without FEAT_TLBIRANGE; with it, range operations from scale 3
/// down to 0 (each covering (num + 1) << (5 * scale + 1) pages, num <= 31) and one
/// single-page operation for a last odd page.
pub fn tlbi_range_ops(pages: u64, tlbi_range: bool) -> u64 {
    if !tlbi_range {
        return pages;
    }
    let (mut left, mut ops, mut scale) = (pages, 0, 3i32);
    while left > 0 {
        if left == 1 || scale < 0 {
            ops += 1;
            left -= 1;
            continue;
        }
        let shift = 5 * scale as u64 + 1;
        let num = (left.min(32 << shift) >> shift) as i64 - 1;
        if num >= 0 {
            ops += 1;
            left -= ((num + 1) as u64) << shift;
        }
        scale -= 1;
    }
    ops
}

impl Kernel {
    /// __flush_tlb_range_nosync (last level, stride PAGE_SIZE): issue the TLBIs for pages
    /// [start, end) of `mm` without waiting. A range of MAX_DVM_OPS pages or more is
    /// flush_tlb_mm instead (ASIDE1IS + DSB).
    pub fn arm64_flush_tlb_range_nosync(&mut self, cpu: CpuId, mm: MmId, start: u64, end: u64) {
        let pages = end - start;
        if pages == 0 {
            return;
        }
        let excess =
            (self.arm64_tlbi_range && pages > MAX_TLBI_RANGE_PAGES) || pages >= MAX_DVM_OPS;
        let ops = if excess {
            for c in &mut self.cpus {
                c.tlb.flush_mm(mm);
            }
            1
        } else {
            for c in &mut self.cpus {
                for vp in start..end {
                    c.tlb.flush_one(mm, vp);
                }
            }
            tlbi_range_ops(pages, self.arm64_tlbi_range)
        };
        self.vmstat.count_vm_events(TLBI_OPS, ops);
        self.charge(cpu, ops * self.cost.tlbi_op, Spent::TlbBroadcast);
        if excess {
            self.arm64_dsb_ish(cpu);
        }
    }

    /// dsb(ish): wait until every TLBI this CPU issued has completed on every PE.
    pub fn arm64_dsb_ish(&mut self, cpu: CpuId) {
        self.vmstat.count_vm_event(DSB_ISH);
        let ns = self.cost.dsb_ish + self.cost.dsb_ish_per_cpu * self.nr_cpus() as u64;
        self.charge(cpu, ns, Spent::TlbBroadcast);
    }

    /// flush_tlb_range / flush_tlb_page (__flush_tlb_range): TLBIs, then DSB ISH.
    pub fn arm64_flush_tlb_range(&mut self, cpu: CpuId, mm: MmId, start: u64, end: u64) {
        if end - start >= MAX_DVM_OPS {
            // flush_tlb_mm brings its own DSB.
            self.arm64_flush_tlb_range_nosync(cpu, mm, start, end);
            return;
        }
        self.arm64_flush_tlb_range_nosync(cpu, mm, start, end);
        self.arm64_dsb_ish(cpu);
    }

    /// switch_mm / enter_lazy_tlb: an ASID switch. No flush (TLB entries are tagged with
    /// the ASID; ASID rollover is not modelled) and no mm_cpumask bookkeeping. loaded_mm and
    /// is_lazy are kept only as the scheduler's record of what runs.
    pub fn arm64_switch_mm(&mut self, cpu: CpuId, next: Option<MmId>) {
        let c = &mut self.cpus[cpu];
        match next {
            None => {
                if c.loaded_mm.is_some() {
                    c.is_lazy = true;
                }
            }
            Some(mm) => {
                c.is_lazy = false;
                c.loaded_mm = Some(mm);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::tlbi_range_ops;

    #[test]
    fn tlbi_op_counts_follow_flush_tlb_range_op() {
        assert_eq!(tlbi_range_ops(16, false), 16);
        assert_eq!(tlbi_range_ops(1, true), 1);
        assert_eq!(tlbi_range_ops(16, true), 1);
        // 17 = 16 by one scale-0 range + the odd last page.
        assert_eq!(tlbi_range_ops(17, true), 2);
        assert_eq!(tlbi_range_ops(64, true), 1);
        // 66 = 64 (scale 1) + 2 (scale 0).
        assert_eq!(tlbi_range_ops(66, true), 2);
    }
}
