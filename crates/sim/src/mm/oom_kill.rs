//! The memcg OOM killer (mm/oom_kill.c) and process exit (exit_mmap). stress-ng restarts an
//! OOM-killed worker at once, so the victim's mm is torn down and reused as a fresh process.

use crate::kernel::{CpuId, Kernel, MmId};
use crate::mm::folio::pg;
use crate::mm::pgtable::*;
use crate::mm::vmstat::VmEventItem::*;

impl Kernel {
    /// mem_cgroup_out_of_memory: kill the mm with the highest oom_badness (rss + swap).
    /// Returns false when there is nothing to kill.
    pub fn mem_cgroup_out_of_memory(&mut self, _cpu: CpuId) -> bool {
        let victim = (0..self.mms.len())
            .filter(|&m| self.mms[m].backing == crate::kernel::Backing::Anon)
            .max_by_key(|&m| (self.mms[m].rss + self.mms[m].swapents, std::cmp::Reverse(m)));
        let Some(victim) = victim else {
            return false;
        };
        if self.mms[victim].rss + self.mms[victim].swapents == 0 {
            return false;
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
                    self.swap.free_slot();
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
                        self.swap.free_slot();
                    }
                    self.memcg.uncharge(1);
                    self.folios.free(pfn);
                } else {
                    // Isolated by reclaim (preempted with `sim.interleave = "folio"`): the zap
                    // drops only the mapping's reference; reclaim's last put frees the folio,
                    // its charge and its swap slot (free_folio_batch, move_folios_to_lru).
                    f.set(pg::ORPHAN);
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
    }
}
