//! End-to-end fuzzing of `sim`: random tiny scenarios (every builtin workload, edge values
//! included) under a small model-memory budget. Each must give a result or a clear error —
//! never a panic, an abort, a hang, or a broken invariant.
//!
//! A few dozen cases run with the normal tests; a long run:
//! `PROPTEST_CASES=20000 cargo test --release -p reclaimlab-sim --test fuzz_sim`.

use proptest::prelude::*;
use reclaimlab_core::{Scenario, Target};
use std::time::{Duration, Instant};

/// Mostly within `min_k..=max_k` KiB; now and then an edge (0, 1K, a page).
fn size_in(min_k: u64, max_k: u64) -> impl Strategy<Value = String> {
    prop_oneof![
        12 => (min_k..=max_k).prop_map(|k| format!("{k}K")),
        1 => prop::sample::select(vec!["0", "1K", "4K"]).prop_map(str::to_string),
    ]
}

fn size(max_k: u64) -> impl Strategy<Value = String> {
    size_in(0, max_k)
}

fn sets() -> impl Strategy<Value = Vec<String>> {
    let cpus = 1u64..=8;
    let opt = |s: BoxedStrategy<String>| prop::option::of(s);
    (
        (
            cpus.prop_map(|c| format!("machine.cpus={c}")),
            opt(size_in(4 << 10, 256 << 10)
                .prop_map(|s| format!("machine.memory={s}"))
                .boxed()),
            opt(size_in(4 << 10, 64 << 10)
                .prop_map(|s| format!("memcg.limit={s}"))
                .boxed()),
            opt(size(64 << 10)
                .prop_map(|s| format!("swap.size={s}"))
                .boxed()),
            (1u64..=20_000).prop_map(|us| format!("run.duration={us}us")),
            any::<u32>().prop_map(|s| format!("run.seed={s}")),
        ),
        (
            opt(size(16 << 10)
                .prop_map(|s| format!("workload.bytes={s}"))
                .boxed()),
            opt(size(16 << 10)
                .prop_map(|s| format!("workload.file_bytes={s}"))
                .boxed()),
            opt(size(8 << 10)
                .prop_map(|s| format!("workload.reclaim_bytes={s}"))
                .boxed()),
            opt((0u64..=6)
                .prop_map(|n| format!("workload.threads={n}"))
                .boxed()),
            opt((0u64..=6)
                .prop_map(|n| format!("workload.workers={n}"))
                .boxed()),
            opt((0u64..=4)
                .prop_map(|n| format!("workload.processes={n}"))
                .boxed()),
            opt((0u64..=4)
                .prop_map(|n| format!("workload.readers={n}"))
                .boxed()),
            opt(prop::sample::select(vec!["sequential", "random"])
                .prop_map(|p| format!("workload.pattern={p}"))
                .boxed()),
        ),
        (
            opt((0u64..=9)
                .prop_map(|t| format!("sim.tick={}us", 1u64 << t))
                .boxed()),
            opt(
                prop::sample::select(vec![(16u64, 4u64), (64, 4), (8, 8), (1, 1), (48, 3)])
                    .prop_map(|(e, w)| format!("sim.tlb_entries={e}\u{0}sim.tlb_ways={w}"))
                    .boxed(),
            ),
            opt((1u64..=128)
                .prop_map(|n| format!("sim.step_pages={n}"))
                .boxed()),
            opt((0u64..=4)
                .prop_map(|n| format!("sim.file_folio_order={n}"))
                .boxed()),
            opt(prop::sample::select(vec!["step", "folio"])
                .prop_map(|i| format!("sim.interleave={i}"))
                .boxed()),
            opt(prop::sample::select(vec!["4.2", "6.18", "7.0"])
                .prop_map(|k| format!("kernel.preset={k}"))
                .boxed()),
            opt(prop::sample::select(vec![
                "batch-dirty-flush",
                "file-large-folio-unmap",
                "clear-flush-young-ptes",
                "mglru",
                "mglru-dirty-reactivate",
            ])
            .prop_map(|p| format!("kernel.patches=[\"{p}\"]"))
            .boxed()),
            opt(prop::sample::select(vec!["x86", "arm64"])
                .prop_map(|a| format!("machine.arch={a}"))
                .boxed()),
        ),
        load_sets(),
    )
        .prop_map(|(a, b, c, d)| {
            let mut v = vec![a.0, a.4, a.5];
            v.extend([a.1, a.2, a.3].into_iter().flatten());
            v.extend(
                [b.0, b.1, b.2, b.3, b.4, b.5, b.6, b.7]
                    .into_iter()
                    .flatten(),
            );
            v.extend(
                [c.0, c.1, c.2, c.3, c.4, c.5, c.6, c.7]
                    .into_iter()
                    .flatten(),
            );
            v.extend(d.into_iter().flatten());
            // Pairs travel joined by NUL (tlb_entries with its ways).
            v.iter()
                .flat_map(|s| s.split('\u{0}').map(str::to_string).collect::<Vec<_>>())
                .collect()
        })
}

/// The foreign load's keys (`machine.background_load.*`, `sched.autogroup`).
fn load_sets() -> impl Strategy<Value = [Option<String>; 6]> {
    let opt = |s: BoxedStrategy<String>| prop::option::of(s);
    (
        // Foreign load in sessions of its own, with or without autogroup (groups and
        // nices out of range now and then: a clear error).
        opt((0u64..=6)
            .prop_map(|n| format!("machine.background_load.tasks={n}"))
            .boxed()),
        opt(prop::sample::select(vec!["0.2", "0.7", "1.0"])
            .prop_map(|d| format!("machine.background_load.duty={d}"))
            .boxed()),
        opt((0u64..=7)
            .prop_map(|n| format!("machine.background_load.groups={n}"))
            .boxed()),
        opt((-21i64..=20)
            .prop_map(|n| format!("machine.background_load.nice={n}"))
            .boxed()),
        opt((-21i64..=20)
            .prop_map(|n| format!("machine.background_load.group_nice={n}"))
            .boxed()),
        opt(any::<bool>()
            .prop_map(|b| format!("sched.autogroup={b}"))
            .boxed()),
    )
        .prop_map(|(a, b, c, d, e, f)| [a, b, c, d, e, f])
}

/// Keys a workload does not read are not errors worth fuzzing: drop them per kind.
fn applies(kind: &str, set: &str) -> bool {
    let key = set.split('=').next().unwrap_or("");
    let w = |ks: &[&str]| ks.iter().any(|k| key == format!("workload.{k}"));
    match key.strip_prefix("workload.") {
        None => true,
        Some(_) => match kind {
            "stress-vm" => w(&["bytes", "workers"]),
            "anon-sweep" => w(&["bytes", "threads", "processes", "pattern"]),
            "file-reclaim" => w(&["file_bytes", "reclaim_bytes", "threads"]),
            "file-mmap-rw" => w(&["file_bytes", "threads", "pattern"]),
            "ycsb-b" => w(&["threads"]),
            "kswapd-mmap-read" => w(&["file_bytes", "readers", "pattern"]),
            "limit-reclaim" => w(&["bytes", "reclaim_bytes", "reclaimers", "pages"]),
            _ => false,
        },
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn sim_tiny_scenarios(kind in prop::sample::select(vec![
            "stress-vm", "anon-sweep", "file-reclaim", "file-mmap-rw", "ycsb-b",
            "kswapd-mmap-read", "limit-reclaim"]),
        sets in sets()) {
        let mut sets: Vec<String> = sets.into_iter().filter(|s| applies(kind, s)).collect();
        sets.push("sim.max_model_memory=64M".into());
        if kind == "ycsb-b" {
            sets.push("workload.records=4096".into());
        }
        let t0 = Instant::now();
        let r = Scenario::load(kind, &sets, Target::Sim)
            .map_err(|e| e.to_string())
            .and_then(|s| reclaimlab_sim::run(&s, &Default::default()).map_err(|e| format!("{e:#}")));
        if std::env::var_os("FUZZ_SIM_VERBOSE").is_some() {
            // One line per case: how many inputs got as far as a result.
            match &r {
                Ok(_) => eprintln!("fuzz_sim ok {kind}"),
                Err(e) => eprintln!("fuzz_sim err {kind}: {}", e.lines().next().unwrap_or("")),
            }
        }
        prop_assert!(t0.elapsed() < Duration::from_secs(60), "{kind} {sets:?} took {:?}", t0.elapsed());
        if let Err(e) = r {
            prop_assert!(!e.contains("invariant violated"), "{kind} {sets:?}: {e}");
            // The watchdog's report is the designed outcome when the tick is shorter than
            // its own work (a CPU that only ticks); any other stall is a bug.
            prop_assert!(
                !e.contains("simulation stuck") || e.contains("mostly ticks"),
                "{kind} {sets:?}: {e}"
            );
            for l in e.lines() {
                prop_assert!(l.len() < 2000, "{kind} {sets:?}: long error line");
            }
        }
    }
}
