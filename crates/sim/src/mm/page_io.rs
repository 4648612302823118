//! Swap I/O to a block device (mm/page_io.c), for `swap.device = "block"`.
//!
//! Writes: pageout → swap_writeout → __swap_writepage starts writeback on the folio
//! (folio_start_writeback), unlocks it and adds it to the write bio shrink_folio_list is
//! building (swap_add_folio into its swap_io_ctx); the bio goes to the device when it holds
//! SWAP_CLUSTER_MAX folios or when the list is done (swap_write_submit). pageout returns
//! PAGE_SUCCESS with the folio under writeback, so reclaim keeps it on the LRU; the bio's
//! end (end_swap_bio_write → swap_write_end → folio_end_writeback) rotates the folio, which
//! pageout tagged PG_reclaim, to the inactive tail (mm/page_writeback.rs), where a later scan
//! frees it: clean, in the swap cache, unmapped (__remove_mapping).
//!
//! Reads (mm/swap_state.rs): swap_read_folio adds a folio to the read bio; swap_read_submit
//! sends it. The folios stay locked until swap_read_end; the task waiting for one sleeps
//! until then and the completion wakes it from the CPU its interrupt runs on (`swap.irq_cpu`).
//!
//! The device is the one file writeback uses (page_writeback.rs `blk_submit`): requests
//! are served one after another (`swap_read_request` or `swap_write_request` each, and
//! `swap_page_transfer` per page) and complete a fixed latency after their transfer
//! (`swap_read_latency`, `swap_write_latency`, which hold one request's service).
//!
//! The completion's CPU time (`swap_complete_page` per page) is charged to the CPU its
//! interrupt runs on, as an interrupt steals it from whatever runs there
//! (`swap_complete_irq`), at the request's submission rather than at its completion.
//!
//! With `swap.ring_descriptors` the disk's virtqueue has that many descriptors
//! (drivers/virtio_blk.rs): a write that finds too few free stops the queue and waits, with
//! every write after it, for the next completion to restart the queue on kblockd
//! (kblockd.rs), which costs the completion's CPU a kworker run and the requests' dispatch;
//! the device's order of service is unchanged. Reads take descriptors but do not wait.
//! `swap.scheduler = "mq-deadline"` merges a waiting write into an adjacent waiting request.
//!
//! Not modelled: the device's tags for swap (blk_mq_get_tag waits; the ring fills first on a
//! device without indirect descriptors); reads waiting on a stopped queue; a bio split where
//! swap slots are not contiguous (one request per batch); cluster readahead for rotational
//! disks.

use crate::cputime::Spent;
use crate::kernel::{CpuId, Kernel, MmId};
use crate::mm::folio::{pg, Pfn};
use crate::mm::swap::{Elevator, IrqCpu, Read};
use crate::mm::vmscan::SWAP_CLUSTER_MAX;
use crate::mm::vmstat::VmEventItem::*;

/// What `swap_submit_cpu` submits.
#[derive(Clone, Copy)]
enum Io {
    Read,
    /// A write, and the completion that dispatches it if the I/O scheduler holds it.
    Write {
        held: Option<u64>,
    },
}

impl Kernel {
    /// __swap_writepage for a device without SWP_SYNCHRONOUS_IO: the folio goes under
    /// writeback and joins the write bio being built; a full bio is submitted at once.
    /// pageout set PG_reclaim before the write (folio_set_reclaim), so the write's end
    /// rotates the folio.
    pub(crate) fn swap_writepage_bdev(&mut self, cpu: CpuId, pfn: Pfn) {
        let f = self.folios.get_mut(pfn);
        f.set(pg::WRITEBACK);
        f.set(pg::RECLAIM);
        let Some(b) = self.swap.block.as_mut() else {
            return;
        };
        b.write_batch.push(pfn);
        if b.write_batch.len() as u64 >= SWAP_CLUSTER_MAX {
            self.swap_write_submit(cpu);
        }
    }

    /// swap_write_submit → swap_bdev_submit_write: the batch goes to the device as one bio;
    /// each folio's writeback ends when the bio completes (writeback_poll).
    pub(crate) fn swap_write_submit(&mut self, cpu: CpuId) {
        let Some(b) = self.swap.block.as_mut() else {
            return;
        };
        if b.write_batch.is_empty() {
            return;
        }
        let batch = std::mem::take(&mut b.write_batch);
        let now = self.cpus[cpu].clock;
        let indirect = self.swap_indirect_desc();
        // Whether the driver takes the write now (its descriptors estimated before the plug
        // merges the batch's first request into an earlier one); always without a ring size.
        let held = if self.swap_virtqueue().size > 0 {
            let runs = crate::mm::swapfile::plug_requests(&mut self.swap_slots(&batch)).max(1);
            let guess = crate::drivers::virtio_blk::descriptors(runs, batch.len() as u64, indirect);
            self.swap_virtqueue().would_hold(now, guess)
        } else {
            None
        };
        self.vmstat.count_vm_event(SWAP_WRITE_REQUESTS);
        let requests = self.swap_submit_cpu(cpu, &batch, Io::Write { held });
        let pages: u64 = batch.iter().map(|&p| self.folios.get(p).nr_pages()).sum();
        let service = self.cost.swap_write_request;
        let done = self.blk_submit(
            cpu,
            requests * service,
            pages * self.cost.swap_page_transfer,
            self.cost.swap_write_latency,
            service,
        );
        let descs = crate::drivers::virtio_blk::descriptors(requests, batch.len() as u64, indirect);
        self.swap_virtqueue().queue_rq(now, descs, done, held);
        let irq = self.swap_irq_cpu(cpu);
        self.swap_complete_irq(irq, pages);
        if let Some(c) = held {
            // virtblk_done's blk_mq_start_stopped_hw_queues: kblockd on the interrupt's CPU.
            self.vmstat
                .count_vm_events(SWAP_WRITE_REQUESTS_HELD, requests);
            self.kblockd_run_hw_queue(irq, c, requests);
        }
        for pfn in batch {
            self.inflight_add(done, pfn);
        }
    }

    /// The swap disk's virtqueue.
    fn swap_virtqueue(&mut self) -> &mut crate::drivers::virtio_blk::VirtQueue {
        &mut self
            .swap
            .block
            .as_mut()
            .expect("a block swap device")
            .virtqueue
    }

    /// VIRTIO_RING_F_INDIRECT_DESC on the swap disk (`swap.indirect_desc`).
    fn swap_indirect_desc(&self) -> bool {
        self.swap
            .block
            .as_ref()
            .and_then(|b| b.cfg)
            .is_some_and(|c| c.indirect_desc)
    }

    /// The swap slots of `folios` (those that have one).
    fn swap_slots(&self, folios: &[Pfn]) -> Vec<u32> {
        match self.swap.block.as_ref().and_then(|b| b.map.as_ref()) {
            Some(map) => folios
                .iter()
                .filter_map(|&p| {
                    let f = self.folios.get(p);
                    map.slot_of(f.owner as MmId, u64::from(f.index))
                })
                .collect(),
            None => Vec::new(),
        }
    }

    /// The submitting CPU's work for swap I/O on `folios`: a bio each, and a request per run
    /// of adjacent slots (the plug merges a bio into the request before it when its slot
    /// follows; blk_attempt_plug_merge), dispatched to the driver. Writes with
    /// `swap.request_pages` also extend the last request of the task's plug from an earlier
    /// bio. Returns the new requests: the device serves each (`swap_read_request`,
    /// `swap_write_request`), but the batch completes as one (`blk_submit`).
    ///
    /// A write the I/O scheduler holds (`Io::Write` with `held`: the completion whose rerun of
    /// the queue dispatches it) merges into any held request it extends instead (the
    /// scheduler's insert merge, elv_attempt_insert_merge, from any CPU).
    fn swap_submit_cpu(&mut self, cpu: CpuId, folios: &[Pfn], io: Io) -> u64 {
        let mut slots = self.swap_slots(folios);
        let cfg = self.swap.block.as_ref().and_then(|b| b.cfg);
        let max = cfg.map_or(0, |c| c.request_pages);
        // Only an I/O scheduler merges into what waits (blk_mq_sched_try_insert_merge).
        let elevator = cfg.is_some_and(|c| c.scheduler == Elevator::MqDeadline);
        let now = self.cpus[cpu].clock;
        let requests = match io {
            Io::Write { held } if max > 0 && !slots.is_empty() => {
                let b = self.swap.block.as_mut().expect("a block swap device");
                match held.filter(|_| elevator) {
                    Some(at) => b.elevator.insert_merge(&mut slots, max, now, at),
                    None => crate::mm::swapfile::plug_merge(&mut slots, &mut b.plug_last[cpu], max),
                }
            }
            _ => crate::mm::swapfile::plug_requests(&mut slots).max(1),
        };
        // A request that waits on a stopped queue is dispatched by kblockd (kblockd.rs).
        let per_request = match io {
            Io::Write { held: Some(_) } => self
                .cost
                .swap_submit_request
                .saturating_sub(self.cost.blk_dispatch_request),
            _ => self.cost.swap_submit_request,
        };
        let ns = folios.len() as u64 * self.cost.swap_submit_bio + requests * per_request;
        self.charge(cpu, ns, Spent::Writeback);
        self.vmstat.count_vm_events(SWAP_SUBMIT_REQUESTS, requests);
        requests
    }

    /// The one CPU every swap completion interrupts, if the device is a one-queue block
    /// device (`swap.irq_cpu` a CPU); None for zram or per-CPU queues.
    pub(crate) fn swap_irq_fixed_cpu(&self) -> Option<CpuId> {
        match self.swap.block.as_ref().and_then(|b| b.cfg).map(|c| c.irq) {
            Some(IrqCpu::Cpu(c)) => Some(c),
            _ => None,
        }
    }

    /// The CPU a request submitted from `cpu` completes on.
    fn swap_irq_cpu(&self, cpu: CpuId) -> CpuId {
        self.swap_irq_fixed_cpu().unwrap_or(cpu)
    }

    /// The completion of a request of `pages` on `irq`, the CPU its interrupt runs on: the
    /// hardirq, then BLOCK_SOFTIRQ there (blk_mq_complete_request on a one-queue device, or on
    /// the submitter's own queue) ending the request and each bio (end_swap_bio_read/write).
    /// Its time is charged to that CPU's clock when the request is submitted, as the
    /// call-function handlers are (smp.rs): whatever that CPU runs around the completion
    /// loses it; an idle CPU's charge only matters to a task placed there before its clock.
    fn swap_complete_irq(&mut self, irq: CpuId, pages: u64) {
        let ns = pages * self.cost.swap_complete_page;
        self.vmstat.count_vm_events(SWAP_COMPLETE_NS, ns);
        self.charge(irq, ns, Spent::Writeback);
    }

    /// swap_read_submit → swap_bdev_submit_read for `folios`, read by one bio from `cpu`:
    /// they stay locked (reclaim skips them, a fault on one waits) until the bio completes.
    pub(crate) fn swap_read_submit(&mut self, cpu: CpuId, folios: &[Pfn]) -> Read {
        let requests = self.swap_submit_cpu(cpu, folios, Io::Read);
        let pages: u64 = folios.iter().map(|&p| self.folios.get(p).nr_pages()).sum();
        let service = self.cost.swap_read_request;
        let done = self.blk_submit(
            cpu,
            requests * service,
            pages * self.cost.swap_page_transfer,
            self.cost.swap_read_latency,
            service,
        );
        let descs = crate::drivers::virtio_blk::descriptors(
            requests,
            folios.len() as u64,
            self.swap_indirect_desc(),
        );
        let now = self.cpus[cpu].clock;
        // Reads take ring descriptors too; the model does not hold them on a stopped queue.
        if let Some(b) = self.swap.block.as_mut() {
            b.virtqueue.queue_rq(now, descs, done, None);
        }
        let read = Read {
            done,
            irq: self.swap_irq_cpu(cpu),
        };
        self.swap_complete_irq(read.irq, pages);
        self.softirq_block_queued(read.irq, done, pages);
        let b = self.swap.block.as_mut().expect("a block swap device");
        self.vmstat.count_vm_event(SWAP_READ_REQUESTS);
        for &pfn in folios {
            b.reads.insert(pfn, read);
            b.read_order.push_back((done, pfn));
        }
        read
    }

    /// blk_finish_plug at the end of a shrink_lruvec on `cpu`: the plug's last request is
    /// sent; the next write starts a new one.
    pub(crate) fn swap_plug_finish(&mut self, cpu: CpuId) {
        if let Some(last) = self
            .swap
            .block
            .as_mut()
            .and_then(|b| b.plug_last.get_mut(cpu))
        {
            *last = None;
        }
    }

    /// swap_read_end for the reads completed by `now`: their folios are unlocked.
    pub(crate) fn swap_reads_poll(&mut self, now: u64) {
        let Some(b) = self.swap.block.as_mut() else {
            return;
        };
        while let Some(&(done, pfn)) = b.read_order.front() {
            if done > now {
                break;
            }
            b.read_order.pop_front();
            if b.reads.get(&pfn).is_some_and(|r| r.done == done) {
                b.reads.remove(&pfn);
            }
        }
    }

    /// The task on `cpu` waits for `read` (its own fault's, or a readahead's still in
    /// flight: folio_lock_or_retry → io_schedule), woken by the read's completion.
    pub(crate) fn swap_read_wait(&mut self, cpu: CpuId, read: Read, on_readahead: bool) {
        let slept = self.io_sleep_until(cpu, read.done, read.irq);
        if slept == 0 {
            return;
        }
        self.vmstat.count_vm_event(SWAPIN_SLEEPS);
        self.vmstat.count_vm_events(SWAPIN_SLEEP_NS, slept);
        if on_readahead {
            self.vmstat.count_vm_event(SWAPIN_SLEEPS_ON_READAHEAD);
        }
    }

    /// exit_mmap dropping a folio that may still have I/O in flight: the model forgets the
    /// I/O (the kernel's bio holds a reference until it completes; the model frees at once).
    pub(crate) fn swap_forget_io(&mut self, pfn: Pfn) {
        let writeback = self.folios.get(pfn).test(pg::WRITEBACK);
        let Some(b) = self.swap.block.as_mut() else {
            return;
        };
        b.reads.remove(&pfn);
        if writeback {
            b.write_batch.retain(|&p| p != pfn);
            self.wb.inflight.retain(|&(_, p)| p != pfn);
            self.folios.get_mut(pfn).clear(pg::WRITEBACK);
        }
    }
}
