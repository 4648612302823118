//! kblockd (kblockd.rs) and the swap writes mq-deadline holds (mm/page_io.rs); the plug's and
//! the scheduler's request merging are tested in mm/swapfile.rs.

mod common;

use common::sim_with;

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

fn extra_u64(doc: &reclaimlab_core::ResultDoc, key: &str) -> u64 {
    doc.runs[0]
        .extra
        .get(key)
        .and_then(|v| v.as_u64())
        .unwrap_or(0)
}

#[test]
fn mq_deadline_dispatches_held_swap_writes_from_kblockd_on_the_interrupt_cpu() {
    let none = sim_with("anon-sweep", BASE, &[]);
    assert_eq!(
        extra_u64(&none, "kblockd_runs"),
        0,
        "no scheduler: no kblockd"
    );
    let mq = sim_with("anon-sweep", BASE, &["swap.scheduler=mq-deadline"]);
    let runs = extra_u64(&mq, "kblockd_runs");
    assert!(runs > 0, "held writes need kblockd runs");
    assert!(extra_u64(&mq, "kblockd_runs_queued") >= runs);
    // The kworker runs on CPU 1 only, and the workers see it there.
    assert!(
        extra_u64(&mq, "kworker_preemptions") > extra_u64(&none, "kworker_preemptions"),
        "kblockd preempts the workers on the interrupt CPU"
    );
}

#[test]
fn an_unknown_scheduler_is_refused() {
    let e = common::try_sim_with("anon-sweep", BASE, &["swap.scheduler=bfq"]).unwrap_err();
    assert!(e.contains("none and mq-deadline"), "{e}");
}
