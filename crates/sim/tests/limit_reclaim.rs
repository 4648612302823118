//! limit-reclaim: one reclaimer against two lowering one memcg's limit at once (calibrate's
//! `contention` family in the model).

mod common;

use reclaimlab_core::{ResultDoc, Scenario, Target};

/// The shipped scenario at a small size (8 MiB of 16 MiB prepared) with `sets` added.
fn simulate(pages: &str, reclaimers: u32, sets: &[&str]) -> ResultDoc {
    let sets: Vec<String> = [
        format!("workload.pages={pages}"),
        format!("workload.reclaimers={reclaimers}"),
        "workload.bytes=16M".into(),
        "workload.reclaim_bytes=8M".into(),
    ]
    .into_iter()
    .chain(sets.iter().map(|s| s.to_string()))
    .collect();
    let scn = Scenario::load("limit-reclaim", &sets, Target::Sim).expect("scenario");
    reclaimlab_sim::run(&scn, &Default::default()).expect("simulation")
}

/// The same on this machine's profile.
fn run(pages: &str, reclaimers: u32) -> ResultDoc {
    simulate(pages, reclaimers, &["machine.profile=kvm-guest-2vcpu"])
}

fn x(d: &ResultDoc, key: &str) -> f64 {
    d.runs[0].extra[key]
        .as_f64()
        .unwrap_or_else(|| panic!("extra.{key} missing"))
}

#[test]
fn two_file_reclaimers_wait_for_each_others_locks_and_one_never_does() {
    let one = run("file", 1);
    let two = run("file", 2);
    for d in [&one, &two] {
        // The limit came down by 2048 pages; the stocks drained add at most 64 per CPU.
        let n = x(d, "limit_reclaim_pages");
        assert!((2048.0..=2048.0 + 128.0).contains(&n), "{n}");
    }
    assert_eq!(x(&one, "limit_lru_lock_wait_ns"), 0.0);
    assert_eq!(x(&one, "limit_lock_line_transfers"), 0.0);
    assert!(x(&two, "limit_lru_lock_wait_ns") > 0.0);
    assert!(x(&two, "limit_lock_line_transfers") > 0.0);
    // No mapped page: no flush at all.
    assert_eq!(x(&two, "limit_tlb_shootdowns"), 0.0);
    let (c1, c2) = (
        x(&one, "limit_reclaim_cpu_ns_per_page"),
        x(&two, "limit_reclaim_cpu_ns_per_page"),
    );
    assert!(c2 > 1.1 * c1, "two CPUs {c2} ns/page, one {c1}");
    // Both reclaimed (each took part of the LRU, not one CPU all of it).
    let split = &two.runs[0].extra["limit_reclaimer_pages"];
    assert!(
        split
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p.as_u64().unwrap() > 512),
        "{split}"
    );
}

#[test]
fn two_anon_reclaimers_shoot_down_every_page_at_the_other_and_the_ipis_make_the_difference() {
    let one = run("anon", 1);
    let two = run("anon", 2);
    assert_eq!(x(&one, "limit_tlb_shootdowns"), 0.0);
    assert_eq!(x(&one, "limit_smp_call_wait_ns"), 0.0);
    let stolen = x(&two, "limit_pgsteal_anon");
    let ipis = x(&two, "limit_tlb_shootdowns");
    // Each reclaimer's mm has run on both CPUs (as calibrate's forked children do), and a
    // batched flush has no mm: every dirty folio's flush reaches the other CPU, which runs
    // the other reclaimer (not lazy), whichever process's page it was.
    assert!(
        (0.9 * stolen..=1.1 * stolen).contains(&ipis),
        "{ipis} shootdowns for {stolen} pages"
    );
    let pages = x(&two, "limit_reclaim_pages");
    let extra = x(&two, "limit_reclaim_cpu_ns_per_page") - x(&one, "limit_reclaim_cpu_ns_per_page");
    // A handler that ran while its CPU waited for its own call is in both the wait and the
    // handler time: counted once.
    let in_wait = x(&two, "limit_smp_call_handler_in_wait_ns");
    assert!(
        in_wait > 0.0,
        "both CPUs flush each other: some handlers run in the other's wait"
    );
    let ipi = (x(&two, "limit_smp_call_wait_ns") + x(&two, "limit_smp_call_handler_ns") - in_wait)
        / pages;
    assert!(extra > 0.0);
    // The senders' waits and the handlers are most of the second CPU's extra time.
    assert!(
        ipi > 0.7 * extra && ipi < 1.3 * extra,
        "IPIs {ipi} of {extra} ns/page"
    );
}

#[test]
fn the_same_run_twice_gives_the_same_figures() {
    let a = serde_json::to_string(&run("anon", 2).runs[0].extra).unwrap();
    let b = serde_json::to_string(&run("anon", 2).runs[0].extra).unwrap();
    assert_eq!(a, b);
}

#[test]
fn more_reclaimers_than_cpus_and_anon_without_swappiness_are_refused() {
    let e = Scenario::load(
        "limit-reclaim",
        &["workload.reclaimers=3".into()],
        Target::Sim,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("workload.reclaimers") && e.contains("has 2"),
        "{e}"
    );
    let e = Scenario::load(
        "limit-reclaim",
        &["workload.pages=anon".into(), "memcg.swappiness=0".into()],
        Target::Sim,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("memcg.swappiness"), "{e}");
}

#[test]
fn written_file_folios_release_their_buffer_heads_and_cost_release_buffers_a_page() {
    // calibrate writes its files: every reclaimed page had buffer heads to free.
    let with = simulate("file", 1, &[]);
    let pages = x(&with, "limit_reclaim_pages");
    assert!(x(&with, "buffer_head_pages_released") >= pages);
    assert!(x(&with, "i_private_lock_acquired") >= pages);
    // An iomap filesystem's folios have none: no release, no i_private_lock.
    let without = simulate("file", 1, &["sim.file_buffer_heads=false"]);
    assert!(!without.runs[0]
        .extra
        .contains_key("buffer_head_pages_released"));
    assert!(!without.runs[0]
        .extra
        .contains_key("i_private_lock_acquired"));
    // One reclaimer never waits for the lock: the release adds exactly its cost per page
    // (release_buffers, 150 ns built in; the drop under the lock is part of it).
    let added =
        x(&with, "limit_reclaim_cpu_ns_per_page") - x(&without, "limit_reclaim_cpu_ns_per_page");
    let cost = reclaimlab_sim::cost::CostTable::x86().release_buffers as f64;
    assert!(
        (added - cost).abs() < 0.05 * cost,
        "release added {added:.1} ns per page, cost {cost}"
    );
}
