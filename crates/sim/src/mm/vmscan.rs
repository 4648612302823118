//! Page reclaim, classic two-list LRU (mm/vmscan.c, Linux 6.18 semantics; see
//! docs/sim-model.md). Memcg limit reclaim runs synchronously on the charging CPU and charges
//! its clock as it goes, so the IPIs it sends are timed at the point they happen.

use crate::config::Patch;
use crate::cputime::Spent;
use crate::kernel::{CpuId, Kernel, MmId};
use crate::locking::{LockId, PAGE_CACHE_DELETE_LINES};
use crate::mm::folio::*;
use crate::mm::mm_types_task::TlbUbc;
use crate::mm::pgtable::*;
use crate::mm::rmap::TTU_BATCH_FLUSH;
use crate::mm::vmpressure::Vmpr;
use crate::mm::vmstat::VmEventItem::*;

pub const SWAP_CLUSTER_MAX: u64 = 32;
/// How many folios ahead of the one it takes isolate_lru_folios prefetches (a hint for the
/// host's cache; no effect on any result). 16 rather than 8: the isolation's share of a
/// profile fell from 5.8% to 4.1% (docs/results/2026-11-27-speed-10.md).
const ISOLATE_PREFETCH: usize = 16;
pub const DEF_PRIORITY: i32 = 12;
/// The lru_note_cost weight of one page of I/O.
const SWAP_COST: u64 = SWAP_CLUSTER_MAX;

/// struct scan_control (the fields we use).
#[derive(Clone, Debug)]
pub struct ScanControl {
    pub nr_to_reclaim: u64,
    pub nr_reclaimed: u64,
    pub nr_scanned: u64,
    pub priority: i32,
    /// Bit 0 anon, bit 1 file.
    pub may_deactivate: u8,
    pub force_deactivate: bool,
    pub skipped_deactivate: bool,
    pub may_swap: bool,
    /// memory.reclaim's reclaim (MEMCG_RECLAIM_PROACTIVE): no vmpressure.
    pub proactive: bool,
    /// Whose vmpressure the reclaim feeds: the memcg's (limit reclaim) or the root's (global).
    pub vmpr: Vmpr,
}

impl ScanControl {
    /// A scan_control for one reclaim call: `nr_to_reclaim` pages at `priority`, swap allowed.
    pub fn new(nr_to_reclaim: u64, priority: i32) -> ScanControl {
        ScanControl {
            nr_to_reclaim,
            nr_reclaimed: 0,
            nr_scanned: 0,
            priority,
            may_deactivate: 0,
            force_deactivate: false,
            skipped_deactivate: false,
            may_swap: true,
            proactive: false,
            vmpr: Vmpr::Memcg,
        }
    }
}

/// shrink_lruvec's loop state: what is left to scan of each list, the targets
/// get_scan_count set, and the pages the loop has reclaimed so far.
#[derive(Clone, Debug, Default)]
pub struct LruvecScan {
    nr: [u64; NR_LRU_LISTS],
    targets: [u64; NR_LRU_LISTS],
    nr_reclaimed: u64,
}

#[derive(PartialEq, Eq, Clone, Copy, Debug)]
enum FolioRef {
    Reclaim,
    ReclaimClean,
    Keep,
    Activate,
}

/// struct reclaim_stat (what we use).
#[derive(Default)]
pub(crate) struct ReclaimStat {
    nr_pageout: u64,
    nr_activate: u64,
    /// Page-cache pages found dirty and not yet under writeback (folio_check_dirty_writeback).
    pub nr_unqueued_dirty: u64,
    /// Pages found under writeback (tagged PG_reclaim and reactivated).
    pub nr_writeback: u64,
}

fn is_file_lru(lru: u8) -> bool {
    lru >= LRU_INACTIVE_FILE
}
fn is_active_lru(lru: u8) -> bool {
    lru == LRU_ACTIVE_ANON || lru == LRU_ACTIVE_FILE
}

impl Kernel {
    /// try_to_free_mem_cgroup_pages → do_try_to_free_pages for the (single) memcg.
    pub fn try_to_free_mem_cgroup_pages(&mut self, cpu: CpuId, nr_pages: u64) -> u64 {
        self.try_to_free_mem_cgroup_pages_opts(cpu, nr_pages, false)
    }

    /// try_to_free_mem_cgroup_pages with MEMCG_RECLAIM_PROACTIVE or not (memory.reclaim).
    pub(crate) fn try_to_free_mem_cgroup_pages_opts(
        &mut self,
        cpu: CpuId,
        nr_pages: u64,
        proactive: bool,
    ) -> u64 {
        let t0 = self.cpus[cpu].clock;
        self.vmstat.count_vm_event(DIRECT_RECLAIMS);
        let mut sc = ScanControl::new(nr_pages.max(SWAP_CLUSTER_MAX), DEF_PRIORITY);
        sc.proactive = proactive;
        loop {
            loop {
                if !sc.proactive {
                    self.vmpressure_prio(cpu, sc.vmpr, sc.priority);
                }
                self.shrink_node(cpu, &mut sc);
                if sc.nr_reclaimed >= sc.nr_to_reclaim || self.sleep_pending(cpu) {
                    // A reclaimer that went to sleep in reclaim_throttle goes on only after
                    // it: the call ends here and the charge is retried after the sleep.
                    break;
                }
                sc.priority -= 1;
                if sc.priority < 0 {
                    break;
                }
            }
            self.snapshot_refaults();
            if sc.nr_reclaimed > 0 || self.sleep_pending(cpu) {
                break;
            }
            // Nothing reclaimed: retry once with forced deactivation.
            if sc.skipped_deactivate && !sc.force_deactivate {
                sc.priority = DEF_PRIORITY;
                sc.force_deactivate = true;
                sc.skipped_deactivate = false;
                continue;
            }
            break;
        }
        // The classic LRU wakes the flusher from shrink_inactive_list (every folio taken
        // dirty and unqueued), MGLRU from its own loop (mm/lru_gen.rs); do_try_to_free_pages
        // itself wakes nobody.
        self.writeback_queue.clear();
        self.vmstat
            .count_vm_events(RECLAIM_NS, self.cpus[cpu].clock - t0);
        sc.nr_reclaimed
    }

    /// snapshot_refaults at the end of a reclaim call: the refault activations as the memcg's
    /// flushed statistics have them.
    pub(crate) fn snapshot_refaults(&mut self) {
        self.lruvec.refaults_snapshot = self.memcg.vmstats.workingset_activate;
    }

    /// inactive_is_low: inactive * int_sqrt(10 * GB) < active, with the list sizes of the
    /// memcg's flushed statistics (lruvec_page_state), not the lists' own counts.
    fn inactive_is_low(&self, inactive_lru: u8) -> bool {
        let inactive = self.lruvec_page_state_lru(inactive_lru);
        let active = self.lruvec_page_state_lru(inactive_lru + 1);
        let gb = (inactive + active) >> 18;
        let ratio = if gb > 0 {
            ((10 * gb) as f64).sqrt() as u64
        } else {
            1
        };
        inactive * ratio < active
    }

    fn can_reclaim_anon_pages(&self, sc: &ScanControl) -> bool {
        sc.may_swap && self.swap.used < self.swap.total
    }

    /// shrink_node with prepare_scan_control, for the one memcg lruvec.
    /// shrink_node, returning the (scanned, stolen) pages it added to the vmstat counters (for
    /// the per-reclaimer counts kswapd and global direct reclaim keep).
    pub(crate) fn shrink_node_counted(&mut self, cpu: CpuId, sc: &mut ScanControl) -> (u64, u64) {
        let scanned = self.vmstat[PGSCAN_ANON] + self.vmstat[PGSCAN_FILE];
        let stolen = self.vmstat[PGSTEAL_ANON] + self.vmstat[PGSTEAL_FILE];
        self.shrink_node(cpu, sc);
        (
            self.vmstat[PGSCAN_ANON] + self.vmstat[PGSCAN_FILE] - scanned,
            self.vmstat[PGSTEAL_ANON] + self.vmstat[PGSTEAL_FILE] - stolen,
        )
    }

    pub(crate) fn shrink_node(&mut self, cpu: CpuId, sc: &mut ScanControl) {
        let (scanned, reclaimed) = (sc.nr_scanned, sc.nr_reclaimed);
        self.prepare_scan_control(sc);
        self.shrink_lruvec(cpu, sc);
        self.shrink_node_vmpressure(cpu, sc, scanned, reclaimed);
    }

    /// The end of shrink_node's pass: the subtree's reclaim efficiency into vmpressure
    /// (`scanned`, `reclaimed`: the pass's starting counts).
    pub(crate) fn shrink_node_vmpressure(
        &mut self,
        cpu: CpuId,
        sc: &ScanControl,
        scanned: u64,
        reclaimed: u64,
    ) {
        if !sc.proactive {
            self.vmpressure(
                cpu,
                sc.vmpr,
                sc.nr_scanned - scanned,
                sc.nr_reclaimed - reclaimed,
            );
        }
    }

    /// shrink_node's prepare_scan_control: which active lists may be deactivated.
    pub(crate) fn prepare_scan_control(&self, sc: &mut ScanControl) {
        sc.may_deactivate = 0;
        // prepare_scan_control: refaults observed since the last reclaim's snapshot, as the
        // flushed statistics show them (mem_cgroup_flush_stats_ratelimited flushes only when
        // the periodic flush is a full cycle late).
        let refaults = self.memcg.vmstats.workingset_activate;
        for (t, lru) in [(0usize, LRU_INACTIVE_ANON), (1, LRU_INACTIVE_FILE)] {
            if sc.force_deactivate
                || refaults[t] != self.lruvec.refaults_snapshot[t]
                || self.inactive_is_low(lru)
            {
                sc.may_deactivate |= 1 << t;
            }
        }
    }

    /// get_scan_count: how many pages of each list to scan at this priority.
    fn get_scan_count(&self, sc: &ScanControl) -> [u64; NR_LRU_LISTS] {
        let swappiness = self.swappiness;
        // scan_balance
        enum Balance {
            Equal,
            Fract,
            Anon,
            File,
        }
        let balance = if !self.can_reclaim_anon_pages(sc) || swappiness == 0 {
            Balance::File
        } else if sc.priority == 0 {
            Balance::Equal
        } else {
            // file_is_tiny / cache_trim_mode are root-reclaim only: FRACT for memcg reclaim.
            Balance::Fract
        };
        let _ = Balance::Anon;
        let (ap, fp) = {
            let total = self.lruvec.anon_cost + self.lruvec.file_cost;
            let a = total + self.lruvec.anon_cost;
            let f = total + self.lruvec.file_cost;
            (
                swappiness * (a + f + 1) / (a + 1),
                (200 - swappiness) * (a + f + 1) / (f + 1),
            )
        };
        let denominator = ap + fp;
        let mut nr = [0u64; NR_LRU_LISTS];
        for lru in 0..NR_LRU_LISTS as u8 {
            let size = self.lruvec.size(lru);
            let scan = size >> sc.priority;
            let file = is_file_lru(lru);
            nr[lru as usize] = match balance {
                Balance::Equal => scan,
                Balance::Fract => scan * if file { fp } else { ap } / denominator.max(1),
                Balance::File => {
                    if file {
                        scan
                    } else {
                        0
                    }
                }
                Balance::Anon => {
                    if file {
                        0
                    } else {
                        scan
                    }
                }
            };
        }
        nr
    }

    /// shrink_lruvec: scan the lists in SWAP_CLUSTER_MAX chunks, then age anon if needed.
    fn shrink_lruvec(&mut self, cpu: CpuId, sc: &mut ScanControl) {
        if self.has(Patch::Mglru) {
            // lru_gen_enabled() && !root_reclaim(sc): memcg reclaim.
            self.lru_gen_shrink_lruvec(cpu, sc);
            return;
        }
        let mut scan = self.shrink_lruvec_start(sc);
        while self.shrink_lruvec_round(cpu, sc, &mut scan) {}
        self.shrink_lruvec_finish(cpu, sc, &scan);
    }

    /// shrink_lruvec's set-up: get_scan_count's targets (classic LRU only).
    pub(crate) fn shrink_lruvec_start(&self, sc: &ScanControl) -> LruvecScan {
        let nr = self.get_scan_count(sc);
        LruvecScan {
            nr,
            targets: nr,
            nr_reclaimed: 0,
        }
    }

    /// One round of shrink_lruvec's loop: up to SWAP_CLUSTER_MAX pages of each list, then
    /// the loop's cond_resched() and its target check. Returns whether the loop goes on:
    /// a caller that stops between rounds (kswapd, preempted there) resumes with `scan`.
    #[allow(clippy::needless_range_loop)]
    pub(crate) fn shrink_lruvec_round(
        &mut self,
        cpu: CpuId,
        sc: &mut ScanControl,
        scan: &mut LruvecScan,
    ) -> bool {
        let (ia, aa, ifl, af) = (0usize, 1usize, 2usize, 3usize);
        let nr = &mut scan.nr;
        if nr[ia] == 0 && nr[af] == 0 && nr[ifl] == 0 {
            return false;
        }
        for lru in 0..NR_LRU_LISTS {
            if nr[lru] > 0 {
                let n = nr[lru].min(SWAP_CLUSTER_MAX);
                nr[lru] -= n;
                scan.nr_reclaimed += self.shrink_list(cpu, lru as u8, n, sc);
            }
        }
        let nr = &mut scan.nr;
        let targets = &scan.targets;
        if scan.nr_reclaimed < sc.nr_to_reclaim {
            return nr[ia] > 0 || nr[af] > 0 || nr[ifl] > 0;
        }
        // Target met: stop the smaller type, scale the other down (memcg reclaim and kswapd
        // are not proportional_reclaim).
        let nr_file = nr[ifl] + nr[af];
        let nr_anon = nr[ia] + nr[aa];
        if nr_file == 0 || nr_anon == 0 {
            return false;
        }
        let (small, other, pct) = if nr_file > nr_anon {
            let t = targets[ia] + targets[aa] + 1;
            (ia, ifl, nr_anon * 100 / t)
        } else {
            let t = targets[ifl] + targets[af] + 1;
            (ifl, ia, nr_file * 100 / t)
        };
        nr[small] = 0;
        nr[small + 1] = 0;
        for l in [other, other + 1] {
            let scanned = targets[l] - nr[l];
            nr[l] = targets[l] * (100 - pct) / 100;
            nr[l] -= nr[l].min(scanned);
        }
        nr[ia] > 0 || nr[af] > 0 || nr[ifl] > 0
    }

    /// The end of shrink_lruvec: the loop's reclaimed pages into `sc`, then anon aging.
    pub(crate) fn shrink_lruvec_finish(
        &mut self,
        cpu: CpuId,
        sc: &mut ScanControl,
        scan: &LruvecScan,
    ) {
        sc.nr_reclaimed += scan.nr_reclaimed;
        // blk_finish_plug: the loop ran under the task's plug.
        self.swap_plug_finish(cpu);
        if self.can_reclaim_anon_pages(sc) && self.inactive_is_low(LRU_INACTIVE_ANON) {
            self.shrink_active_list(cpu, SWAP_CLUSTER_MAX, LRU_ACTIVE_ANON);
        }
    }

    /// shrink_list.
    fn shrink_list(&mut self, cpu: CpuId, lru: u8, nr: u64, sc: &mut ScanControl) -> u64 {
        if is_active_lru(lru) {
            let t = is_file_lru(lru) as u8;
            if sc.may_deactivate & (1 << t) != 0 {
                self.shrink_active_list(cpu, nr, lru);
            } else {
                sc.skipped_deactivate = true;
            }
            return 0;
        }
        self.shrink_inactive_list(cpu, nr, lru, sc)
    }

    /// isolate_lru_folios: take up to `nr` pages' worth of folios from the tail.
    fn isolate_lru_folios(&mut self, cpu: CpuId, nr: u64, lru: u8) -> Vec<Pfn> {
        let mut out = self.take_list();
        out.reserve(nr as usize);
        let mut taken = 0;
        // The list gives the next folios at once: their records load while earlier ones are
        // taken (mm/lru.rs).
        self.lruvec
            .prefetch_tail(&self.folios, lru, ISOLATE_PREFETCH);
        while taken < nr {
            let Some(pfn) = self
                .lruvec
                .del_tail(&mut self.folios, lru, ISOLATE_PREFETCH)
            else {
                break;
            };
            taken += self.folios.get(pfn).nr_pages();
            out.push(pfn);
        }
        // Under spin_lock_irq(&lruvec->lru_lock): waits when another CPU holds it.
        self.lru_lock_irq_section(
            cpu,
            out.len() as u64 * self.cost.isolate_folio,
            Spent::LruIsolate,
        );
        out
    }

    /// An empty folio list from the spares (its allocation reused).
    pub(crate) fn take_list(&mut self) -> Vec<Pfn> {
        self.spare_lists.pop().unwrap_or_default()
    }

    /// Return a folio list to the spares.
    pub(crate) fn give_list(&mut self, mut list: Vec<Pfn>) {
        list.clear();
        self.spare_lists.push(list);
    }

    /// lru_note_cost: reclaim cost of a type, decayed as the LRU turns over.
    pub fn lru_note_cost(&mut self, file: bool, nr_io: u64, nr_rotated: u64) {
        let cost = nr_io * SWAP_COST + nr_rotated;
        let l = &mut self.lruvec;
        if file {
            l.file_cost += cost;
        } else {
            l.anon_cost += cost;
        }
        if l.anon_cost + l.file_cost > l.total() / 4 {
            l.anon_cost /= 2;
            l.file_cost /= 2;
        }
    }

    /// move_folios_to_lru: put back at the head; active putbacks age the nonresident clock.
    fn move_folios_to_lru(&mut self, cpu: CpuId, list: &[Pfn]) {
        self.lru_putback_locked(cpu, list.len() as u64);
        for &pfn in list {
            if self.put_orphan(pfn) {
                continue;
            }
            self.lruvec.add(&mut self.folios, pfn);
            if self.folios.get(pfn).test(pg::ACTIVE) {
                let n = self.folios.get(pfn).nr_pages();
                self.workingset_age_nonresident(n);
            }
        }
    }

    /// shrink_active_list: deactivate (anon is never kept active for being referenced).
    pub fn shrink_active_list(&mut self, cpu: CpuId, nr: u64, lru: u8) {
        self.lru_add_drain(cpu);
        let list = self.isolate_lru_folios(cpu, nr, lru);
        let scanned: u64 = list.iter().map(|&p| self.folios.get(p).nr_pages()).sum();
        self.vmstat.count_vm_events(PGREFILL, scanned);
        let mut nr_deactivate = 0;
        let nr_rotated = 0;
        for &pfn in &list {
            // The young bits are cleared (and forgotten) here; only VM_EXEC file folios
            // stay active, and we model no executable mappings.
            let _ = self.folio_referenced(cpu, pfn);
            let f = self.folios.get_mut(pfn);
            f.clear(pg::ACTIVE);
            f.set(pg::WORKINGSET);
            nr_deactivate += f.nr_pages();
        }
        self.move_folios_to_lru(cpu, &list);
        self.give_list(list);
        self.vmstat.count_vm_events(PGDEACTIVATE, nr_deactivate);
        self.lru_note_cost(is_file_lru(lru), 0, nr_rotated);
    }

    /// shrink_inactive_list.
    fn shrink_inactive_list(&mut self, cpu: CpuId, nr: u64, lru: u8, sc: &mut ScanControl) -> u64 {
        self.lru_add_drain(cpu);
        let list = self.isolate_lru_folios(cpu, nr, lru);
        if list.is_empty() {
            self.give_list(list);
            return 0;
        }
        let nr_scanned: u64 = list.iter().map(|&p| self.folios.get(p).nr_pages()).sum();
        let file = is_file_lru(lru);
        if file {
            self.vmstat.count_vm_events(PGSCAN_FILE, nr_scanned);
        } else {
            self.vmstat.count_vm_events(PGSCAN_ANON, nr_scanned);
        }
        sc.nr_scanned += nr_scanned;
        let (nr_reclaimed, stat, ret) = self.shrink_folio_list(cpu, list);
        self.move_folios_to_lru(cpu, &ret);
        self.give_list(ret);
        // Every folio taken was dirty and not queued for I/O: the flushers are not keeping
        // up, so wake them (WB_REASON_VMSCAN); on cgroup v1 (!writeback_throttling_sane)
        // the reclaimer also sleeps in reclaim_throttle(VMSCAN_THROTTLE_WRITEBACK).
        if !self.has(Patch::Mglru) && stat.nr_unqueued_dirty == nr_scanned {
            self.wakeup_flusher_threads(cpu);
            if self.cfg.cgroup_v1 {
                self.reclaim_throttle_writeback(cpu);
            }
        }
        if file {
            self.vmstat.count_vm_events(PGSTEAL_FILE, nr_reclaimed);
        } else {
            self.vmstat.count_vm_events(PGSTEAL_ANON, nr_reclaimed);
        }
        let _ = stat.nr_activate;
        self.lru_note_cost(file, stat.nr_pageout, nr_scanned - nr_reclaimed);
        nr_reclaimed
    }

    /// folio_check_references (classic LRU).
    fn folio_check_references(&mut self, cpu: CpuId, pfn: Pfn) -> FolioRef {
        if self.has(Patch::Mglru) {
            return match self.lru_gen_check_references(cpu, pfn) {
                None => FolioRef::Reclaim,
                Some(true) => FolioRef::Activate,
                Some(false) => FolioRef::Keep,
            };
        }
        let referenced_ptes = self.folio_referenced(cpu, pfn);
        let f = self.folios.get_mut(pfn);
        let referenced_folio = f.test_clear(pg::REFERENCED);
        if referenced_ptes > 0 {
            // First trip: mark and keep; a second reference activates.
            f.set(pg::REFERENCED);
            if referenced_folio || referenced_ptes > 1 {
                return FolioRef::Activate;
            }
            return FolioRef::Keep;
        }
        if referenced_folio && f.is_file_lru() {
            return FolioRef::ReclaimClean;
        }
        FolioRef::Reclaim
    }

    /// pageout → swap_writeout. To zram: synchronous compress, the folio is clean after
    /// (returns true). To a block device: the write is started (mm/page_io.rs) and the folio
    /// stays under writeback (returns false: shrink_folio_list keeps it).
    pub(crate) fn pageout(&mut self, cpu: CpuId, pfn: Pfn) -> bool {
        self.oracle_writeout(cpu, pfn, "pageout (swap_writeout)");
        let f = self.folios.get_mut(pfn);
        f.clear(pg::DIRTY);
        let n = f.nr_pages();
        let owner = f.owner as usize;
        self.vmstat.count_vm_events(PSWPOUT, n);
        self.vmstat.count_vm_events(NR_VMSCAN_WRITE, n);
        if self.swap.block.is_some() {
            self.charge(cpu, n * self.cost.swap_writeout, Spent::SwapWriteout);
            self.swap_writepage_bdev(cpu, pfn);
            return false;
        }
        let codec = self.zram_page_ns(owner).0;
        self.charge_parts(
            cpu,
            &[
                (n * codec, Spent::ZramCompress),
                (n * self.cost.swap_writeout, Spent::SwapWriteout),
            ],
        );
        true
    }

    /// __remove_mapping: leave a workingset shadow where the folio was.
    pub(crate) fn remove_mapping(&mut self, cpu: CpuId, pfn: Pfn) {
        let f = *self.folios.get(pfn);
        if f.test(pg::SWAPCACHE) || f.test(pg::ORPHAN) {
            // The swap cache's lock is its cluster's (swap_cluster_get_and_lock_irq, 6.18's
            // swap table), and each CPU allocates from its own cluster: not a shared lock.
            self.charge(cpu, self.cost.remove_mapping, Spent::RemoveMapping);
        } else {
            let locked = self
                .cost
                .page_cache_delete_locked
                .min(self.cost.remove_mapping);
            let file = f.owner as usize;
            self.filemap_release_folio(cpu, pfn);
            let hold = (locked, Spent::RemoveMapping);
            self.lock_irq_section(cpu, LockId::IPages(file), hold, PAGE_CACHE_DELETE_LINES);
            self.charge(cpu, self.cost.remove_mapping - locked, Spent::RemoveMapping);
        }
        if f.test(pg::ORPHAN) {
            // Its mm exited: no page table is left to hold a shadow, only the slot to drop.
            self.orphan_free_swap(pfn);
            return;
        }
        let shadow = self.workingset_eviction(pfn);
        let f = *self.folios.get(pfn);
        if f.test(pg::SWAPCACHE) {
            let pte = &mut self.mms[f.owner as usize].ptes[f.index as usize];
            debug_assert_eq!(*pte, swp_entry_swapcache(pfn));
            *pte = swp_entry_shadow(shadow);
            self.folios.get_mut(pfn).clear(pg::SWAPCACHE);
        } else {
            let start = f.index as usize;
            for slot in
                &mut self.files[f.owner as usize].cache[start..start + f.nr_pages() as usize]
            {
                *slot = swp_entry_shadow(shadow);
            }
        }
    }

    /// Free a batch: memcg uncharge, then try_to_unmap_flush, then free_unref_folios.
    pub(crate) fn free_folio_batch(&mut self, cpu: CpuId, ubc: &mut TlbUbc, batch: &mut Vec<Pfn>) {
        if batch.is_empty() {
            return;
        }
        let n: u64 = batch.iter().map(|&p| self.folios.get(p).nr_pages()).sum();
        self.memcg.uncharge(n);
        self.try_to_unmap_flush(cpu, ubc);
        for pfn in batch.drain(..) {
            if self.paranoid() {
                let f = *self.folios.get(pfn);
                let mm = if f.is_anon() {
                    Some(f.owner as usize)
                } else {
                    self.mm_of_file(f.owner as usize)
                };
                if let Some(mm) = mm {
                    for vp in f.index as u64..f.index as u64 + f.nr_pages() {
                        self.check_no_tlb_maps(mm, vp, pfn);
                    }
                }
            }
            self.oracle_free(cpu, pfn);
            self.folios.free(pfn);
        }
    }

    /// shrink_folio_list: returns (nr_reclaimed, stat, folios to put back).
    pub(crate) fn shrink_folio_list(
        &mut self,
        cpu: CpuId,
        list: Vec<Pfn>,
    ) -> (u64, ReclaimStat, Vec<Pfn>) {
        if self.swap.block.is_some() {
            // Completions by now, as their interrupts would have run them: a long reclaim
            // (the charge's retries) sees its earlier writes end.
            self.end_io(self.cpus[cpu].clock);
        }
        let mut ubc = TlbUbc::new(self.arch, self.nr_cpus());
        let mut stat = ReclaimStat::default();
        let mut ret = self.take_list();
        let mut free = self.take_list();
        free.reserve(self.policy.settings.free_batch);
        let mut dirty = self.take_list();
        let mut nr_reclaimed = 0;
        let mut pgactivate = 0;
        let ttu = if self.has(Patch::TlbBatch) {
            TTU_BATCH_FLUSH
        } else {
            0
        };
        for &pfn in &list {
            // cond_resched() between folios: a preemption point (sim.interleave = "folio";
            // no-op otherwise).
            self.reclaim_cond_resched(cpu);
            self.oracle_prefetch(pfn);
            // The loop's own work on each folio (folio_trylock, the checks, the list moves).
            self.charge(cpu, self.cost.shrink_folio, Spent::ShrinkFolio);
            if self
                .swap
                .read_in_flight(pfn, self.cpus[cpu].clock)
                .is_some()
            {
                // Locked for its swap-in read (mm/page_io.rs): folio_trylock fails, keep.
                ret.push(pfn);
                continue;
            }
            if self.folios.get(pfn).test(pg::ORPHAN) {
                // Its owner exited meanwhile (exit_mmap): only the isolation reference is
                // left. The kernel would still swap it out before __remove_mapping frees it;
                // here it goes straight to the free batch.
                nr_reclaimed += self.free_it(cpu, &mut ubc, pfn, &mut free);
                continue;
            }
            let nr = self.folios.get(pfn).nr_pages();
            // folio_check_dirty_writeback: only page cache is the flushers' business.
            let f = *self.folios.get(pfn);
            if f.is_file_lru() && f.test(pg::DIRTY) && !f.test(pg::WRITEBACK) {
                stat.nr_unqueued_dirty += nr;
            }
            if f.test(pg::WRITEBACK) && self.cfg.cgroup_v1 && f.test(pg::RECLAIM) {
                // Case 3 (cgroup v1, !writeback_throttling_sane, the folio already tagged on
                // an earlier pass): folio_wait_writeback, then the folio goes round again.
                self.reclaim_wait_on_writeback(cpu, pfn);
            }
            let f = *self.folios.get(pfn);
            if f.test(pg::WRITEBACK) {
                // Case 2 (writeback_throttling_sane for cgroup v2, or not yet tagged): tag for
                // immediate reclaim when the write completes, and reactivate.
                self.folios.get_mut(pfn).set(pg::RECLAIM);
                stat.nr_writeback += nr;
                self.folios.get_mut(pfn).set(pg::ACTIVE);
                stat.nr_activate += nr;
                pgactivate += nr;
                ret.push(pfn);
                continue;
            }
            // folio_trylock: reclaim holds the lock until the folio is kept, activated, freed,
            // or (seed 000) put in the dirty batch, and pageout drops it for the write.
            self.folios.get_mut(pfn).set(pg::LOCKED);
            let references = self.folio_check_references(cpu, pfn);
            let activate = match references {
                FolioRef::Activate => true,
                FolioRef::Keep => {
                    self.folios.get_mut(pfn).clear(pg::LOCKED);
                    ret.push(pfn);
                    continue;
                }
                FolioRef::Reclaim | FolioRef::ReclaimClean => false,
            };
            let mut activate = activate;
            if !activate {
                let f = *self.folios.get(pfn);
                if f.is_anon()
                    && f.test(pg::SWAPBACKED)
                    && !f.test(pg::SWAPCACHE)
                    && !self.folio_alloc_swap(cpu, pfn)
                {
                    activate = true;
                }
            }
            if !activate && self.folios.get(pfn).test(pg::MAPPED) {
                let _ = self.try_to_unmap(cpu, &mut ubc, pfn, ttu);
            }
            let mut hold_lock = false;
            if !activate && self.folios.get(pfn).test(pg::DIRTY) {
                if self.folios.get(pfn).is_file_lru() {
                    // Reclaim never writes file folios (6.18): tag for the flusher, activate.
                    // The folio is unlocked next and the flusher may write it.
                    if ubc.writable {
                        self.vmstat.count_vm_event(DIRTY_ACTIVATIONS_FLUSH_PENDING);
                    }
                    if self.has(Patch::FlushDirtyBeforeActivate) {
                        self.try_to_unmap_flush_dirty(cpu, &mut ubc);
                    }
                    hold_lock = ubc.writable && self.has(Patch::UnlockDirtyAfterFlush);
                    self.folios.get_mut(pfn).set(pg::RECLAIM);
                    self.vmstat.count_vm_events(NR_VMSCAN_IMMEDIATE, nr);
                    self.writeback_queue.push(pfn);
                    activate = true;
                } else if references == FolioRef::ReclaimClean {
                    self.folios.get_mut(pfn).clear(pg::LOCKED);
                    ret.push(pfn);
                    continue;
                } else if self.has(Patch::BatchDirtyFlush) {
                    // Seed 000: collect dirty folios (unlocked while they wait), one flush for
                    // the batch before their pageouts.
                    self.folios.get_mut(pfn).clear(pg::LOCKED);
                    dirty.push(pfn);
                    if dirty.len() == self.policy.settings.free_batch {
                        nr_reclaimed += self.pageout_batch(
                            cpu, &mut ubc, &mut dirty, &mut free, &mut stat, &mut ret,
                        );
                    }
                    continue;
                } else {
                    // A CPU may still hold a writable, dirty translation: flush before I/O.
                    self.try_to_unmap_flush_dirty(cpu, &mut ubc);
                    let (written, freeable) = self.pageout_and_relock(cpu, pfn);
                    stat.nr_pageout += if written { nr } else { 0 };
                    if !freeable {
                        ret.push(pfn);
                        continue;
                    }
                }
            }
            if activate {
                // activate_locked: drop the swap slot if swap is getting full.
                let f = *self.folios.get(pfn);
                if f.test(pg::SWAPCACHE) && f.test(pg::MAPPED) && self.swap.vm_swap_full() {
                    self.folio_free_swap(pfn);
                }
                let f = self.folios.get_mut(pfn);
                f.set(pg::ACTIVE);
                if hold_lock {
                    // Until the batch's next try_to_unmap_flush (rmap.rs).
                    ubc.unlock_at_flush.push(pfn);
                } else {
                    f.clear(pg::LOCKED);
                }
                stat.nr_activate += nr;
                pgactivate += nr;
                ret.push(pfn);
                continue;
            }
            nr_reclaimed += self.free_it(cpu, &mut ubc, pfn, &mut free);
        }
        if !dirty.is_empty() {
            nr_reclaimed +=
                self.pageout_batch(cpu, &mut ubc, &mut dirty, &mut free, &mut stat, &mut ret);
        }
        self.vmstat.count_vm_events(PGACTIVATE, pgactivate);
        self.free_folio_batch(cpu, &mut ubc, &mut free);
        // The final flush.
        self.try_to_unmap_flush(cpu, &mut ubc);
        // swap_write_submit: a block device's write bio of this list goes out.
        self.swap_write_submit(cpu);
        self.give_list(list);
        self.give_list(free);
        self.give_list(dirty);
        (nr_reclaimed, stat, ret)
    }

    /// folio_alloc_swap (add_to_swap): a slot and the swap cache; false when swap is full.
    pub(crate) fn folio_alloc_swap(&mut self, cpu: CpuId, pfn: Pfn) -> bool {
        self.charge(cpu, self.cost.add_to_swap, Spent::AddToSwap);
        let f = self.folios.get(pfn);
        debug_assert_eq!(f.nr_pages(), 1, "anon folios are swapped as order 0");
        if !self
            .swap
            .alloc_slot(cpu, f.owner as MmId, u64::from(f.index))
        {
            return false;
        }
        let f = self.folios.get_mut(pfn);
        f.set(pg::SWAPCACHE);
        // The 2026 mm tree marks the folio dirty unconditionally after adding it
        // (docs/kernel-facts.md §3).
        f.set(pg::DIRTY);
        true
    }

    /// __remove_mapping, then free_it: onto the free batch, which is flushed and freed when full.
    fn free_it(&mut self, cpu: CpuId, ubc: &mut TlbUbc, pfn: Pfn, free: &mut Vec<Pfn>) -> u64 {
        self.remove_mapping(cpu, pfn);
        free.push(pfn);
        if free.len() == self.policy.settings.free_batch {
            self.free_folio_batch(cpu, ubc, free);
        }
        self.folios.get(pfn).nr_pages()
    }

    /// batch-dirty-flush (seed 000): one try_to_unmap_flush_dirty covers the whole batch of
    /// unmapped dirty folios, then each is written out (zram completes synchronously) and freed.
    fn pageout_batch(
        &mut self,
        cpu: CpuId,
        ubc: &mut TlbUbc,
        dirty: &mut Vec<Pfn>,
        free: &mut Vec<Pfn>,
        stat: &mut ReclaimStat,
        ret: &mut Vec<Pfn>,
    ) -> u64 {
        self.try_to_unmap_flush_dirty(cpu, ubc);
        let mut reclaimed = 0;
        // Taken out while it is written (each pageout is a preemption point), then given
        // back empty with its allocation.
        let batch = std::mem::take(dirty);
        for &pfn in &batch {
            let nr = self.folios.get(pfn).nr_pages();
            // Relock. While unlocked in the batch a fault may have mapped the folio back:
            // pageout's refcount check (is_page_cache_freeable) keeps it then.
            self.folios.get_mut(pfn).set(pg::LOCKED);
            let (written, free_now) = if self.folios.get(pfn).test(pg::MAPPED) {
                (false, false)
            } else {
                self.pageout_and_relock(cpu, pfn)
            };
            stat.nr_pageout += if written { nr } else { 0 };
            if !free_now {
                self.folios.get_mut(pfn).clear(pg::LOCKED);
                ret.push(pfn);
                continue;
            }
            reclaimed += self.free_it(cpu, ubc, pfn, free);
        }
        *dirty = batch;
        dirty.clear();
        reclaimed
    }

    /// pageout, then shrink_folio_list's relock after a synchronous write: swap_writeout
    /// unlocks the folio for the I/O, so a fault on another CPU may map it back before reclaim
    /// takes the lock again; then __remove_mapping's refcount freeze would fail and the folio
    /// is kept. The window exists only with `sim.interleave = "folio"`. Returns (written:
    /// PAGE_SUCCESS, free: the folio is locked again and can be freed); a write still in
    /// flight (a block device) keeps the folio unlocked ("goto keep").
    fn pageout_and_relock(&mut self, cpu: CpuId, pfn: Pfn) -> (bool, bool) {
        let synchronous = self.pageout(cpu, pfn);
        self.folios.get_mut(pfn).clear(pg::LOCKED);
        if !synchronous {
            return (true, false);
        }
        self.reclaim_preempt(cpu);
        if self.folios.get(pfn).test(pg::MAPPED) {
            // (Not counted in nr_pageout, as the model always has; the kernel counts it.)
            return (false, false);
        }
        self.folios.get_mut(pfn).set(pg::LOCKED);
        (true, true)
    }

    /// wakeup_flusher_threads(WB_REASON_VMSCAN): the flusher writes every dirty page-cache
    /// folio; the writes take device time (mm/page_writeback.rs). With the flusher thread
    /// the work is queued for it; without, it runs at once and its page_mkclean flushes are
    /// sent from `cpu` as a stand-in for the flusher's CPU.
    pub(crate) fn wakeup_flusher_threads(&mut self, cpu: CpuId) {
        self.writeback_queue.clear();
        self.wb_start_all(cpu);
    }

    /// Release an orphan's swap slot (put_swap_folio; no mapping is left to take it over).
    fn orphan_free_swap(&mut self, pfn: Pfn) {
        if self.folios.get_mut(pfn).test_clear(pg::SWAPCACHE) {
            self.swap.free_orphan_slot(pfn);
        }
    }

    /// A put of an isolated folio that was the last reference (move_folios_to_lru's
    /// folio_put_testzero, then mem_cgroup_uncharge_folios and free_unref_folios): true when
    /// `pfn` was an orphan (pg::ORPHAN) and is freed instead of going back to the LRU.
    pub(crate) fn put_orphan(&mut self, pfn: Pfn) -> bool {
        if !self.folios.get(pfn).test(pg::ORPHAN) {
            return false;
        }
        self.orphan_free_swap(pfn);
        self.memcg.uncharge(self.folios.get(pfn).nr_pages());
        self.oracle_discard(pfn);
        self.folios.free(pfn);
        true
    }

    /// folio_free_swap: release a mapped swap-cache folio's slot.
    pub fn folio_free_swap(&mut self, pfn: Pfn) {
        let f = self.folios.get_mut(pfn);
        if f.test_clear(pg::SWAPCACHE) {
            f.set(pg::DIRTY);
            let (mm, vp) = (f.owner as MmId, u64::from(f.index));
            self.swap.free_slot(mm, vp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Policy, SimConfig};
    use crate::kernel::{Backing, File};

    /// `folios` clean page-cache folios of 2^`order` pages, read on CPU 1 by a thread of an mm
    /// whose other thread runs on CPU 0, their young bits cleared; CPU 0 isolates them all
    /// and reclaims them in one shrink_folio_list. Returns the shootdowns CPU 1 received.
    fn shootdowns_freeing(order: u8, folios: u64) -> u64 {
        let cfg = SimConfig {
            file_folio_order: order,
            file_pmd_map: false,
            ..SimConfig::default()
        };
        let pages = folios << order;
        let mut k = Kernel::new(cfg, Policy::linux_6_18(), 2, 1 << 20, 0, 60, 1);
        k.files.push(File::new(pages as usize));
        let mm = k.mm_alloc(pages, Backing::File(0), false);
        for cpu in [1, 0] {
            let t = k.task_new(mm, Some(cpu), 0, pages);
            k.context_switch(cpu, Some(t));
        }
        for vp in 0..pages {
            k.user_access(1, mm, vp, false);
        }
        for pte in &mut k.mms[mm].ptes[..pages as usize] {
            *pte &= !PTE_YOUNG;
        }
        // The reader's last folios wait in CPU 1's lru_add batch.
        k.lru_add_drain(1);
        let list = k.isolate_lru_folios(0, pages, LRU_INACTIVE_FILE);
        assert_eq!(list.len() as u64, folios);
        let before = k.irq.tlb_shootdowns[1];
        let (reclaimed, _, kept) = k.shrink_folio_list(0, list);
        assert_eq!((reclaimed, kept.len()), (pages, 0));
        assert!(k.check_invariants().is_empty());
        k.irq.tlb_shootdowns[1] - before
    }

    /// shrink_folio_list flushes the deferred unmaps each time its free batch (31 folios)
    /// fills and once at the end, however many pages the folios hold: reclaiming 32 pages in
    /// order-0 folios sends two shootdowns, in order-2 folios one, in an order-5 folio one.
    /// (A host trace of the file suite's sequential reader, each reclaim call's IPI sends
    /// against the folios it freed: docs/results/2026-11-27-seq-reader-shootdowns.md.)
    #[test]
    fn the_deferred_unmap_flush_is_per_31_folios_not_per_page() {
        assert_eq!(shootdowns_freeing(0, 31), 1);
        assert_eq!(shootdowns_freeing(0, 32), 2);
        assert_eq!(shootdowns_freeing(0, 62), 2);
        assert_eq!(shootdowns_freeing(0, 63), 3);
        assert_eq!(shootdowns_freeing(2, 8), 1);
        assert_eq!(shootdowns_freeing(5, 1), 1);
        assert_eq!(shootdowns_freeing(2, 32), 2);
    }
}
