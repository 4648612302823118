//! Dirty page-cache accounting and writeback (mm/page-writeback.c, fs/fs-writeback.c), with
//! a writeback device that takes time: a folio handed to the flusher is cleaned for I/O
//! (folio_clear_dirty_for_io → page_mkclean), stays under PG_writeback until the device has
//! written it (one page every `cost.file_write_page` ns, in submission order), and on
//! completion folio_end_writeback rotates a PG_reclaim folio to the reclaim end of its LRU
//! (folio_rotate_reclaimable) so that reclaim frees it next.
//!
//! The flusher runs when woken by reclaim (WB_REASON_VMSCAN: all dirty pages), when the dirty
//! pages pass the background threshold (dirty_background_ratio = 10% of the memcg limit, the
//! memcg writeback domain; written until below it, cyclically through the file), and every
//! dirty_writeback_interval (5 s) for an inode dirty longer than dirty_expire_interval (30 s).
//! Not modelled: balance_dirty_pages throttling of writers, the flusher's own CPU time (its
//! page_mkclean flushes are sent from the CPU that polls), per-inode dirtied_when beyond one
//! timestamp per file.

use crate::kernel::{CpuId, Kernel};
use crate::mm::folio::{pg, Pfn};
use crate::mm::pgtable::*;
use std::collections::VecDeque;

/// dirty_writeback_interval (5 s) and dirty_expire_interval (30 s).
/// reclaim_throttle's timeout for VMSCAN_THROTTLE_WRITEBACK: HZ/10.
const RECLAIM_THROTTLE_NS: u64 = 100_000_000;
const WRITEBACK_INTERVAL_NS: u64 = 5_000_000_000;
const EXPIRE_NS: u64 = 30_000_000_000;
/// dirty_background_ratio, percent.
const BACKGROUND_RATIO: u64 = 10;
/// MIN_WRITEBACK_PAGES (4 MiB).
const MIN_WRITEBACK_PAGES: u64 = 1024;

#[derive(Default)]
pub struct Writeback {
    /// The device is busy until this time (ns).
    pub busy_until: u64,
    /// Folios under writeback and their completion times, in completion order.
    pub inflight: VecDeque<(u64, Pfn)>,
    /// NR_FILE_DIRTY in pages.
    pub nr_dirty: u64,
    /// When the file's pages became dirty (inode->dirtied_when), per file.
    pub dirtied_when: Vec<Option<u64>>,
    /// The next periodic (kupdate) writeback.
    pub next_kupdate: u64,
    /// Background writeback's cyclic position per file (mapping->writeback_index).
    pub cursor: Vec<usize>,
    /// The last time seen by `writeback_poll`.
    pub now: u64,
    /// Counters: pages written (nr_written), writeback completions that rotated a PG_reclaim
    /// folio (pgrotated), and flusher runs by reason.
    pub nr_written: u64,
    pub nr_rotated: u64,
    pub runs_vmscan: u64,
    pub runs_background: u64,
    pub runs_periodic: u64,
    /// Measurement only: when each dirty page-cache folio was dirtied, and the summed time
    /// (ns, per page) from dirtying to the start of its writeback; the same for the folios
    /// that reclaim had tagged PG_reclaim (waiting at the LRU's old end).
    pub dirtied_at: std::collections::BTreeMap<Pfn, u64>,
    pub dirty_wait_ns: u64,
    pub dirty_wait_pages: u64,
    pub reclaim_wait_ns: u64,
    pub reclaim_wait_pages: u64,
}

impl Kernel {
    /// folio_mark_dirty for a page-cache folio (anon folios just get PG_dirty).
    pub fn folio_mark_dirty(&mut self, pfn: Pfn) {
        let f = self.folios.get_mut(pfn);
        if f.test(pg::DIRTY) {
            return;
        }
        f.set(pg::DIRTY);
        if !f.is_file_lru() {
            return;
        }
        let (n, file) = (f.nr_pages(), f.owner as usize);
        let now = self.wb.now;
        let wb = &mut self.wb;
        wb.nr_dirty += n;
        wb.dirtied_at.insert(pfn, now);
        if wb.dirtied_when.len() <= file {
            wb.dirtied_when.resize(file + 1, None);
        }
        wb.dirtied_when[file].get_or_insert(now);
    }

    /// Clear PG_dirty of a page-cache folio (folio_clear_dirty_for_io's accounting).
    fn folio_clear_dirty_file(&mut self, pfn: Pfn) {
        let f = self.folios.get_mut(pfn);
        if f.test_clear(pg::DIRTY) && f.is_file_lru() {
            self.wb.nr_dirty -= f.nr_pages();
        }
    }

    /// Write one dirty folio: page_mkclean (write-protect and clean its PTEs, flushing the
    /// translations), PG_dirty → PG_writeback, queue it on the device.
    fn writeback_folio(&mut self, cpu: CpuId, pfn: Pfn) {
        let f = *self.folios.get(pfn);
        if let Some((mm, first)) = self.folio_mapping_of(pfn) {
            for vp in first..first + f.nr_pages() {
                let pte = self.mms[mm].ptes[vp as usize];
                if pte_present(pte) && pte_pfn(pte) == pfn && pte & (PTE_DIRTY | PTE_WRITE) != 0 {
                    self.mms[mm].ptes[vp as usize] = pte & !(PTE_DIRTY | PTE_WRITE);
                    self.flush_tlb_mm_range(cpu, mm, vp, vp + 1, false);
                }
            }
        }
        self.oracle_writeout(cpu, pfn, "the flusher's writeback");
        if let Some(t) = self.wb.dirtied_at.remove(&pfn) {
            let wait = self.cpus[cpu].clock.saturating_sub(t) * f.nr_pages();
            self.wb.dirty_wait_ns += wait;
            self.wb.dirty_wait_pages += f.nr_pages();
            if f.test(pg::RECLAIM) {
                self.wb.reclaim_wait_ns += wait;
                self.wb.reclaim_wait_pages += f.nr_pages();
            }
        }
        self.folio_clear_dirty_file(pfn);
        self.folios.get_mut(pfn).set(pg::WRITEBACK);
        let n = f.nr_pages();
        let start = self.wb.busy_until.max(self.cpus[cpu].clock);
        let done = start + n * self.cost.file_write_page;
        self.wb.busy_until = done;
        self.wb.inflight.push_back((done, pfn));
        self.wb.nr_written += n;
    }

    /// Write back dirty folios of `file` from its cyclic cursor, in file order, until
    /// `stop()` says enough (WB_SYNC_NONE: folios already under writeback are skipped).
    fn writeback_file(&mut self, cpu: CpuId, file: usize, mut budget: u64, cyclic: bool) {
        if self.wb.cursor.len() <= file {
            self.wb.cursor.resize(file + 1, 0);
        }
        let len = self.files[file].cache.len();
        let start = if cyclic { self.wb.cursor[file] } else { 0 };
        let mut i = 0;
        while i < len && budget > 0 {
            let idx = (start + i) % len;
            let slot = self.files[file].cache[idx];
            i += 1;
            if slot & PTE_SWPCACHE == 0 {
                continue;
            }
            let pfn = slot & PTE_LOW_MASK;
            let f = *self.folios.get(pfn);
            if f.index as usize != idx || !f.test(pg::DIRTY) || f.test(pg::WRITEBACK) {
                continue;
            }
            self.writeback_folio(cpu, pfn);
            budget = budget.saturating_sub(f.nr_pages());
            self.wb.cursor[file] = (idx + f.nr_pages() as usize) % len;
        }
        // One dirty count for all files: the files' inodes are clean when it is zero.
        if self.wb.nr_dirty == 0 {
            if let Some(t) = self.wb.dirtied_when.get_mut(file) {
                *t = None;
            }
        }
    }

    /// wakeup_flusher_threads(WB_REASON_VMSCAN): the flusher writes every dirty page.
    pub fn wb_start_all(&mut self, cpu: CpuId) {
        self.wb.runs_vmscan += 1;
        for file in 0..self.files.len() {
            self.writeback_file(cpu, file, u64::MAX, false);
        }
    }

    /// Background threshold: dirty_background_ratio of the memcg's memory.
    fn background_thresh(&self) -> u64 {
        self.memcg.limit * BACKGROUND_RATIO / 100
    }

    /// Run what is due at `now` (the clock of the CPU about to step): writeback completions,
    /// background writeback over the threshold, the periodic writeback of expired inodes.
    pub fn writeback_poll(&mut self, cpu: CpuId) {
        let now = self.cpus[cpu].clock;
        if now > self.wb.now {
            self.wb.now = now;
        }
        while let Some(&(done, pfn)) = self.wb.inflight.front() {
            if done > now {
                break;
            }
            self.wb.inflight.pop_front();
            self.folio_end_writeback(pfn);
        }
        if self.wb.nr_dirty > self.background_thresh() {
            self.wb.runs_background += 1;
            // writeback_chunk_size: background work goes in chunks of at least
            // MIN_WRITEBACK_PAGES (4 MiB) and stops once below the threshold.
            let over = (self.wb.nr_dirty - self.background_thresh()).max(MIN_WRITEBACK_PAGES);
            for file in 0..self.files.len() {
                self.writeback_file(cpu, file, over, true);
            }
        }
        if now >= self.wb.next_kupdate {
            self.wb.next_kupdate = now + WRITEBACK_INTERVAL_NS;
            for file in 0..self.files.len() {
                let expired =
                    matches!(self.wb.dirtied_when.get(file), Some(Some(t)) if now >= t + EXPIRE_NS);
                if expired {
                    self.wb.runs_periodic += 1;
                    self.writeback_file(cpu, file, u64::MAX, false);
                    // redirty_tail: still-dirty pages start a new expiry period.
                    if let Some(Some(t)) = self.wb.dirtied_when.get_mut(file) {
                        *t = now;
                    }
                }
            }
        }
    }

    /// reclaim_throttle(VMSCAN_THROTTLE_WRITEBACK): reclaim found nothing it could free while
    /// writes are in flight, so the reclaimer sleeps until the next write completes (at most
    /// HZ/10) instead of declaring OOM, then lets the completions run. False when nothing is in
    /// flight (throttling would not help).
    pub fn reclaim_throttle_writeback(&mut self, cpu: CpuId) -> bool {
        let Some(&(done, _)) = self.wb.inflight.front() else {
            return false;
        };
        let now = self.cpus[cpu].clock;
        self.cpus[cpu].clock = done.clamp(now, now + RECLAIM_THROTTLE_NS);
        self.writeback_poll(cpu);
        true
    }

    /// folio_end_writeback: clear PG_writeback; a PG_reclaim folio that is still clean and on
    /// the LRU goes to the reclaim end (folio_rotate_reclaimable → lru_move_tail).
    fn folio_end_writeback(&mut self, pfn: Pfn) {
        let f = self.folios.get_mut(pfn);
        f.clear(pg::WRITEBACK);
        if !f.test_clear(pg::RECLAIM) {
            return;
        }
        if f.test(pg::DIRTY) || !f.test(pg::LRU) {
            return;
        }
        let n = f.nr_pages();
        self.lruvec.del(&mut self.folios, pfn);
        self.folios.get_mut(pfn).clear(pg::ACTIVE);
        self.lruvec.add_tail(&mut self.folios, pfn);
        self.wb.nr_rotated += n;
    }
}
