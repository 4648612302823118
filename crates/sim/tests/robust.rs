//! Regression tests from the hostile-user pass: every reproducer gives a clear error or a
//! result, never a panic, an abort or a hang.

mod common;

use reclaimlab_core::{Scenario, Target};

fn sim(name: &str, sets: &[&str]) -> Result<reclaimlab_core::ResultDoc, String> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let scn = Scenario::load(name, &sets, Target::Sim).map_err(|e| e.to_string())?;
    reclaimlab_sim::run(&scn, &Default::default()).map_err(|e| e.to_string())
}

#[test]
fn a_thread_without_a_page_is_refused() {
    let e = sim(
        "anon-sweep",
        &[
            "workload.processes=1",
            "workload.threads=2",
            "workload.bytes=4K",
            "memcg.limit=4M",
            "swap.size=64M",
            "run.duration=50ms",
        ],
    )
    .unwrap_err();
    assert!(
        e.contains("workload.bytes") && e.contains("less than one page"),
        "{e}"
    );
    for fb in ["4K", "0", "1K"] {
        let set = format!("workload.file_bytes={fb}");
        let e = sim(
            "file-mmap-rw",
            &[
                "machine.cpus=2",
                &set,
                "memcg.limit=4M",
                "machine.memory=64M",
                "run.duration=50ms",
            ],
        )
        .unwrap_err();
        assert!(e.contains("workload.file_bytes"), "{e}");
    }
}

#[test]
fn unbounded_values_are_refused_before_allocating() {
    let cases: &[(&str, &str, &str)] = &[
        ("stress-vm", "sim.tlb_entries=4294967296", "sim.tlb_entries"),
        ("file-mmap-rw", "workload.file_bytes=64T", "16T"),
        ("anon-sweep", "workload.threads=4294967296", "PID_MAX_LIMIT"),
        (
            "anon-sweep",
            "workload.bytes=9223372036854775807K",
            "64 bits",
        ),
        ("stress-vm", "run.duration=inf", "run.duration"),
        ("stress-vm", "run.duration=1e12", "run.duration"),
        ("stress-vm", "run.duration=1000000000m", "run.duration"),
        ("stress-vm", "run.duration=100000000000", "run.duration"),
        ("stress-vm", "memcg.swappiness=4294967297", "0..=200"),
        // stress-ng's tree adds an instance per worker: 80 001 mms, more than a TLB key names.
        (
            "stress-vm",
            "workload.workers=40000",
            "TLB keys name at most 65534",
        ),
    ];
    for (scn, set, want) in cases {
        let e = sim(scn, &[set]).unwrap_err();
        assert!(e.contains(want), "{set}: {e}");
    }
}

#[test]
fn a_model_larger_than_its_memory_budget_is_refused() {
    let e = sim(
        "file-mmap-rw",
        &[
            "workload.file_bytes=8T",
            "machine.memory=1T",
            "memcg.limit=1G",
        ],
    )
    .unwrap_err();
    assert!(e.contains("sim.max_model_memory"), "{e}");
    let e = sim(
        "stress-vm",
        &[
            "machine.cpus=4096",
            "sim.tlb_entries=65536",
            "sim.tlb_ways=16",
        ],
    )
    .unwrap_err();
    assert!(e.contains("sim.tlb_entries: the model would need"), "{e}");
}

/// The former reproducer of a spinning tick: a 2 us tick, shorter than a context switch, with
/// three threads on two CPUs. The tick reschedules only when the running request is used up
/// (update_deadline, every 1.5 ms here), so it no longer switches at every tick and the run
/// completes.
#[test]
fn a_tick_shorter_than_a_context_switch_still_runs() {
    let t = std::time::Instant::now();
    let d = sim(
        "file-reclaim",
        &[
            "machine.cpus=2",
            "workload.file_bytes=8M",
            "workload.reclaim_bytes=4M",
            "memcg.limit=16M",
            "machine.memory=64M",
            "run.duration=50ms",
            "workload.threads=3",
            "sim.tick=2us",
        ],
    )
    .unwrap();
    assert!(d.runs[0].extra["pages_touched"].as_u64().unwrap() > 0);
    assert!(t.elapsed().as_secs() < 60);
}

/// The engine's lockup detector: with no task progressing over its window, mostly in ticks, it
/// reports every task's state and names sim.tick.
#[test]
fn the_watchdog_reports_a_run_that_only_ticks() {
    use reclaimlab_sim::watchdog::{Watchdog, CHECK_EVERY, STALL_CHECKS};
    let (k, _) = common::machine(2, 3);
    let mut w = Watchdog::default();
    let mut report = None;
    for _ in 0..=CHECK_EVERY * u64::from(STALL_CHECKS + 1) {
        report = w.touch(&k, true);
        if report.is_some() {
            break;
        }
    }
    let e = report.expect("the watchdog fires");
    assert!(e.contains("simulation stuck"), "{e}");
    for t in 0..3 {
        assert!(e.contains(&format!("task {t}: ")), "{e}");
    }
    assert!(e.contains("0 pages touched"), "{e}");
    assert!(e.contains("use a longer sim.tick"), "{e}");
}

#[test]
fn a_float_preset_keeps_its_text() {
    let d = sim("stress-vm", &["kernel.preset=7.0", "run.duration=10ms"]).unwrap();
    assert_eq!(d.config["kernel"]["preset"], "7.0");
}

/// Found by the end-to-end fuzz (fuzz_sim.rs): with `sim.interleave=folio` and a nearly full
/// swap device (OOM kills restarting the workload), the OOM-killed mm's exit freed a folio that
/// another CPU's reclaim held isolated (here preempted between folios or unlocked for pageout),
/// and reclaim then met it freed or reused (remove_mapping indexed the file table with it). The
/// exit now leaves an isolated folio to reclaim's reference (pg::ORPHAN), which frees it. The
/// first two reproducers no longer reach the window since the model changed; the others
/// panicked before the fix.
#[test]
fn folio_interleave_folio_freed_without_a_mapping() {
    for (kind, sets) in [
        (
            "stress-vm",
            &[
                "machine.cpus=4",
                "run.duration=8800us",
                "run.seed=3575677080",
                "memcg.limit=7976K",
                "swap.size=4K",
                "workload.bytes=12160K",
                "sim.tick=64us",
                "sim.tlb_entries=16",
                "sim.tlb_ways=4",
                "sim.interleave=folio",
                "machine.arch=arm64",
            ][..],
        ),
        (
            "anon-sweep",
            &[
                "machine.cpus=4",
                "run.duration=5198us",
                "run.seed=2531758279",
                "memcg.limit=43776K",
                "swap.size=4K",
                "workload.processes=4",
                "sim.interleave=folio",
                // Found with the processes started at time 0.
                "sim.bench_start=static",
            ][..],
        ),
        (
            "anon-sweep",
            &[
                "machine.cpus=8",
                "run.duration=10063us",
                "memcg.limit=32057K",
                "swap.size=4K",
                "sim.interleave=folio",
                "run.seed=3918869365",
                "workload.processes=4",
                "sim.tick=256us",
                // Found with the processes started at time 0.
                "sim.bench_start=static",
            ][..],
        ),
        (
            "stress-vm",
            &[
                "machine.cpus=4",
                "run.duration=21906us",
                "memcg.limit=13526K",
                "swap.size=4K",
                "sim.interleave=folio",
                "run.seed=3980267316",
                "workload.workers=3",
                "workload.bytes=19670K",
                "machine.arch=arm64",
            ][..],
        ),
        (
            // Seed 000's dirty batch: folios wait unlocked there for their pageouts.
            "stress-vm",
            &[
                "machine.cpus=4",
                "run.duration=20ms",
                "memcg.limit=9M",
                "swap.size=8K",
                "sim.interleave=folio",
                "run.seed=1",
                "workload.workers=3",
                "workload.bytes=16M",
                "kernel.patches=[\"batch-dirty-flush\"]",
            ][..],
        ),
    ] {
        let d = sim(kind, sets).unwrap_or_else(|e| panic!("{kind} {sets:?}: {e}"));
        assert!(d.median["oom_kill"] > 0.0, "{kind} {sets:?}: no OOM kill");
        assert_eq!(d.runs[0].extra["oracle_lost_writes"], 0, "{kind} {sets:?}");
        // Same seed, same output.
        let again = sim(kind, sets).unwrap();
        assert_eq!(
            serde_json::to_string(&d).unwrap(),
            serde_json::to_string(&again).unwrap(),
            "{kind} {sets:?}"
        );
    }
}
