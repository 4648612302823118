//! The memory cgroup (mm/memcontrol.c): page_counter charge against the limit with the per-CPU
//! stock (MEMCG_CHARGE_BATCH), limit reclaim with its retry rules, the memcg OOM killer, and
//! the flushed statistics reclaim's heuristics read (memcg_vmstats, flush_memcg_stats_dwork).

use crate::cputime::Spent;
use crate::kernel::{CpuId, Kernel};
use crate::mm::folio::NR_LRU_LISTS;
use crate::mm::oom_kill::RatelimitState;
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
    /// oom_kill_process's oom_rs: how many OOM reports were printed in the current interval.
    pub oom_rs: RatelimitState,
    /// The statistics as last flushed: what lruvec_page_state returns.
    pub vmstats: MemcgVmstats,
}

/// FLUSH_TIME: flush_memcg_stats_dwork's period (2 * HZ).
pub const FLUSH_TIME_NS: u64 = 2_000_000_000;

/// When the periodic flush first runs after a run starts. The work has run every FLUSH_TIME
/// since boot, so its phase against a run's start is anywhere in [0, FLUSH_TIME); an
/// estimate: the middle of that range.
pub const FLUSH_PHASE_NS: u64 = FLUSH_TIME_NS / 2;

/// memcg_vmstats' aggregated counters that reclaim reads through lruvec_page_state (the LRU
/// sizes for inactive_is_low and workingset_test_recent, the refault activations for
/// prepare_scan_control and snapshot_refaults). Updates go to per-CPU counters and reach these
/// only when the stats are flushed; reclaim's own flush, mem_cgroup_flush_stats_ratelimited,
/// flushes only when the periodic work is a full cycle late, so in practice the values are the
/// periodic flush's, up to FLUSH_TIME old. A memcg starts with all of them zero.
#[derive(Clone, Copy, Debug)]
pub struct MemcgVmstats {
    pub lru: [u64; NR_LRU_LISTS],
    /// WORKINGSET_ACTIVATE_ANON, WORKINGSET_ACTIVATE_FILE.
    pub workingset_activate: [u64; 2],
    /// When flush_memcg_stats_dwork runs next.
    pub next_flush: u64,
}

impl Default for MemcgVmstats {
    fn default() -> Self {
        MemcgVmstats {
            lru: [0; NR_LRU_LISTS],
            workingset_activate: [0; 2],
            next_flush: FLUSH_PHASE_NS,
        }
    }
}

pub enum Charge {
    Ok,
    /// The charging task sleeps (reclaim_throttle) and retries the allocation afterwards.
    Throttled,
    /// The memcg OOM killer ran (the victim is gone; the faulting task retries or died).
    Oom,
}

/// What a __GFP_NORETRY charge of a readahead folio came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoretryCharge {
    Ok,
    /// Its reclaim sleeps in reclaim_throttle; the charge goes on after the sleep.
    Throttled,
    /// -ENOMEM: reclaim (twice, the per-CPU stocks drained between) left no room.
    Failed,
}

impl MemCgroup {
    pub fn new(limit: u64, cpus: usize) -> MemCgroup {
        MemCgroup {
            limit,
            usage: 0,
            stock: vec![0; cpus],
            max_usage: 0,
            oom_kills: 0,
            oom_rs: RatelimitState::default(),
            vmstats: MemcgVmstats::default(),
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
    /// flush_memcg_stats_dwork, polled with a CPU's clock: once that clock has passed the
    /// work's time, the counters are flushed as they stand and the work is queued again.
    pub fn flush_memcg_stats_dwork(&mut self, now: u64) {
        let v = &mut self.memcg.vmstats;
        if now < v.next_flush {
            return;
        }
        while v.next_flush <= now {
            v.next_flush += FLUSH_TIME_NS;
        }
        self.mem_cgroup_flush_stats();
    }

    /// mem_cgroup_flush_stats → do_flush_stats: the counters as they stand become what
    /// lruvec_page_state returns. Besides the periodic work, the memcg OOM report flushes
    /// (mm/oom_kill.rs).
    pub fn mem_cgroup_flush_stats(&mut self) {
        let v = &mut self.memcg.vmstats;
        for (lru, n) in v.lru.iter_mut().enumerate() {
            *n = self.lruvec.size(lru as u8);
        }
        v.workingset_activate = [
            self.vmstat[WORKINGSET_ACTIVATE_ANON],
            self.vmstat[WORKINGSET_ACTIVATE_FILE],
        ];
    }

    /// lruvec_page_state(lruvec, NR_LRU_BASE + lru): the list's size at the last flush.
    pub fn lruvec_page_state_lru(&self, lru: u8) -> u64 {
        self.memcg.vmstats.lru[lru as usize]
    }

    /// The charge without reclaim: consume_stock, else page_counter_try_charge of a batch
    /// (refill_stock with the surplus) or of just `nr`.
    fn charge_fast(&mut self, cpu: CpuId, nr: u64) -> bool {
        if self.memcg.stock[cpu] >= nr {
            self.memcg.stock[cpu] -= nr;
            return true;
        }
        let batch = MEMCG_CHARGE_BATCH.max(nr);
        self.charge(cpu, self.cost.memcg_charge, Spent::MemcgCharge);
        if self.memcg.try_counter(batch) {
            self.memcg.stock[cpu] += batch - nr;
            return true;
        }
        batch > nr && self.memcg.try_counter(nr)
    }

    /// try_charge_memcg with __GFP_NORETRY: reclaim, retry while that made room, drain the
    /// per-CPU stocks once, then give up (`goto nomem`) instead of the retry loop, throttling
    /// or the OOM killer; a reclaim that stopped at a reclaim_throttle sleep counts as one
    /// that made no room. Swap readahead's simplified charge (mm/swap_state.rs); page-cache
    /// readahead uses [`Self::try_charge_readahead`]. Returns whether the charge succeeded.
    pub fn try_charge_noretry(&mut self, cpu: CpuId, nr: u64) -> bool {
        self.try_charge_gfp_noretry(cpu, nr, &mut false, false) == NoretryCharge::Ok
    }

    /// try_charge_memcg with readahead_gfp_mask (__GFP_NORETRY) for a page-cache readahead
    /// folio (filemap_add_folio from page_cache_ra_order / page_cache_ra_unbounded). As in
    /// [`Self::try_charge_noretry`], except where its reclaim sleeps: the kernel's
    /// try_to_free_mem_cgroup_pages sleeps in reclaim_throttle (shrink_inactive_list, cgroup
    /// v1, every folio taken dirty) and goes on reclaiming after it, and only then checks
    /// the margin; the model ends the reclaim call at the sleep, so the charge returns
    /// `Throttled` and is taken up again after the sleep. `drained` carries drain_all_stock's
    /// once-only flag over the sleep.
    pub fn try_charge_readahead(
        &mut self,
        cpu: CpuId,
        nr: u64,
        drained: &mut bool,
    ) -> NoretryCharge {
        self.try_charge_gfp_noretry(cpu, nr, drained, true)
    }

    /// The __GFP_NORETRY loop both share; `stop_at_sleep` returns `Throttled` where the
    /// reclaim stopped at a reclaim_throttle sleep instead of counting it as no progress.
    fn try_charge_gfp_noretry(
        &mut self,
        cpu: CpuId,
        nr: u64,
        drained: &mut bool,
        stop_at_sleep: bool,
    ) -> NoretryCharge {
        loop {
            if self.charge_fast(cpu, nr) {
                return NoretryCharge::Ok;
            }
            self.try_to_free_mem_cgroup_pages(cpu, nr);
            if self.memcg.margin() >= nr {
                continue;
            }
            if stop_at_sleep && self.sleep_pending(cpu) {
                self.vmstat.count_vm_event(READAHEAD_CHARGE_THROTTLED);
                return NoretryCharge::Throttled;
            }
            if !*drained {
                *drained = true;
                self.memcg.drain_all_stock();
                continue;
            }
            // if (gfp_mask & __GFP_NORETRY) goto nomem;
            self.vmstat.count_vm_event(READAHEAD_CHARGE_FAILURES);
            return NoretryCharge::Failed;
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
            let r = self.try_to_free_mem_cgroup_pages_opts(cpu, batch, true);
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
