//! vmpressure (mm/vmpressure.c) and the system workqueue that runs its work
//! (kernel/workqueue.c): one work item per vmpressure_win (512) pages a memcg's reclaim scans,
//! queued on the reclaiming CPU's pool, none while one is pending or when nothing was scanned;
//! and in a whole simulation, the kworker that runs it preempting the reclaimer.

mod common;

use reclaimlab_core::ResultDoc;
use reclaimlab_sim::config::Policy;
use reclaimlab_sim::kernel::Kernel;
use reclaimlab_sim::mm::vmpressure::{Vmpr, VMPRESSURE_WIN};
use reclaimlab_sim::workqueue::Work;

const WORK: Work = Work::Vmpressure(Vmpr::Memcg);

fn kernel() -> Kernel {
    Kernel::new(common::cfg(0), Policy::linux_6_18(), 2, 1 << 20, 0, 60, 1)
}

#[test]
fn one_item_per_window_of_scanned_pages() {
    let mut k = kernel();
    // 15 passes of 32 pages: 480 < 512, nothing queued.
    for _ in 0..15 {
        k.vmpressure(0, Vmpr::Memcg, 32, 16);
    }
    assert!(!k.work_pending(WORK));
    assert_eq!(k.worklist_len(0), 0);
    // The 16th reaches the window: one item on this CPU's pool.
    k.vmpressure(0, Vmpr::Memcg, 32, 16);
    assert!(k.work_pending(WORK));
    assert_eq!(k.worklist_len(0), 1);
    assert_eq!(k.vmpressure.get(Vmpr::Memcg).tree_scanned, VMPRESSURE_WIN);
    // More scanning while it is pending queues nothing more; the sums keep growing.
    k.vmpressure(0, Vmpr::Memcg, 600, 0);
    assert_eq!(k.worklist_len(0), 1);
    assert_eq!(
        k.vmpressure.get(Vmpr::Memcg).tree_scanned,
        VMPRESSURE_WIN + 600
    );
    // The work takes the sums: the window starts again when it runs.
    assert_eq!(k.process_one_work(0), Some(k.cost.vmpressure_work));
    assert!(!k.work_pending(WORK));
    assert_eq!(k.vmpressure.get(Vmpr::Memcg).tree_scanned, 0);
    assert_eq!(k.vmpressure.get(Vmpr::Memcg).tree_reclaimed, 0);
    assert_eq!(k.process_one_work(0), None);
    k.vmpressure(0, Vmpr::Memcg, VMPRESSURE_WIN - 1, 0);
    assert!(!k.work_pending(WORK));
    k.vmpressure(0, Vmpr::Memcg, 1, 0);
    assert!(k.work_pending(WORK));
}

#[test]
fn nothing_scanned_queues_nothing() {
    let mut k = kernel();
    k.vmpressure.memcg.tree_scanned = VMPRESSURE_WIN;
    // vmpressure returns before the sums when the pass scanned nothing.
    k.vmpressure(1, Vmpr::Memcg, 0, 0);
    assert!(!k.work_pending(WORK));
    assert_eq!(k.worklist_len(1), 0);
}

#[test]
fn the_item_goes_to_the_reclaiming_cpus_pool_and_kworker() {
    let mut k = kernel();
    k.vmpressure(1, Vmpr::Memcg, VMPRESSURE_WIN, 0);
    assert_eq!(k.worklist_len(1), 1);
    assert_eq!(k.worklist_len(0), 0);
    let w = k.workqueue.worker.0[1].expect("CPU 1's kworker");
    assert!(k.workqueue.worker.0[0].is_none());
    assert_eq!(k.tasks[w].pinned, Some(1));
    assert!(k.tasks[w].kthread);
    // kick_pool: its wake-up is due at the queueing CPU's time.
    let now = k.cpus[1].clock;
    assert!(k.sched.timers.contains(&(now, w)));
}

#[test]
fn an_item_still_running_elsewhere_is_queued_there() {
    let mut k = kernel();
    k.vmpressure(0, Vmpr::Memcg, VMPRESSURE_WIN, 0);
    // CPU 0's kworker starts it: no longer pending, but executing on CPU 0.
    assert!(k.process_one_work(0).is_some());
    // CPU 1's reclaim fills the next window meanwhile: __queue_work keeps it non-reentrant.
    k.vmpressure(1, Vmpr::Memcg, VMPRESSURE_WIN, 0);
    assert_eq!(k.worklist_len(0), 1);
    assert_eq!(k.worklist_len(1), 0);
    // Once it has finished there, the next one goes to the queueing CPU.
    assert!(k.process_one_work(0).is_some());
    assert_eq!(k.process_one_work(0), None);
    k.vmpressure(1, Vmpr::Memcg, VMPRESSURE_WIN, 0);
    assert_eq!(k.worklist_len(1), 1);
}

#[test]
fn critical_priority_counts_a_whole_window() {
    let mut k = kernel();
    k.vmpressure_prio(0, Vmpr::Memcg, 4);
    assert!(!k.work_pending(WORK));
    k.vmpressure_prio(0, Vmpr::Memcg, 3);
    assert!(k.work_pending(WORK));
    assert_eq!(k.vmpressure.get(Vmpr::Memcg).tree_reclaimed, 0);
}

#[test]
fn memory_reclaim_is_proactive_and_feeds_no_vmpressure() {
    let doc = common::sim_with(
        "file-reclaim",
        &[
            "workload.file_bytes=8M",
            "workload.reclaim_bytes=6M",
            "memcg.limit=64M",
            "workload.threads=1",
        ],
        &[],
    );
    let r = &doc.runs[0];
    assert!(r.counters["pgscan_file"] > 2 * VMPRESSURE_WIN);
    assert!(!r.extra.contains_key("workqueue_items_queued"));
}

/// The file suite's random reader, small: two pinned threads fill and reclaim a file's page
/// cache in a memcg a quarter of its size.
fn random_reader(sets: &[&str]) -> ResultDoc {
    common::sim_with(
        "file-mmap-rw",
        &[
            "run.duration=300ms",
            "workload.file_bytes=32M",
            "memcg.limit=8M",
            "workload.threads=2",
            "workload.cpus=[0,1]",
            "workload.write=false",
            "workload.pattern=random",
            "sim.readahead_pages=64",
        ],
        sets,
    )
}

#[test]
fn the_reclaimers_kworkers_run_the_items_and_preempt_them() {
    let doc = random_reader(&[]);
    let r = &doc.runs[0];
    let scanned = r.counters["pgscan_file"];
    let queued = r.extra["workqueue_items_queued"].as_u64().unwrap();
    let ran = r.extra["workqueue_items_run"].as_u64().unwrap();
    let preempted = r.extra["kworker_preemptions"].as_u64().unwrap();
    assert!(scanned > 10 * VMPRESSURE_WIN, "the row reclaims: {scanned}");
    // At most one item per window (each run restarts it), and not far fewer.
    assert!(
        queued <= scanned / VMPRESSURE_WIN + 2,
        "{queued} items, {scanned} scanned"
    );
    assert!(
        queued * VMPRESSURE_WIN * 2 > scanned,
        "{queued} items, {scanned} scanned"
    );
    // Each queued item runs (the last may still wait at the end), and the kworker takes the
    // reader's CPU to run it.
    assert!(ran + 2 >= queued && ran <= queued);
    assert!(preempted > 0 && preempted <= ran);
    // One kworker per CPU, bound there: it never migrates.
    let p = r.extra["placement"]["tasks"].as_array().unwrap();
    let kworkers: Vec<_> = p.iter().filter(|t| t["kind"] == "kworker").collect();
    assert_eq!(kworkers.len(), 2);
    assert!(kworkers.iter().all(|t| t["migrations"] == 0));
    assert!(r.extra["cpu_time_ns"]["workqueue"].as_u64().unwrap() > 0);
}

#[test]
fn each_item_and_each_wake_up_cost_their_measured_time() {
    for (profile, item, run) in [("generic-x86", 500, 1000), ("kvm-guest-2vcpu", 461, 1790)] {
        let doc = random_reader(&[&format!("machine.profile={profile}")]);
        let r = &doc.runs[0];
        let spent = r.extra["cpu_time_ns"]["workqueue"].as_u64().unwrap();
        let items = r.extra["workqueue_items_run"].as_u64().unwrap();
        let wakeups: u64 = r.extra["placement"]["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["kind"] == "kworker")
            .map(|t| t["wakeups"].as_u64().unwrap())
            .sum();
        assert!(items > 0 && wakeups > 0 && wakeups <= items);
        // Every wake-up has an item queued, and runs the worker loop once; the run may end
        // inside the last item.
        let full = items * item + wakeups * run;
        assert!(
            spent <= full && spent + item + run >= full,
            "{profile}: {spent} ns, {items} items, {wakeups} wake-ups"
        );
    }
}

#[test]
fn same_result_twice() {
    common::same_twice(
        "file-mmap-rw",
        &[
            "run.duration=100ms",
            "workload.file_bytes=16M",
            "memcg.limit=4M",
            "workload.threads=2",
            "workload.cpus=[0,1]",
            "workload.write=false",
            "workload.pattern=random",
        ],
    );
}
