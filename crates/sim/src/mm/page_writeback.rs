//! Dirty page-cache accounting and writeback (mm/page-writeback.c, fs/fs-writeback.c), with
//! a writeback device that takes time: a folio handed to the flusher is cleaned for I/O
//! (folio_clear_dirty_for_io → page_mkclean), stays under PG_writeback until the device has
//! written it (one page every `cost.file_write_page` ns, in submission order), and on
//! completion folio_end_writeback rotates a PG_reclaim folio to the reclaim end of its LRU
//! (folio_rotate_reclaimable) so that reclaim frees it next.
//!
//! The flusher runs when woken by reclaim (WB_REASON_VMSCAN: all dirty pages), when the dirty
//! pages pass the background threshold (dirty_background_ratio = 10% of the writeback domain;
//! written until below it, cyclically through the file), and every dirty_writeback_interval
//! (5 s) for an inode dirty longer than dirty_expire_interval (30 s).
//!
//! The writeback domain: on cgroup v2 the memcg's own (mem_cgroup_wb_domain: the memcg's
//! dirtyable memory, here its limit, bounded by the global one); on cgroup v1 cgroup writeback
//! does not exist and only the global domain (global_dirtyable_memory, here `machine.memory`)
//! applies, so a memcg far smaller than the machine never reaches a dirty threshold.
//!
//! balance_dirty_pages: a task that dirties a page-cache folio (a write fault on a shared
//! mapping, fault_dirty_shared_page; a write(), generic_perform_write) is paused once the
//! domain's dirty + writeback pages pass dirty_ratio (20%): it sleeps until writeback
//! completions bring them back under the limit, at most MAX_PAUSE (HZ/5) per call. Below the
//! freerun point ((background + limit) / 2) it runs free.
//! The flusher thread (`flusher_run`, file-mmap-rw): reclaim's wakeup_flusher_threads
//! queues a start-all work and wakes a kernel thread that the scheduler places and runs like
//! kswapd; its page_mkclean flushes leave from its own CPU, which runs no user mm (lazy on
//! the previous one), so an IPI goes only to a CPU that is running the mm at the time.
//! Background and periodic writeback still run inline, from the CPU that polls.
//!
//! Waits of a workload task (reclaim_throttle, device reads of page-cache misses) are
//! sleeps taken at the end of its engine step (`sleep_after_step`): the CPU is free
//! meanwhile. cgroup v1's folio_wait_writeback in shrink_folio_list still advances the
//! reclaimer's clock (it sits in the middle of the folio list).
//!
//! Not modelled: the pos_ratio rate control between freerun and the limit (writers are not
//! slowed there, only stopped at the limit), the device's parallelism (requests are served one after another: with
//! `sim.writeback_queue_depth` > 0 each costs `file_write_request` plus `file_write_page` per
//! page, so measure both with the queue full), per-inode dirtied_when beyond one timestamp per
//! file.

use crate::cputime::Spent;
use crate::kernel::{CpuId, Kernel};
use crate::mm::folio::{pg, Pfn};
use crate::mm::pgtable::*;
use crate::mm::vmstat::VmEventItem::*;
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
/// vm_dirty_ratio, percent.
const DIRTY_RATIO: u64 = 20;
/// SWAP_CLUSTER_MAX: __acct_reclaim_writeback wakes the throttled reclaimers once more than
/// this many pages per throttled task have been written.
const SWAP_CLUSTER_MAX: u64 = 32;
/// MAX_PAUSE: balance_dirty_pages sleeps at most HZ/5 per call.
const MAX_PAUSE_NS: u64 = 200_000_000;

#[derive(Default)]
pub struct Writeback {
    /// The device is busy until this time (ns).
    pub busy_until: u64,
    /// Folios under writeback and their completion times, in completion order.
    pub inflight: VecDeque<(u64, Pfn)>,
    /// NR_FILE_DIRTY in pages.
    pub nr_dirty: u64,
    /// NR_WRITEBACK in pages (page-cache folios under writeback).
    pub nr_writeback: u64,
    /// The global domain's dirtyable memory in pages (`machine.memory`).
    pub global_dirtyable: u64,
    /// When the file's pages became dirty (inode->dirtied_when), per file.
    pub dirtied_when: Vec<Option<u64>>,
    /// The next periodic (kupdate) writeback.
    pub next_kupdate: u64,
    /// Background writeback's cyclic position per file (mapping->writeback_index).
    pub cursor: Vec<usize>,
    /// The last time seen by `writeback_poll`.
    pub now: u64,
    /// Measurement only: when each dirty page-cache folio was dirtied (DIRTY_WAIT_NS and
    /// RECLAIM_WAIT_NS sum the time from there to the start of its writeback).
    pub dirtied_at: std::collections::BTreeMap<Pfn, u64>,
    /// Per CPU: the running task sleeps until this time when its step ends (device reads it
    /// waits on, reclaim_throttle).
    pub sleep_until: Vec<Option<u64>>,
    /// Per CPU: the CPU whose interrupt ends the pending sleep (a device completion), when the
    /// sleep ends with one; None: a timer on the sleeping CPU.
    pub sleep_waker: Vec<Option<CpuId>>,
    /// Per CPU: the pending sleep includes a reclaim_throttle (reclaim stops until it ends).
    pub throttled: Vec<bool>,
    /// The flusher as a kernel thread (`flusher_run`): None = its work runs inline on the
    /// waking CPU (the workloads that do not create it).
    pub flusher: Option<crate::kernel::TaskId>,
    /// A WB_REASON_VMSCAN start-all work is queued (wb_start_writeback's WB_start_all bit):
    /// pages left to write in it, and whether the thread still has to be woken.
    pub start_all: Option<u64>,
    pub flusher_wake_pending: bool,
    pub flusher_running: bool,
    /// The device's requests in flight (`sim.writeback_queue_depth` > 0): the completion time
    /// of each request's last page, in order; and the request being built (file, next page
    /// index, pages in it) that a contiguous folio of the same writeback pass joins.
    pub requests: VecDeque<u64>,
    pub open_request: Option<(usize, u64, u64)>,
    /// Per CPU: when its task's last reclaim_throttle(WRITEBACK) sleep ends (the tasks asleep
    /// in it are pgdat->nr_writeback_throttled).
    pub throttle_until: Vec<u64>,
}

/// Pages the flusher thread writes per engine step: one folio (a budget of one page ends
/// writeback_file after the first folio, whatever its size). The kernel's flusher writes
/// MAX_WRITEBACK_PAGES (1 024) of an inode in one go, but while it does the other CPUs run:
/// each of its page_mkclean flushes reads their cpu_tlbstate then (should_flush_tlb). An
/// engine step holds the other CPUs where they are, so a longer step would send every flush
/// of the step to a CPU whose task was running when the step began, although that task would
/// have slept on its next read a few microseconds later.
const FLUSHER_STEP_PAGES: u64 = 1;

impl Kernel {
    /// Whether the task running on `cpu` can take a sleep at the end of its engine step: a
    /// workload task (kswapd's and background steps have no such hand-over; they keep the
    /// old behaviour of waiting on their CPU's clock).
    fn can_sleep(&self, cpu: CpuId) -> bool {
        self.cpus[cpu]
            .curr
            .is_some_and(|t| !self.tasks[t].kthread && !self.runner.rqs_out)
    }

    /// The task running on `cpu` sleeps until `until` when its current step ends. A wait in
    /// the middle of a kernel path is taken at the end of the step (the work after the wait
    /// point is done before it, an approximation of the task's own order); the CPU is free
    /// for other tasks meanwhile and its idle time is not charged to the task.
    pub fn sleep_after_step(&mut self, cpu: CpuId, until: u64) {
        if self.wb.sleep_until.len() <= cpu {
            self.wb.sleep_until.resize(self.nr_cpus(), None);
        }
        let s = &mut self.wb.sleep_until[cpu];
        if s.is_none_or(|t| until > t) {
            // The sleep now ends later, not at the completion that was to end it.
            if let Some(w) = self.wb.sleep_waker.get_mut(cpu) {
                *w = None;
            }
        }
        *s = Some(s.map_or(until, |t| t.max(until)));
    }

    /// The task on `cpu` sleeps until a device completion at `done` whose interrupt runs on
    /// `irq` wakes it (io_schedule until the bio's end_io: try_to_wake_up from that CPU).
    /// Returns how long it will sleep from now; a task that cannot sleep (a kernel thread's
    /// step) waits on its CPU's clock instead.
    pub fn io_sleep_until(&mut self, cpu: CpuId, done: u64, irq: CpuId) -> u64 {
        let now = self.cpus[cpu].clock;
        if done <= now {
            return 0;
        }
        if !self.can_sleep(cpu) {
            self.idle_until(cpu, done);
            return done - now;
        }
        let later = self
            .wb
            .sleep_until
            .get(cpu)
            .copied()
            .flatten()
            .is_none_or(|t| done >= t);
        self.sleep_after_step(cpu, done);
        if later {
            if self.wb.sleep_waker.len() <= cpu {
                self.wb.sleep_waker.resize(self.nr_cpus(), None);
            }
            self.wb.sleep_waker[cpu] = Some(irq);
        }
        done - now
    }

    /// The pending sleep of `cpu`'s task (taken by the engine after the step): until when,
    /// and the CPU whose device interrupt wakes it (None: a timer on the sleeping CPU).
    pub fn take_sleep(&mut self, cpu: CpuId) -> Option<(u64, Option<CpuId>)> {
        if let Some(t) = self.wb.throttled.get_mut(cpu) {
            *t = false;
        }
        let waker = self.wb.sleep_waker.get_mut(cpu).and_then(Option::take);
        let until = self.wb.sleep_until.get_mut(cpu).and_then(Option::take)?;
        Some((until, waker))
    }

    /// `ns` of device reads the faulting task on `cpu` waits for (after any wait already
    /// pending): a sleep, not CPU time (a kernel thread's or a non-workload step's read is
    /// charged to its CPU as before).
    pub fn io_wait(&mut self, cpu: CpuId, ns: u64) {
        if ns == 0 {
            return;
        }
        if !self.can_sleep(cpu) {
            self.charge(cpu, ns, Spent::PageCache);
            return;
        }
        self.vmstat.count_vm_events(FILE_READ_WAIT_NS, ns);
        let now = self.cpus[cpu].clock;
        let base = self
            .wb
            .sleep_until
            .get(cpu)
            .copied()
            .flatten()
            .unwrap_or(now)
            .max(now);
        self.sleep_after_step(cpu, base + ns);
    }

    /// The faulting task on `cpu` waits for a device read that completes at `done` (the
    /// device queue included); a kernel thread's read is charged to its CPU until then.
    pub fn io_wait_until(&mut self, cpu: CpuId, done: u64) {
        let now = self.cpus[cpu].clock;
        if done <= now {
            return;
        }
        if !self.can_sleep(cpu) {
            self.charge(cpu, done - now, Spent::PageCache);
            return;
        }
        // Only what this wait adds to a sleep already pending counts as read wait.
        let pending = self
            .wb
            .sleep_until
            .get(cpu)
            .copied()
            .flatten()
            .unwrap_or(now);
        self.vmstat
            .count_vm_events(FILE_READ_WAIT_NS, done.saturating_sub(pending.max(now)));
        self.sleep_after_step(cpu, done);
    }

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
        let (n, file, index) = (f.nr_pages(), f.owner as usize, f.index as usize);
        if self.cfg.file_buffer_heads {
            // ext4's write_begin and page_mkwrite (block_page_mkwrite) give a folio that is
            // written its buffer heads (create_empty_buffers); they stay after writeback.
            self.files[file].set_buffers(index, n as usize, true);
        }
        let now = self.wb.now;
        let wb = &mut self.wb;
        wb.nr_dirty += n;
        self.vmstat.count_vm_events(NR_DIRTIED, n);
        wb.dirtied_at.insert(pfn, now);
        if wb.dirtied_when.len() <= file {
            wb.dirtied_when.resize(file + 1, None);
        }
        wb.dirtied_when[file].get_or_insert(now);
    }

    /// Measurement: for a page_mkclean flush of `mm` sent by the flusher thread, what each
    /// other CPU in the mm's cpumask is doing (should_flush_tlb sends an IPI only to a CPU
    /// running the mm, not lazy).
    fn mkclean_target_census(&mut self, cpu: CpuId, mm: usize) {
        if self.wb.flusher.is_none() || self.cpus[cpu].curr != self.wb.flusher {
            return;
        }
        for t in self.mms[mm].cpumask.iter().filter(|&t| t != cpu) {
            let c = &self.cpus[t];
            let item = match (c.loaded_mm, c.is_lazy, c.curr) {
                (Some(m), false, _) if m == mm => MKCLEAN_TARGET_RUNNING_MM,
                (_, true, None) => MKCLEAN_TARGET_LAZY_IDLE,
                (_, true, Some(_)) => MKCLEAN_TARGET_LAZY_KTHREAD,
                (None, false, _) => MKCLEAN_TARGET_INIT_MM,
                (Some(_), false, _) => MKCLEAN_TARGET_OTHER_MM,
            };
            self.vmstat.count_vm_event(MKCLEAN_TARGETS);
            self.vmstat.count_vm_event(item);
        }
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
        if let Some((mm, first)) = self.folio_mapping_of(pfn).filter(|&(mm, first)| {
            let pmd = self.pmd_mapped(mm, first);
            if pmd {
                if self.pmd_dirty_or_writable(mm, first) {
                    self.mkclean_target_census(cpu, mm);
                }
                self.pmd_mkclean(cpu, mm, first);
            }
            !pmd
        }) {
            for vp in first..first + f.nr_pages() {
                let pte = self.mms[mm].ptes[vp as usize];
                if pte_present(pte) && pte_pfn(pte) == pfn && pte & (PTE_DIRTY | PTE_WRITE) != 0 {
                    self.mkclean_target_census(cpu, mm);
                    self.mms[mm].ptes[vp as usize] = pte & !(PTE_DIRTY | PTE_WRITE);
                    self.flush_tlb_mm_range(cpu, mm, vp, vp + 1, false);
                }
            }
        }
        self.oracle_writeout(cpu, pfn, "the flusher's writeback");
        if let Some(t) = self.wb.dirtied_at.remove(&pfn) {
            let wait = self.cpus[cpu].clock.saturating_sub(t) * f.nr_pages();
            self.vmstat.count_vm_events(DIRTY_WAIT_NS, wait);
            self.vmstat.count_vm_events(DIRTY_WAIT_PAGES, f.nr_pages());
            if f.test(pg::RECLAIM) {
                self.vmstat.count_vm_events(RECLAIM_WAIT_NS, wait);
                self.vmstat
                    .count_vm_events(RECLAIM_WAIT_PAGES, f.nr_pages());
            }
        }
        self.folio_clear_dirty_file(pfn);
        self.folios.get_mut(pfn).set(pg::WRITEBACK);
        let n = f.nr_pages();
        self.wb.nr_writeback += n;
        let (file, idx) = (f.owner as usize, f.index as u64);
        // A folio that cannot join the open request starts one: the device's cost per
        // request on top of its pages (`file_write_request`, with a request queue).
        let requests = self.cfg.writeback_queue_depth > 0;
        let new_request = !self.bio_merges(file, idx, n);
        let service = if requests {
            self.cost.file_write_request
        } else {
            0
        };
        let fixed = if new_request { service } else { 0 };
        let unwritten = self.block_unwritten(file, idx);
        self.writepages_charge(cpu, new_request, unwritten);
        let done = self.blk_submit(
            cpu,
            fixed,
            n * self.cost.file_write_page,
            self.cost.file_write_latency,
            service,
        );
        self.inflight_add(done, pfn);
        self.vmstat.count_vm_events(NR_WRITTEN, n);
        if !new_request {
            if requests {
                if let Some(last) = self.wb.requests.back_mut() {
                    *last = done;
                }
            }
            if let Some(r) = self.wb.open_request.as_mut() {
                r.1 += n;
                r.2 += n;
            }
        } else {
            if requests {
                self.wb.requests.push_back(done);
            }
            self.wb.open_request = Some((file, idx + n, n));
        }
    }

    /// The CPU time of writing one folio back: do_writepages on the writing CPU (per folio,
    /// per request, and ext4's extent split for a request into unwritten blocks), and the
    /// completion on the data disk's interrupt CPU (`sim.writeback_irq_cpu`): end_io per
    /// request and folio, and for unwritten blocks ext4_end_io_rsv_work's conversion. The
    /// completion is charged at submission, as the call-function handlers are (smp.rs);
    /// the folio's writeback still ends at the device's completion time.
    fn writepages_charge(&mut self, cpu: CpuId, new_request: bool, unwritten: bool) {
        let c = &self.cost;
        let (mut submit, mut complete) = (c.writepages_folio, c.writeback_complete_folio);
        if new_request {
            submit += c.writepages_request;
            complete += c.writeback_complete_request;
            if unwritten {
                submit += c.writepages_unwritten_request;
                complete += c.writeback_convert_request;
            }
        }
        self.charge(cpu, submit, Spent::Writeback);
        let irq = self.cfg.writeback_irq_cpu.unwrap_or(cpu);
        self.charge(irq, complete, Spent::Writeback);
        self.vmstat.count_vm_events(WRITEBACK_SUBMIT_NS, submit);
        self.vmstat.count_vm_events(WRITEBACK_COMPLETE_NS, complete);
    }

    /// The device takes a request from `cpu` now: it transfers after the requests before it
    /// (`fixed` + `transfer` ns of device time, one request after another), and completes
    /// `latency` ns after its transfer (the part of a request's service time that overlaps
    /// with other requests in the device's queue). Returns the completion time. File
    /// writeback and a block swap device (mm/page_io.rs) share the one device.
    ///
    /// `fixed` is the device's fixed service this submission adds (one request's `service`
    /// for each request it starts, none for a folio that joins an open request). `latency`
    /// is a lone request's round trip beyond its transfer, measured with one request in
    /// flight, so it already holds that request's own `service`: a request that finds the
    /// device idle completes `transfer` + `latency` after submission whatever its service;
    /// the service delays only what queues behind it.
    pub fn blk_submit(
        &mut self,
        cpu: CpuId,
        fixed: u64,
        transfer: u64,
        latency: u64,
        service: u64,
    ) -> u64 {
        let start = self.wb.busy_until.max(self.cpus[cpu].clock);
        self.wb.busy_until = start + fixed + transfer;
        self.wb.busy_until + latency.saturating_sub(service)
    }

    /// A folio under writeback that completes at `done`: `inflight` stays in completion
    /// order (a request with a latency can complete before one queued earlier).
    pub(crate) fn inflight_add(&mut self, done: u64, pfn: Pfn) {
        let at = self.wb.inflight.len()
            - self
                .wb
                .inflight
                .iter()
                .rev()
                .take_while(|&&(d, _)| d > done)
                .count();
        self.wb.inflight.insert(at, (done, pfn));
    }

    /// Whether a folio of `n` pages at `idx` of `file` joins the request being built: the
    /// next pages of the same file in the same writeback pass, within the device's largest
    /// request (ext4_bio_write_folio adding to the io_submit bio; the plug merging bios).
    fn bio_merges(&self, file: usize, idx: u64, n: u64) -> bool {
        matches!(self.wb.open_request, Some((f, next, pages))
            if f == file && next == idx && pages + n <= self.cfg.writeback_request_pages)
    }

    /// Whether the device can take a folio of `n` pages at `idx` of `file` now: it joins the
    /// open request, or a request (blk-mq tag) is free. Completed requests are retired first.
    fn writeback_queue_has_room(&mut self, now: u64, file: usize, idx: u64, n: u64) -> bool {
        let depth = self.cfg.writeback_queue_depth;
        if depth == 0 {
            return true;
        }
        while self.wb.requests.front().is_some_and(|&d| d <= now) {
            self.wb.requests.pop_front();
        }
        if self.bio_merges(file, idx, n) {
            return true;
        }
        (self.wb.requests.len() as u64) < depth
    }

    /// Write back dirty folios of `file` from its cyclic cursor, in file order, until
    /// `stop()` says enough (WB_SYNC_NONE: folios already under writeback are skipped).
    /// Returns true if it stopped because the device's request queue was full.
    fn writeback_file(&mut self, cpu: CpuId, file: usize, mut budget: u64, cyclic: bool) -> bool {
        if self.wb.cursor.len() <= file {
            self.wb.cursor.resize(file + 1, 0);
        }
        // A new pass builds new requests (the previous pass's are submitted).
        self.wb.open_request = None;
        let len = self.files[file].cache.len();
        let start = if cyclic { self.wb.cursor[file] } else { 0 };
        let mut i = 0;
        let mut full = false;
        while i < len && budget > 0 {
            let idx = (start + i) % len;
            let slot = self.files[file].cache[idx];
            i += 1;
            if slot & PTE_SWPCACHE == 0 {
                continue;
            }
            let pfn = slot & PTE_LOW_MASK;
            let f = *self.folios.get(pfn);
            // A folio reclaim holds locked is passed over (the kernel's flusher would wait
            // for the lock in writeback_get_folio; the model does not block it there).
            if f.index as usize != idx
                || !f.test(pg::DIRTY)
                || f.test(pg::WRITEBACK)
                || f.test(pg::LOCKED)
            {
                continue;
            }
            let now = self.cpus[cpu].clock;
            if !self.writeback_queue_has_room(now, file, idx as u64, f.nr_pages()) {
                full = true;
                break;
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
        full
    }

    /// wakeup_flusher_threads(WB_REASON_VMSCAN): the flusher writes every dirty page. With
    /// the flusher thread (`flusher_run`) this queues the start-all work (nothing if one is
    /// queued already: WB_start_all) and wakes the thread, which writes the pages dirty when
    /// it starts the work (get_nr_dirty_pages), cyclically from each file's writeback_index,
    /// in its own steps;
    /// else the pages are written at once from `cpu`.
    pub fn wb_start_all(&mut self, cpu: CpuId) {
        if self.wb.flusher.is_some() {
            if self.wb.start_all.is_none() && self.wb.nr_dirty > 0 {
                self.vmstat.count_vm_event(WB_RUNS_VMSCAN);
                // wb_check_start_all sizes the work when the worker runs it.
                self.wb.start_all = Some(u64::MAX);
                if !self.wb.flusher_running {
                    self.wb.flusher_wake_pending = true;
                }
            }
            return;
        }
        self.vmstat.count_vm_event(WB_RUNS_VMSCAN);
        for file in 0..self.files.len() {
            self.writeback_file(cpu, file, u64::MAX, false);
        }
    }

    /// Create the writeback flusher (the bdi's wb workqueue worker: an unbound kworker, a
    /// kernel thread without an mm), asleep until its first work.
    pub fn flusher_run(&mut self) -> crate::kernel::TaskId {
        let t = self.task_new(usize::MAX, None, 0, 0);
        self.tasks[t].kthread = true;
        self.sched.se[t].class = crate::sched::Class::Kthread;
        self.sched.se[t].sleeping = true;
        self.wb.flusher = Some(t);
        t
    }

    /// Wake the flusher thread for queued work (from the engine after a step, the CPU that
    /// queued it being the waker).
    pub fn flusher_wakeup(&mut self, rqs: &mut crate::sched::RunQueues, waker: CpuId, now: u64) {
        if !std::mem::take(&mut self.wb.flusher_wake_pending) {
            return;
        }
        let Some(t) = self.wb.flusher else { return };
        self.wb.flusher_running = true;
        if self.sched.se[t].last_cpu.is_none() {
            self.sched.se[t].last_cpu = Some(waker);
        }
        self.try_to_wake_up(rqs, t, waker, now);
    }

    /// One engine step of the flusher thread on `cpu`: write FLUSHER_STEP_PAGES of
    /// the start-all work (page_mkclean of each folio's mappings sends its flushes from this
    /// CPU, which runs no user mm: lazily on the previous one), or sleep when none is left.
    pub fn flusher_step(&mut self, rqs: &mut crate::sched::RunQueues, cpu: CpuId) {
        self.vmstat.count_vm_event(FLUSHER_STEPS);
        if self.cpus[cpu].is_lazy {
            self.vmstat.count_vm_event(FLUSHER_STEPS_LAZY);
        }
        let t0 = self.cpus[cpu].clock;
        let mut left = self.wb.start_all.unwrap_or(0);
        if left == u64::MAX {
            // wb_check_start_all: nr_pages = get_nr_dirty_pages() when the work starts.
            left = self.wb.nr_dirty;
        }
        let mut written = 0;
        let mut full = false;
        if left > 0 {
            let before = self.vmstat[NR_WRITTEN];
            let chunk = left.min(FLUSHER_STEP_PAGES);
            for file in 0..self.files.len() {
                let budget = chunk.saturating_sub(self.vmstat[NR_WRITTEN] - before);
                if budget == 0 {
                    break;
                }
                full |= self.writeback_file(cpu, file, budget, true);
                if full {
                    break;
                }
            }
            written = self.vmstat[NR_WRITTEN] - before;
        }
        if full && written < left {
            // blk_mq_get_tag: no request free. The flusher sleeps until wake_batch requests
            // have completed (sbq_wake_up; wake_batch = depth / 8, between 1 and 8).
            let batch = (self.cfg.writeback_queue_depth / 8).clamp(1, 8) as usize;
            let n = self.wb.requests.len();
            let until = self.wb.requests[batch.min(n) - 1];
            self.wb.start_all = Some(left - written);
            self.vmstat.count_vm_event(FLUSHER_REQUEST_WAITS);
            self.block_task(rqs, cpu, Some(until));
            return;
        }
        if written == 0 || written >= left {
            // The work is done (or found nothing dirty): wb_do_writeback returns, the worker
            // sleeps until the next work.
            self.wb.start_all = None;
            self.wb.flusher_running = false;
            self.schedule(rqs, cpu);
            return;
        }
        self.wb.start_all = Some(left - written);
        // A chunk may overrun the tick.
        self.long_step_tick(rqs, cpu, self.cpus[cpu].clock - t0);
    }

    /// The writeback domain's dirtyable pages: the memcg's on cgroup v2 (bounded by the
    /// global domain), the global one on cgroup v1.
    fn dirty_domain_pages(&self) -> u64 {
        let global = if self.wb.global_dirtyable > 0 {
            self.wb.global_dirtyable
        } else {
            u64::MAX
        };
        if self.cfg.cgroup_v1 {
            global
        } else {
            self.memcg.limit.min(global)
        }
    }

    /// Background threshold: dirty_background_ratio of the domain.
    pub fn background_thresh(&self) -> u64 {
        self.dirty_domain_pages().saturating_mul(BACKGROUND_RATIO) / 100
    }

    /// Dirty limit: vm_dirty_ratio of the domain.
    pub fn dirty_thresh(&self) -> u64 {
        self.dirty_domain_pages().saturating_mul(DIRTY_RATIO) / 100
    }

    /// folio_mark_dirty from a task that dirtied the folio (fault_dirty_shared_page,
    /// generic_perform_write), then balance_dirty_pages for a page-cache folio.
    pub fn task_dirty_folio(&mut self, cpu: CpuId, pfn: Pfn) {
        let was = self.folios.get(pfn).test(pg::DIRTY);
        self.folio_mark_dirty(pfn);
        if !was && self.folios.get(pfn).is_file_lru() {
            self.balance_dirty_pages(cpu);
        }
    }

    /// balance_dirty_pages: over the dirty limit, the writer sleeps until writeback brings
    /// dirty + writeback pages back under it (at most MAX_PAUSE), the flusher having been
    /// started (background writeback, run by `writeback_poll`).
    pub fn balance_dirty_pages(&mut self, cpu: CpuId) {
        // Between the freerun point and the limit the kernel slows the writer down by rate
        // (pos_ratio); that control is not modelled: only the limit stops it.
        let thresh = self.dirty_thresh();
        if self.wb.nr_dirty + self.wb.nr_writeback <= thresh {
            return;
        }
        let t0 = self.cpus[cpu].clock;
        // wb_start_background_writeback.
        self.writeback_poll(cpu);
        while self.wb.nr_dirty + self.wb.nr_writeback > thresh {
            let Some(&(done, _)) = self.wb.inflight.front() else {
                break;
            };
            let now = self.cpus[cpu].clock;
            if now >= t0 + MAX_PAUSE_NS {
                break;
            }
            self.idle_until(cpu, done.clamp(now, t0 + MAX_PAUSE_NS));
            self.writeback_poll(cpu);
        }
        let paused = self.cpus[cpu].clock - t0;
        if paused > 0 {
            self.vmstat.count_vm_event(DIRTY_PAUSES);
            self.vmstat.count_vm_events(DIRTY_PAUSE_NS, paused);
        }
    }

    /// shrink_folio_list on cgroup v1 (!writeback_throttling_sane) meeting a folio under
    /// writeback that reclaim has already tagged PG_reclaim: folio_wait_writeback, i.e. the
    /// reclaimer sleeps until the device has written it (and everything queued before it).
    pub fn reclaim_wait_on_writeback(&mut self, cpu: CpuId, pfn: Pfn) {
        self.vmstat.count_vm_event(RECLAIM_WRITEBACK_WAITS);
        let done = self
            .wb
            .inflight
            .iter()
            .find(|&&(_, p)| p == pfn)
            .map(|&(d, _)| d);
        if let Some(done) = done {
            self.idle_until(cpu, done);
        }
        self.writeback_poll(cpu);
    }

    /// Run what is due at `now` (the clock of the CPU about to step): writeback completions,
    /// background writeback over the threshold, the periodic writeback of expired inodes.
    pub fn writeback_poll(&mut self, cpu: CpuId) {
        let now = self.cpus[cpu].clock;
        if now > self.wb.now {
            self.wb.now = now;
        }
        self.end_io(now);
        if self.wb.nr_dirty > self.background_thresh() {
            self.vmstat.count_vm_event(WB_RUNS_BACKGROUND);
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
                    self.vmstat.count_vm_event(WB_RUNS_PERIODIC);
                    self.writeback_file(cpu, file, u64::MAX, false);
                    // redirty_tail: still-dirty pages start a new expiry period.
                    if let Some(Some(t)) = self.wb.dirtied_when.get_mut(file) {
                        *t = now;
                    }
                }
            }
        }
    }

    /// The device's completions by `now`: folio_end_writeback for the writes, and a block
    /// swap device's reads.
    pub fn end_io(&mut self, now: u64) {
        if self.swap.block.is_some() {
            self.swap_reads_poll(now);
        }
        while let Some(&(done, pfn)) = self.wb.inflight.front() {
            if done > now {
                break;
            }
            self.wb.inflight.pop_front();
            self.folio_end_writeback(pfn);
        }
    }

    /// reclaim_throttle(VMSCAN_THROTTLE_WRITEBACK): reclaim found nothing it could free while
    /// writes are in flight, so the reclaimer sleeps (at most HZ/10) until enough of them
    /// complete: __acct_reclaim_writeback, called from folio_end_writeback while a task is
    /// throttled, wakes the throttled tasks once more than SWAP_CLUSTER_MAX pages per
    /// throttled task (pgdat->nr_writeback_throttled) have been written since throttling
    /// began (NR_THROTTLED_WRITTEN counts pages, so one large folio can do it). The model
    /// computes the wake time when the task throttles, from the device's queue: the pages
    /// in flight complete in order, and pages the flusher has yet to submit (a queued
    /// start-all work) complete one `file_write_page` apart after them. False when nothing
    /// is in flight or queued (throttling would not help).
    /// The sleep is a real one for a workload task (`sleep_after_step`): its CPU runs other
    /// tasks (the flusher) or idles meanwhile.
    pub fn reclaim_throttle_writeback(&mut self, cpu: CpuId) -> bool {
        let now = self.cpus[cpu].clock;
        let queued = self.wb.start_all.is_some() && self.can_sleep(cpu);
        if self.wb.inflight.is_empty() && !queued {
            return false;
        }
        if self.wb.throttle_until.len() <= cpu {
            self.wb.throttle_until.resize(self.nr_cpus(), 0);
        }
        // This task and the others still asleep in reclaim_throttle.
        let nr_throttled = 1 + self
            .wb
            .throttle_until
            .iter()
            .enumerate()
            .filter(|&(c, &t)| c != cpu && t > now)
            .count() as u64;
        let need = SWAP_CLUSTER_MAX * nr_throttled;
        let mut written = 0;
        let mut wake = None;
        for &(done, pfn) in self.wb.inflight.iter().filter(|&&(d, _)| d > now) {
            written += self.folios.get(pfn).nr_pages();
            if written > need {
                wake = Some(done);
                break;
            }
        }
        let wake = wake.unwrap_or_else(|| {
            if queued {
                let left = need + 1 - written;
                self.wb.busy_until.max(now) + left * self.cost.file_write_page
            } else {
                // Not enough in flight: the timeout ends the sleep.
                now + RECLAIM_THROTTLE_NS
            }
        });
        self.vmstat.count_vm_event(RECLAIM_THROTTLES);
        let until = wake.clamp(now, now + RECLAIM_THROTTLE_NS);
        self.wb.throttle_until[cpu] = until;
        if self.can_sleep(cpu) {
            self.vmstat.count_vm_event(RECLAIM_THROTTLE_SLEEPS);
            self.sleep_after_step(cpu, until);
            if self.wb.throttled.len() <= cpu {
                self.wb.throttled.resize(self.nr_cpus(), false);
            }
            self.wb.throttled[cpu] = true;
        } else {
            self.idle_until(cpu, until);
            self.writeback_poll(cpu);
        }
        true
    }

    /// `cpu`'s task is to sleep in reclaim_throttle: its reclaim stops, the charge it is in
    /// gives up and the fault is retried after the sleep.
    pub fn sleep_pending(&self, cpu: CpuId) -> bool {
        self.wb.throttled.get(cpu).copied().unwrap_or(false)
    }

    /// folio_end_writeback: clear PG_writeback; a PG_reclaim folio that is still clean and on
    /// the LRU goes to the reclaim end (folio_rotate_reclaimable → lru_move_tail).
    /// A swap folio's write completes the same way (end_swap_bio_write → swap_write_end →
    /// end_page_writeback), without the page-cache accounting.
    fn folio_end_writeback(&mut self, pfn: Pfn) {
        let f = self.folios.get_mut(pfn);
        f.clear(pg::WRITEBACK);
        let n = f.nr_pages();
        if f.is_anon() {
            if self.swap.block.is_some() {
                self.vmstat.count_vm_events(SWAP_WRITES_COMPLETED, n);
            }
        } else {
            let (file, first) = (f.owner as usize, f.index as u64);
            self.file_block_written(file, first, n);
            self.wb.nr_writeback -= n;
        }
        if self.folios.get_mut(pfn).test_clear(pg::RECLAIM) {
            self.folio_rotate_reclaimable(pfn);
        }
    }

    /// folio_rotate_reclaimable: a clean folio still on the LRU goes to the reclaim end of
    /// the inactive list (lru_move_tail), counted as PGROTATED.
    fn folio_rotate_reclaimable(&mut self, pfn: Pfn) {
        let f = self.folios.get(pfn);
        if f.test(pg::DIRTY) || !f.test(pg::LRU) {
            return;
        }
        let n = f.nr_pages();
        self.lruvec.del(&mut self.folios, pfn);
        self.folios.get_mut(pfn).clear(pg::ACTIVE);
        self.lruvec.add_tail(&mut self.folios, pfn);
        self.vmstat.count_vm_events(PGROTATED, n);
    }
}
