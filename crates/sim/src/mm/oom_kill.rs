//! The memcg OOM killer (mm/oom_kill.c) and process exit (exit_mmap). stress-ng restarts an
//! OOM-killed worker at once, so the victim's mm is torn down and reused as a fresh process.

use crate::kernel::{CpuId, Kernel, MmId};
use crate::mm::folio::pg;
use crate::mm::pgtable::*;
use crate::mm::vmstat::VmEventItem::*;

/// DEFAULT_RATELIMIT_INTERVAL (5 * HZ) and DEFAULT_RATELIMIT_BURST, oom_rs's limits.
const OOM_RS_INTERVAL_NS: u64 = 5_000_000_000;
const OOM_RS_BURST: u32 = 10;

/// A ratelimit_state (lib/ratelimit.c) with oom_rs's interval and burst.
#[derive(Clone, Copy, Debug, Default)]
pub struct RatelimitState {
    /// Start of the current interval; None before the first call.
    begin: Option<u64>,
    printed: u32,
}

impl RatelimitState {
    /// ___ratelimit: true while fewer than the burst have passed in the current interval; an
    /// interval that has run out starts a new one.
    pub fn ratelimit(&mut self, now: u64) -> bool {
        match self.begin {
            Some(b) if now <= b + OOM_RS_INTERVAL_NS => {}
            _ => {
                self.begin = Some(now);
                self.printed = 0;
            }
        }
        if self.printed < OOM_RS_BURST {
            self.printed += 1;
            true
        } else {
            false
        }
    }
}

impl Kernel {
    /// mem_cgroup_out_of_memory: kill the mm with the highest oom_badness (rss + swap).
    /// Returns false when there is nothing to kill.
    ///
    /// oom_kill_process prints the OOM report (dump_header) unless oom_rs ratelimits it, and
    /// for a memcg OOM the report's memory.stat dump (mem_cgroup_print_oom_meminfo →
    /// memcg_stat_format) flushes the memcg's statistics first: reclaim after the kill reads
    /// the lists as they stood at the OOM, not as the periodic flush last left them.
    pub fn mem_cgroup_out_of_memory(&mut self, cpu: CpuId) -> bool {
        let victim = (0..self.mms.len())
            .filter(|&m| self.mms[m].backing == crate::kernel::Backing::Anon)
            .max_by_key(|&m| (self.mms[m].rss + self.mms[m].swapents, std::cmp::Reverse(m)));
        let Some(victim) = victim else {
            return false;
        };
        if self.mms[victim].rss + self.mms[victim].swapents == 0 {
            return false;
        }
        let now = self.cpus[cpu].clock;
        if self.memcg.oom_rs.ratelimit(now) {
            self.mem_cgroup_flush_stats();
        }
        self.vmstat.count_vm_event(OOM_KILL);
        self.memcg.oom_kills += 1;
        self.exit_mmap(victim);
        true
    }

    /// exit_mmap + the restart of the process on the same CPUs.
    pub fn exit_mmap(&mut self, mm: MmId) {
        let n = self.mms[mm].ptes.len();
        for vp in 0..n {
            let pte = self.mms[mm].ptes[vp];
            let pfn = if is_zero_pte(pte) {
                None
            } else if pte_present(pte) || (is_swap_pte(pte) && pte & PTE_SWPCACHE != 0) {
                Some(pte_pfn(pte))
            } else {
                if is_swap_pte(pte) {
                    self.swap.free_slot(mm, vp as u64);
                }
                None
            };
            if let Some(pfn) = pfn {
                if self.swap.block.is_some() {
                    self.swap_forget_io(pfn);
                }
                self.oracle_discard(pfn);
                let f = self.folios.get_mut(pfn);
                f.clear(pg::MAPPED);
                if f.test(pg::LRU) {
                    // The last reference: __folio_put → __page_cache_release, then freed.
                    let swapcache = f.test(pg::SWAPCACHE);
                    self.lruvec.del(&mut self.folios, pfn);
                    if swapcache {
                        self.swap.free_slot(mm, vp as u64);
                    }
                    self.memcg.uncharge(1);
                    self.folios.free(pfn);
                } else {
                    // Isolated by reclaim (preempted with `sim.interleave = "folio"`) or still in
                    // a CPU's lru_add batch: the zap drops only the mapping's reference; the
                    // holder's last put frees the folio, its charge and its swap slot
                    // (free_folio_batch, move_folios_to_lru, folio_batch_move_lru).
                    f.set(pg::ORPHAN);
                    if f.test(pg::SWAPCACHE) {
                        self.swap.orphan_slot(mm, vp as u64, pfn);
                    }
                }
            }
            self.mms[mm].ptes[vp] = PTE_NONE;
        }
        self.swap_exit_mm(mm);
        let m = &mut self.mms[mm];
        m.rss = 0;
        m.swapents = 0;
        m.incarnation += 1;
        m.pmd_mapped.clear();
        m.pte_tables.fill(false);
        m.tlb_gen += 1;
        m.cpumask.clear_all();
        let gen = m.tlb_gen;
        for cpu in 0..self.nr_cpus() {
            self.cpus[cpu].tlb.flush_mm(mm);
            self.cpus[cpu].tlb.local_gen[mm] = gen;
            if self.cpus[cpu].loaded_mm == Some(mm) {
                if self.cpus[cpu].is_lazy {
                    self.switch_to_init_mm(cpu);
                } else {
                    self.mms[mm].cpumask.set(cpu);
                }
            }
        }
        for t in &mut self.tasks {
            if t.mm == mm {
                t.cursor = t.start;
                t.phase = 0;
            }
        }
        self.mms[mm].data_phase = 0;
    }
}
