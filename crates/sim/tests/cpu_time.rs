//! `extra.cpu_time_ns`: every charge to a CPU's clock is accounted to what it pays for, so the
//! components add up to the CPUs' busy time (sched's busy_ns) and hold what the path charges.

mod common;

use serde_json::Value;

fn run(sets: &[&str]) -> (Value, f64, f64) {
    let base = [
        "run.duration=200ms",
        "workload.bytes=8M",
        "memcg.limit=4M",
        "workload.threads=1",
        "workload.pattern=sequential",
    ];
    let doc = common::sim_with("anon-sweep", &base, sets);
    let v = serde_json::to_value(&doc).unwrap();
    let run = &v["runs"][0];
    let ct = run["extra"]["cpu_time_ns"].clone();
    let total: f64 = ct
        .as_object()
        .unwrap()
        .values()
        .map(|x| x.as_f64().unwrap())
        .sum();
    let busy: f64 = run["extra"]["placement"]["cpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["busy_seconds"].as_f64().unwrap() * 1e9)
        .sum();
    let steal = run["counters"]["pgsteal_anon"].as_f64().unwrap();
    assert!(steal > 1000.0, "{steal}");
    (ct, total, busy)
}

#[test]
fn components_add_up_to_the_busy_time_on_one_cpu() {
    let (ct, total, busy) = run(&["workload.processes=2", "workload.cpus=[0,0]"]);
    assert!((total - busy).abs() <= 2.0, "{total} vs {busy}");
    // The one-CPU swap cycle: faults, the swap-out and the codec, no cross-CPU calls.
    for k in [
        "fault",
        "swap_writeout",
        "zram_compress",
        "do_swap_page",
        "lru_isolate",
    ] {
        assert!(ct[k].as_u64().unwrap_or(0) > 0, "{k}: {ct}");
    }
    assert!(
        ct.get("ipi_handler").is_none() && ct.get("flush_wait").is_none(),
        "{ct}"
    );
}

#[test]
fn components_add_up_to_the_busy_time_with_shootdowns() {
    let (ct, total, busy) = run(&[
        "workload.processes=1",
        "workload.threads=2",
        "workload.cpus=[0,1]",
    ]);
    assert!((total - busy).abs() <= 2.0, "{total} vs {busy}");
    // Two threads of one mm on two CPUs: every batched flush reaches the other CPU.
    assert!(ct["ipi_handler"].as_u64().unwrap_or(0) > 0, "{ct}");
    assert!(ct["flush_wait"].as_u64().unwrap_or(0) > 0, "{ct}");
}
