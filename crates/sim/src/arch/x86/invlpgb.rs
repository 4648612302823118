//! AMD INVLPGB/TLBSYNC broadcast invalidation (`machine.invlpgb`; arch/x86/mm/tlb.c,
//! arch/x86/include/asm/invlpgb.h), as merged in 6.15 (Rik van Riel's series, tip x86/core,
//! March 2025).
//!
//! Two users, as in the kernel:
//! * reclaim's batched flush: arch_tlbbatch_flush with `unmapped_pages` set does
//!   invlpgb_flush_all_nonglobals (every user translation of every ASID on every CPU) and
//!   TLBSYNC instead of IPIs, whatever mms the batch covers;
//! * flush_tlb_mm_range of an mm with a global ASID: broadcast_tlb_flush (INVLPGBs for the
//!   range of that ASID, TLBSYNC). An mm gets a global ASID from consider_global_asid after an
//!   IPI flush, when it runs on more than 3 CPUs at once (mm_active_cpus_exceeds(mm, 3)),
//!   checked once in 32 jiffies per task (`(pid & 0x1f) == (jiffies & 0x1f)`), from a limited
//!   pool; CPUs move to it at their next switch_mm or flush IPI, and until all running CPUs
//!   have, the broadcast flush also IPIs the mm's CPUs (finish_asid_transition).
//!
//! The broadcast is applied to every CPU's TLB when issued: the model has no step between an
//! INVLPGB and its TLBSYNC in which another CPU could run.

use crate::cputime::Spent;
use crate::kernel::{CpuId, Kernel, MmId};
use crate::mm::vmstat::VmEventItem::*;

/// MAX_ASID_AVAILABLE - TLB_NR_DYN_ASIDS - 1 without PTI (12 PCID bits: 4094 - 6 - 1).
const GLOBAL_ASID_POOL: u64 = 4087;
/// mm_active_cpus_exceeds(mm, 3) in consider_global_asid.
const GLOBAL_ASID_THRESHOLD: usize = 3;
/// Pages one INVLPGB may cover (invlpgb_count_max, from CPUID 0x80000008 EDX). Estimate: the
/// reclaim paths flush single pages, so it only matters for larger ranges.
const INVLPGB_COUNT_MAX: u64 = 8;

/// The broadcast state: which mms hold a global ASID, which CPUs run theirs, and counters.
#[derive(Clone, Debug, Default)]
pub struct Invlpgb {
    /// Per mm: holds a global ASID (mm->context.global_asid != 0).
    global: Vec<bool>,
    /// Per mm: mm->context.asid_transition.
    transition: Vec<bool>,
    /// Per CPU: its loaded ASID is its loaded mm's global one.
    on_global: Vec<bool>,
    /// Global ASIDs handed out (the pool's use; INVLPGB_OPS and TLBSYNC count the
    /// instructions, mm/vm_event_item.rs).
    pub global_asids: u64,
}

impl Invlpgb {
    pub fn new(nr_cpus: usize) -> Invlpgb {
        Invlpgb {
            on_global: vec![false; nr_cpus],
            ..Default::default()
        }
    }

    /// mm_global_asid(mm) != 0.
    pub fn global(&self, mm: MmId) -> bool {
        self.global.get(mm).copied().unwrap_or(false)
    }

    fn in_transition(&self, mm: MmId) -> bool {
        self.transition.get(mm).copied().unwrap_or(false)
    }

    fn assign(&mut self, mm: MmId) {
        if self.global.len() <= mm {
            self.global.resize(mm + 1, false);
            self.transition.resize(mm + 1, false);
        }
        self.global[mm] = true;
        self.transition[mm] = true;
        self.global_asids += 1;
    }
}

impl Kernel {
    /// INVLPGB is in use: the CPU has it and the kernel carries the series.
    pub fn invlpgb_enabled(&self) -> bool {
        self.invlpgb.is_some()
    }

    /// TLBSYNC after the INVLPGBs this CPU issued: the sender waits for every CPU.
    fn tlbsync(&mut self, cpu: CpuId) {
        let ns = self.cost.tlbsync + self.cost.tlbsync_per_cpu * self.nr_cpus() as u64;
        self.charge(cpu, ns, Spent::TlbBroadcast);
        self.vmstat.count_vm_event(TLBSYNC);
    }

    fn invlpgb_issue(&mut self, cpu: CpuId, n: u64) {
        self.charge(cpu, n * self.cost.invlpgb, Spent::TlbBroadcast);
        self.vmstat.count_vm_events(INVLPGB_OPS, n);
    }

    /// invlpgb_flush_all_nonglobals + TLBSYNC (arch_tlbbatch_flush): every user translation
    /// of every mm on every CPU is gone; no interrupt reaches any CPU.
    pub fn invlpgb_flush_all_nonglobals(&mut self, cpu: CpuId) {
        self.invlpgb_issue(cpu, 1);
        let nr_mms = self.mms.len();
        for c in &mut self.cpus {
            for mm in 0..nr_mms {
                c.tlb.flush_mm(mm);
            }
        }
        self.tlbsync(cpu);
    }

    /// broadcast_tlb_flush: pages [start, end) of `mm` (its global ASID) on every CPU, then
    /// finish_asid_transition and TLBSYNC. `end == TLB_FLUSH_ALL` flushes the whole ASID.
    pub fn broadcast_tlb_flush(&mut self, cpu: CpuId, mm: MmId, start: u64, end: u64) {
        let full = end == super::tlb::TLB_FLUSH_ALL;
        let ops = if full {
            1
        } else {
            (end - start).div_ceil(INVLPGB_COUNT_MAX).max(1)
        };
        self.invlpgb_issue(cpu, ops);
        for c in &mut self.cpus {
            if full {
                c.tlb.flush_mm(mm);
            } else {
                for vp in start..end {
                    c.tlb.flush_one(mm, vp);
                }
            }
        }
        self.finish_asid_transition(cpu, mm, start, end);
        self.tlbsync(cpu);
    }

    /// finish_asid_transition: while a CPU running `mm` still uses a per-CPU ASID, the flush
    /// also goes out by IPI (which moves that CPU over in flush_tlb_func).
    fn finish_asid_transition(&mut self, cpu: CpuId, mm: MmId, start: u64, end: u64) {
        let Some(s) = &self.invlpgb else { return };
        if !s.in_transition(mm) {
            return;
        }
        let straggler = self.mms[mm]
            .cpumask
            .iter()
            .any(|c| self.cpus[c].loaded_mm == Some(mm) && !s.on_global[c]);
        if straggler {
            let info = super::tlb::FlushTlbInfo {
                mm: Some(mm),
                start,
                end,
                new_tlb_gen: Some(self.mms[mm].tlb_gen),
                // native_flush_tlb_multi in transition is on_each_cpu_mask, as with freed
                // tables: no should_flush_tlb filter.
                freed_tables: true,
                trim_cpumask: false,
            };
            let mask = self.mms[mm].cpumask.clone();
            self.flush_tlb_multi(cpu, &mask, &info);
        } else if let Some(s) = &mut self.invlpgb {
            s.transition[mm] = false;
        }
    }

    /// consider_global_asid, after an IPI flush of `mm` from `cpu`.
    pub fn consider_global_asid(&mut self, cpu: CpuId, mm: MmId) {
        let Some(s) = &self.invlpgb else { return };
        if s.global(mm) || s.global_asids >= GLOBAL_ASID_POOL {
            return;
        }
        let pid = self.cpus[cpu].curr.map_or(0, |t| t as u64);
        let jiffies = self.cpus[cpu].clock / self.cfg.tick_ns;
        if pid & 0x1f != jiffies & 0x1f {
            return;
        }
        // mm_active_cpus_exceeds(mm, 3): CPUs that have it loaded and are not lazy.
        let active = self.mms[mm]
            .cpumask
            .iter()
            .filter(|&c| self.cpus[c].loaded_mm == Some(mm) && !self.cpus[c].is_lazy)
            .count();
        if active > GLOBAL_ASID_THRESHOLD {
            if let Some(s) = &mut self.invlpgb {
                s.assign(mm);
            }
        }
    }

    /// switch_mm_irqs_off / flush_tlb_func moving `cpu` to (or off) its mm's global ASID.
    /// Returns true when the loaded ASID is global: broadcasts keep it current, no flush due.
    pub fn invlpgb_load_asid(&mut self, cpu: CpuId, mm: Option<MmId>) -> bool {
        let Some(s) = &mut self.invlpgb else {
            return false;
        };
        let g = mm.is_some_and(|m| s.global(m));
        s.on_global[cpu] = g;
        g
    }
}
