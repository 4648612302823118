//! kblockd (kblockd.rs) and the swap writes that wait on a queue stopped by a full virtqueue
//! (drivers/virtio_blk.rs, mm/page_io.rs); the plug's and the scheduler's request merging are
//! tested in mm/swapfile.rs.

mod common;

use common::{extra_u64, sim_with};

/// Two unpinned processes swapping to a one-queue disk whose interrupt is on CPU 1.
const BASE: &[&str] = &[
    "run.duration=1s",
    "workload.bytes=16M",
    "workload.processes=2",
    "workload.cpus=all",
    "memcg.limit=16M",
    "swap.device=block",
    "swap.irq_cpu=1",
];

#[test]
fn writes_that_find_the_ring_full_are_dispatched_by_kblockd() {
    let unlimited = sim_with("anon-sweep", BASE, &["swap.scheduler=mq-deadline"]);
    assert_eq!(
        extra_u64(&unlimited, "kblockd_runs"),
        0,
        "no ring size: the submitters dispatch everything"
    );
    let ring = sim_with(
        "anon-sweep",
        BASE,
        &["swap.scheduler=mq-deadline", "swap.ring_descriptors=256"],
    );
    let runs = extra_u64(&ring, "kblockd_runs");
    let held = extra_u64(&ring, "swap_write_requests_held");
    assert!(
        runs > 0 && held > 0,
        "a 256-descriptor ring fills: {runs} runs, {held} held"
    );
    assert!(extra_u64(&ring, "kblockd_runs_queued") >= runs);
    // Every held request waits for a run; a run takes all that waited for its completion.
    assert!(held >= runs, "{held} held requests in {runs} runs");
    // With indirect descriptors a request takes one slot of the ring, not one per page and two.
    let indirect = sim_with(
        "anon-sweep",
        BASE,
        &[
            "swap.scheduler=mq-deadline",
            "swap.ring_descriptors=256",
            "swap.indirect_desc=true",
        ],
    );
    assert!(
        extra_u64(&indirect, "swap_write_requests_held") < held,
        "indirect descriptors: fewer writes wait"
    );
}

#[test]
fn an_unknown_scheduler_is_refused() {
    let e = common::try_sim_with("anon-sweep", BASE, &["swap.scheduler=bfq"]).unwrap_err();
    assert!(e.contains("none and mq-deadline"), "{e}");
}
