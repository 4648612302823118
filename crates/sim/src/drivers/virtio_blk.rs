//! virtio-blk's one virtqueue (drivers/block/virtio_blk.c) as far as it decides who
//! dispatches a request: the submitting task, or kblockd after a completion.
//!
//! virtio_queue_rq puts a request on the ring with one descriptor for its header, one per
//! data segment and one for its status (virtblk_add_req; a device without
//! VIRTIO_RING_F_INDIRECT_DESC has no indirect tables, so every segment takes a ring slot).
//! When the ring has too few free descriptors it fails with -ENOSPC: the driver stops the
//! hardware queue (blk_mq_stop_hw_queue) and the request goes back to the dispatch list.
//! While the queue is stopped nobody's run of it dispatches anything. The next completion's
//! interrupt (virtblk_done) restarts it with blk_mq_start_stopped_hw_queues(q, true): an
//! asynchronous run, on kblockd, dispatches what waited.
//!
//! The model keeps each request's descriptors until its completion time. A request that finds
//! the queue stopped, or too few descriptors free, waits for the earliest completion in
//! flight; it occupies the ring from then (kblockd's dispatch) to its own completion. A request
//! larger than the whole ring goes alone when the ring is empty (max_segments keeps a real one
//! smaller).

use std::collections::VecDeque;

/// The ring's occupancy and the stopped queue's restart.
#[derive(Clone, Debug, Default)]
pub struct VirtQueue {
    /// Ring size in descriptors (0: no limit, never stopped).
    pub size: u32,
    /// Dispatched requests' (completion, descriptors), in completion order.
    inflight: VecDeque<(u64, u32)>,
    used: u32,
    /// The stopped queue: the completion that restarts it, and the requests waiting for it.
    stopped: Option<(u64, Vec<(u64, u32)>)>,
}

impl VirtQueue {
    pub fn new(size: u32) -> VirtQueue {
        VirtQueue {
            size,
            ..Default::default()
        }
    }

    /// virtblk_done for every completion by `now` (their descriptors come back); a restart
    /// due by then has run and dispatched the waiting requests.
    fn retire(&mut self, now: u64) {
        loop {
            while self.inflight.front().is_some_and(|&(d, _)| d <= now) {
                let (_, n) = self.inflight.pop_front().expect("checked");
                self.used -= n;
            }
            match self.stopped.take() {
                Some((at, waiting)) if at <= now => {
                    for (done, n) in waiting {
                        self.insert(done, n);
                    }
                }
                s => {
                    self.stopped = s;
                    return;
                }
            }
        }
    }

    fn insert(&mut self, done: u64, n: u32) {
        let at = self.inflight.partition_point(|&(d, _)| d <= done);
        self.inflight.insert(at, (done, n));
        self.used += n;
    }

    /// Whether a submission at `now` of requests taking `descs` descriptors would be held:
    /// the completion whose restart dispatches it, or None if the submitter's own run of the
    /// queue puts it on the ring.
    pub fn would_hold(&mut self, now: u64, descs: u32) -> Option<u64> {
        if self.size == 0 {
            return None;
        }
        self.retire(now);
        if let Some((at, _)) = &self.stopped {
            return Some(*at);
        }
        if self.used + descs <= self.size || self.inflight.is_empty() {
            return None;
        }
        self.inflight.front().map(|&(d, _)| d)
    }

    /// virtio_queue_rq for requests of `descs` descriptors completing at `done`, submitted at
    /// `now`: on the ring, or (with `held`, from [`VirtQueue::would_hold`]) waiting on the
    /// stopped queue for that completion.
    pub fn queue_rq(&mut self, now: u64, descs: u32, done: u64, held: Option<u64>) {
        if self.size == 0 {
            return;
        }
        self.retire(now);
        match held {
            None => self.insert(done, descs),
            Some(at) => self
                .stopped
                .get_or_insert_with(|| (at, Vec::new()))
                .1
                .push((done, descs)),
        }
    }

    /// Descriptors on the ring at `now`.
    pub fn used(&mut self, now: u64) -> u32 {
        self.retire(now);
        self.used
    }
}

/// Descriptors a submission takes: per request a header and a status, per folio a data
/// segment (a folio is physically contiguous; order-0 folios of reclaim are not adjacent).
/// With VIRTIO_RING_F_INDIRECT_DESC a request takes one.
pub fn descriptors(requests: u64, folios: u64, indirect: bool) -> u32 {
    let n = if indirect {
        requests
    } else {
        folios + 2 * requests
    };
    n.min(u64::from(u32::MAX)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_ring_stops_the_queue_until_the_next_completion() {
        let mut q = VirtQueue::new(12);
        // Two one-page requests: 6 descriptors, done at 100 and 200.
        assert_eq!(q.would_hold(0, 6), None);
        q.queue_rq(0, 6, 100, None);
        assert_eq!(q.would_hold(10, 6), None);
        q.queue_rq(10, 6, 200, None);
        // Full: the next waits for the completion at 100.
        assert_eq!(q.would_hold(20, 3), Some(100));
        q.queue_rq(20, 3, 300, Some(100));
        // Stopped: even a request that would fit waits for the restart.
        assert_eq!(q.used(30), 12);
        assert_eq!(q.would_hold(30, 0), Some(100));
        // At 100 the restart dispatches it: 6 (done 200) + 3 (done 300).
        assert_eq!(q.used(100), 9);
        assert_eq!(q.would_hold(100, 3), None);
        assert_eq!(q.used(300), 0);
    }

    #[test]
    fn no_ring_size_never_holds_and_an_empty_ring_takes_any_request() {
        let mut q = VirtQueue::new(0);
        assert_eq!(q.would_hold(0, 1_000), None);
        let mut q = VirtQueue::new(8);
        assert_eq!(q.would_hold(0, 20), None);
    }

    #[test]
    fn a_request_takes_a_descriptor_per_segment_and_two_more_without_indirect() {
        assert_eq!(descriptors(1, 1, false), 3);
        assert_eq!(descriptors(2, 32, false), 36);
        assert_eq!(descriptors(2, 32, true), 2);
    }
}
