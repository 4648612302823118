//! anon-sweep in the model: placement decides who gets shootdowns, dirty PTEs decide
//! how many, and the write ratio's random draws stay deterministic.

mod common;

use reclaimlab_core::ResultDoc;

fn sim(sets: &[&str]) -> ResultDoc {
    let base = [
        "workload.bytes=8M",
        "memcg.limit=4M",
        "run.duration=300ms",
        "sim.check=full",
    ];
    common::sim_with("anon-sweep", &base, sets)
}

fn per_steal(d: &ResultDoc, key: &str) -> f64 {
    let c = &d.runs[0].counters;
    assert!(c["pgsteal_anon"] > 1000, "too little reclaim: {c:?}");
    c[key] as f64 / c["pgsteal_anon"] as f64
}

#[test]
fn one_mm_on_two_cpus_gets_ipis_two_mms_on_one_cpu_none() {
    // One process, two threads on CPUs 0 and 1: its mm_cpumask holds both, and reclaim on
    // either CPU must shoot down the other (which runs the same mm, so is never lazy).
    let threads = sim(&[
        "workload.processes=1",
        "workload.threads=2",
        "workload.cpus=[0,1]",
    ]);
    // Every page is written, so each one's PTE is dirty and forces a flush before its pageout:
    // about one IPI per stolen page.
    let t = per_steal(&threads, "tlb_shootdowns");
    assert!(t > 0.5, "tlb_shootdowns per stolen page {t}");
    assert_eq!(threads.runs[0].throughput.unit, "pages_per_sec");
    // Two single-thread processes both on CPU 0: each mm only ever ran there, so no flush
    // leaves CPU 0 (CPU 1 is idle, and an idle CPU is lazy anyway).
    let same = sim(&[
        "workload.processes=2",
        "workload.bytes=4M",
        "workload.cpus=[0,0]",
    ]);
    per_steal(&same, "pgsteal_anon");
    let c = &same.runs[0].counters;
    assert_eq!(
        (c["tlb_shootdowns"], c["function_call_interrupts"]),
        (0, 0),
        "{c:?}"
    );
}

#[test]
fn clean_ptes_need_far_fewer_flushes_than_dirty_ones() {
    // Two processes on CPUs 0 and 1: reclaim on one CPU unmaps the other's pages too. With
    // every access a write, each dirty PTE forces try_to_unmap_flush_dirty before its pageout;
    // with reads only (after the populate pass) the PTEs are clean and the flushes are batched.
    let base = ["workload.processes=2", "workload.cpus=[0,1]"];
    let dirty = sim(&[&base[..], &["workload.write_ratio=1"]].concat());
    let clean = sim(&[&base[..], &["workload.write_ratio=0"]].concat());
    let (d, c) = (
        per_steal(&dirty, "tlb_shootdowns"),
        per_steal(&clean, "tlb_shootdowns"),
    );
    assert!(c > 0.0 && c < d / 2.0, "clean {c} vs dirty {d}");
    // zram (SWP_SYNCHRONOUS_IO) swap-in drops the swap copy, so a clean page read back in is
    // written out again when it is reclaimed: one pswpout per stolen page either way.
    for doc in [&dirty, &clean] {
        let w = per_steal(doc, "pswpout");
        assert!((w - 1.0).abs() < 0.02, "pswpout per stolen page {w}");
    }
}

#[test]
fn write_ratio_draws_are_deterministic_and_random_pattern_reclaims() {
    let sets = ["workload.write_ratio=0.5", "workload.pattern=random"];
    let a = serde_json::to_string(&sim(&sets)).unwrap();
    assert_eq!(a, serde_json::to_string(&sim(&sets)).unwrap());
    let other = sim(&[&sets[..], &["run.seed=2"]].concat());
    assert_ne!(a, serde_json::to_string(&other).unwrap());
    per_steal(&other, "pgsteal_anon");
    // Sequential, write ratio 0.5: reads leave about half the touched pages' PTEs clean.
    let half = sim(&["workload.write_ratio=0.5", "workload.cpus=[0,1]"]);
    let full = sim(&["workload.write_ratio=1", "workload.cpus=[0,1]"]);
    assert!(per_steal(&half, "tlb_shootdowns") < per_steal(&full, "tlb_shootdowns"));
}
