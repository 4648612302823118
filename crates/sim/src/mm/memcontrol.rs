//! The memory cgroup (mm/memcontrol.c): page_counter charge against the limit with the per-CPU
//! stock (MEMCG_CHARGE_BATCH), limit reclaim with its retry rules, and the memcg OOM killer.

use crate::kernel::{CpuId, Kernel};
use crate::mm::vmstat::VmEventItem::*;

/// MEMCG_CHARGE_BATCH.
pub const MEMCG_CHARGE_BATCH: u64 = 64;
/// MAX_RECLAIM_RETRIES.
pub const MAX_RECLAIM_RETRIES: u32 = 16;
/// 1 << PAGE_ALLOC_COSTLY_ORDER.
const COSTLY_PAGES: u64 = 8;

pub struct MemCgroup {
    /// memory.limit_in_bytes in pages.
    pub limit: u64,
    /// page_counter usage: charged pages, including pages held in per-CPU stocks.
    pub usage: u64,
    /// memcg_stock_pcp: pre-charged pages per CPU.
    pub stock: Vec<u64>,
    pub max_usage: u64,
    pub oom_kills: u64,
}

pub enum Charge {
    Ok,
    /// The charging task sleeps (reclaim_throttle) and retries the allocation afterwards.
    Throttled,
    /// The memcg OOM killer ran (the victim is gone; the faulting task retries or died).
    Oom,
}

impl MemCgroup {
    pub fn new(limit: u64, cpus: usize) -> MemCgroup {
        MemCgroup {
            limit,
            usage: 0,
            stock: vec![0; cpus],
            max_usage: 0,
            oom_kills: 0,
        }
    }

    /// page_counter_try_charge.
    fn try_counter(&mut self, nr: u64) -> bool {
        if self.usage + nr <= self.limit {
            self.usage += nr;
            self.max_usage = self.max_usage.max(self.usage);
            true
        } else {
            false
        }
    }

    /// page_counter_uncharge (mem_cgroup_uncharge_folios on reclaim's free batch).
    pub fn uncharge(&mut self, nr: u64) {
        self.usage -= nr;
    }

    /// drain_all_stock: give every CPU's pre-charge back to the counter.
    pub(crate) fn drain_all_stock(&mut self) {
        for s in &mut self.stock {
            self.usage -= *s;
            *s = 0;
        }
    }

    pub fn margin(&self) -> u64 {
        self.limit.saturating_sub(self.usage)
    }

    /// Pages charged to folios (usage minus stocks).
    pub fn charged_pages(&self) -> u64 {
        self.usage - self.stock.iter().sum::<u64>()
    }
}

impl Kernel {
    /// The charge without reclaim: consume_stock, else page_counter_try_charge of a batch
    /// (refill_stock with the surplus) or of just `nr`.
    fn charge_fast(&mut self, cpu: CpuId, nr: u64) -> bool {
        if self.memcg.stock[cpu] >= nr {
            self.memcg.stock[cpu] -= nr;
            return true;
        }
        let batch = MEMCG_CHARGE_BATCH.max(nr);
        self.charge(cpu, self.cost.memcg_charge);
        if self.memcg.try_counter(batch) {
            self.memcg.stock[cpu] += batch - nr;
            return true;
        }
        batch > nr && self.memcg.try_counter(nr)
    }

    /// try_charge_memcg with __GFP_NORETRY (readahead_gfp_mask): reclaim, retry while that
    /// made room, drain the per-CPU stocks once, then give up (`goto nomem`) instead of the
    /// retry loop, throttling or the OOM killer. Returns whether the charge succeeded.
    pub fn try_charge_noretry(&mut self, cpu: CpuId, nr: u64) -> bool {
        let mut drained = false;
        loop {
            if self.charge_fast(cpu, nr) {
                return true;
            }
            self.try_to_free_mem_cgroup_pages(cpu, nr);
            if self.memcg.margin() >= nr {
                continue;
            }
            if !drained {
                drained = true;
                self.memcg.drain_all_stock();
                continue;
            }
            self.vmstat.count_vm_event(READAHEAD_CHARGE_FAILURES);
            return false;
        }
    }

    /// try_charge_memcg for `nr` pages from `cpu`, reclaiming synchronously on that CPU.
    pub fn try_charge(&mut self, cpu: CpuId, nr: u64) -> Charge {
        let mut retries = MAX_RECLAIM_RETRIES;
        let mut drained = false;
        loop {
            if self.charge_fast(cpu, nr) {
                return Charge::Ok;
            }
            let reclaimed = self.try_to_free_mem_cgroup_pages(cpu, nr);
            if self.memcg.margin() >= nr {
                continue;
            }
            if self.sleep_pending(cpu) {
                // Reclaim stopped in reclaim_throttle: the charge is retried after the sleep.
                return Charge::Throttled;
            }
            if !drained {
                drained = true;
                self.memcg.drain_all_stock();
                continue;
            }
            if reclaimed > 0 && nr <= COSTLY_PAGES {
                continue;
            }
            if reclaimed == 0 && self.reclaim_throttle_writeback(cpu) {
                if self.sleep_pending(cpu) {
                    // The task sleeps in reclaim_throttle; the fault is retried after it.
                    return Charge::Throttled;
                }
                continue;
            }
            if retries > 0 {
                retries -= 1;
                continue;
            }
            if !self.mem_cgroup_out_of_memory(cpu) {
                // Nothing killable (e.g. all memory is dirty page cache): the kernel would
                // retry the fault forever. Force the charge and fail the run's invariants.
                self.invariant_fail(format!(
                    "memcg OOM with no killable task on CPU {cpu}; charge forced over the limit"
                ));
                self.memcg.usage += nr;
                return Charge::Ok;
            }
            return Charge::Oom;
        }
    }
}

impl Kernel {
    /// memory.reclaim (memory_reclaim): proactive reclaim of `nr` pages on `cpu`, in batches of
    /// a quarter of what is left (at least SWAP_CLUSTER_MAX), giving up after
    /// MAX_RECLAIM_RETRIES passes without progress.
    pub fn memory_reclaim(&mut self, cpu: CpuId, nr: u64) -> u64 {
        let mut done = 0;
        let mut retries = MAX_RECLAIM_RETRIES;
        while done < nr {
            let batch = ((nr - done) / 4)
                .max(crate::mm::vmscan::SWAP_CLUSTER_MAX)
                .min(nr - done);
            let r = self.try_to_free_mem_cgroup_pages(cpu, batch);
            if r == 0 {
                if retries == 0 {
                    break;
                }
                retries -= 1;
            }
            done += r;
        }
        done
    }
}
