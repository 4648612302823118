//! Golden results: every shipped scenario (and a few policy/arch variants of them) at a small
//! size must produce exactly the result JSON committed under `tests/golden/`, so that speed
//! work never moves a figure silently.
//!
//! The whole document is compared (counters, per-CPU arrays, memcg stats, throughput, notes,
//! extras). A sim result holds no host wall-clock field: `wall_seconds` is simulated time and
//! belongs to the model, so it is compared too ([`WALL_CLOCK_KEYS`] lists the keys that would be
//! dropped, none today).
//!
//! A commit that intentionally moves figures (a model change) regenerates the files with
//!
//! ```text
//! RECLAIMLAB_BLESS=1 cargo test --release -p reclaimlab-sim --test golden
//! ```
//!
//! and says so in its message; a speed change must pass without it.

mod common;

use std::path::PathBuf;

/// Keys removed (at any depth) before comparing: host wall-clock time, which differs between
/// runs. The simulator reports none.
const WALL_CLOCK_KEYS: &[&str] = &[];

/// stress-vm at a size that still reclaims hard (4x overcommit) and shoots down.
const VM4: &[&str] = &[
    "machine.cpus=4",
    "workload.workers=4",
    "workload.bytes=64M",
    "memcg.limit=16M",
    "run.duration=2s",
];

fn golden_path(case: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{case}.json"))
}

fn strip(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            for k in WALL_CLOCK_KEYS {
                m.remove(*k);
            }
            m.values_mut().for_each(strip);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
        _ => {}
    }
}

fn check(case: &str, scenario: &str, sets: &[&str]) {
    let doc = common::sim_with(scenario, sets, &[]);
    let mut v = serde_json::to_value(&doc).unwrap();
    strip(&mut v);
    let got = serde_json::to_string_pretty(&v).unwrap() + "\n";
    let path = golden_path(case);
    if std::env::var_os("RECLAIMLAB_BLESS").is_some() {
        std::fs::write(&path, &got).unwrap();
        eprintln!("golden: wrote {}", path.display());
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; create it with RECLAIMLAB_BLESS=1 cargo test --release -p reclaimlab-sim --test golden",
            path.display()
        )
    });
    if got != want {
        let diffs: Vec<String> = want
            .lines()
            .zip(got.lines())
            .enumerate()
            .filter(|(_, (w, g))| w != g)
            .take(20)
            .map(|(i, (w, g))| format!("line {}:\n  golden: {w}\n  now:    {g}", i + 1))
            .collect();
        panic!(
            "{case} ({scenario} {sets:?}) differs from {} ({} vs {} lines); first differences:\n{}\n\
             A model change that moves figures regenerates the files with RECLAIMLAB_BLESS=1 \
             (its own commit, named so); a speed change must not.",
            path.display(),
            want.lines().count(),
            got.lines().count(),
            diffs.join("\n")
        );
    }
}

macro_rules! golden {
    ($($name:ident: $scenario:expr, [$($set:expr),* $(,)?] $(+ $base:expr)?;)*) => {$(
        #[test]
        fn $name() {
            #[allow(unused_mut)]
            let mut sets: Vec<&str> = Vec::new();
            $(sets.extend_from_slice($base);)?
            sets.extend_from_slice(&[$($set),*]);
            check(stringify!($name), $scenario, &sets);
        }
    )*};
}

golden! {
    // stress-vm: the seed-000 benchmark, small, under each preset and the seed's patch.
    stress_vm: "stress-vm", [] + VM4;
    stress_vm_batch_dirty_flush: "stress-vm", ["kernel.patches=[\"batch-dirty-flush\"]"] + VM4;
    stress_vm_4_2: "stress-vm", ["kernel.preset=4.2"] + VM4;
    stress_vm_mglru: "stress-vm", ["kernel.patches=[\"mglru\"]"] + VM4;
    stress_vm_arm64: "stress-vm", ["machine.arch=arm64"] + VM4;
    stress_vm_step_interleave: "stress-vm", ["sim.interleave=step"] + VM4;
    // A block swap device (asynchronous writes, readahead, swap-in sleeps) whose
    // completion interrupt runs on CPU 1.
    stress_vm_block_swap: "stress-vm", ["swap.device=block", "swap.irq_cpu=1"] + VM4;
    stress_vm_block_swap_rotational: "stress-vm", ["swap.device=block", "swap.irq_cpu=1", "swap.rotational=true"] + VM4;
    // More CPUs than workers' share of memory: wide cpumasks, migrations, idle CPUs.
    stress_vm_16cpu: "stress-vm", [
        "machine.cpus=16",
        "workload.workers=16",
        "workload.bytes=256M",
        "memcg.limit=64M",
        "run.duration=1s",
    ];
    // Seed 000's own sizes (16 CPUs, 2G in 512M) for a short run.
    stress_vm_seed000_short: "stress-vm", ["run.duration=2s"];
    // Cpumasks wider than one word, SMT/socket domains, fewer workers than CPUs.
    stress_vm_72cpu_topology: "stress-vm", [
        "machine.cpus=72",
        "machine.topology.sockets=2",
        "machine.topology.threads_per_core=2",
        "workload.workers=48",
        "workload.bytes=384M",
        "memcg.limit=96M",
        "run.duration=200ms",
    ];
    // Foreign load in sessions of its own (autogroup), migrations.
    stress_vm_background: "stress-vm", [
        "machine.background_load.tasks=6",
        "machine.background_load.duty=0.6",
        "machine.background_load.period=5ms",
        "machine.background_load.groups=2",
    ] + VM4;
    // The per-flush and per-free checks on (they must not change any figure).
    stress_vm_check_full: "stress-vm", ["sim.check=full", "run.duration=300ms"] + VM4;
    anon_sweep: "anon-sweep", [
        "workload.bytes=32M",
        "memcg.limit=24M",
        "run.duration=2s",
    ];
    anon_sweep_threads: "anon-sweep", [
        "machine.cpus=4",
        "workload.processes=2",
        "workload.threads=2",
        "workload.bytes=16M",
        "memcg.limit=24M",
        "workload.write_ratio=0.5",
        "run.duration=1s",
    ];
    file_mmap_rw: "file-mmap-rw", [
        "workload.file_bytes=32M",
        "memcg.limit=8M",
        "run.duration=1s",
    ];
    file_mmap_rw_write: "file-mmap-rw", [
        "workload.file_bytes=32M",
        "workload.write=true",
        "memcg.limit=8M",
        "run.duration=2s",
    ];
    file_mmap_rw_write_v1_queue: "file-mmap-rw", [
        "machine.cpus=4",
        "workload.file_bytes=32M",
        "workload.write=true",
        "workload.pattern=random",
        "memcg.limit=8M",
        "sim.cgroup=v1",
        "sim.writeback_queue_depth=4",
        "run.duration=1s",
    ];
    file_mmap_rw_arm64_folios: "file-mmap-rw", [
        "machine.arch=arm64",
        "machine.cpus=4",
        "workload.file_bytes=16M",
        "workload.write=true",
        "memcg.limit=4M",
        "sim.file_folio_order=4",
        "kernel.preset=7.0",
        "run.duration=500ms",
    ];
    file_reclaim: "file-reclaim", [
        "machine.cpus=8",
        "workload.file_bytes=256M",
        "workload.reclaim_bytes=200M",
        "memcg.limit=512M",
    ];
    kswapd_mmap_read: "kswapd-mmap-read", [
        "machine.cpus=4",
        "machine.memory=64M",
        "run.duration=5s",
    ];
    kswapd_mmap_read_4_2: "kswapd-mmap-read", [
        "machine.cpus=4",
        "machine.memory=64M",
        "kernel.preset=4.2",
        "run.duration=2s",
    ];
    limit_reclaim_anon_pair: "limit-reclaim", [
        "workload.pages=anon",
        "workload.reclaimers=2",
        "workload.bytes=16M",
        "workload.reclaim_bytes=8M",
    ];
    limit_reclaim_file_pair: "limit-reclaim", [
        "workload.reclaimers=2",
        "workload.bytes=16M",
        "workload.reclaim_bytes=8M",
    ];
    ycsb_b: "ycsb-b", [
        "workload.records=65536",
        "memcg.limit=32M",
        "run.duration=1s",
    ];
    ycsb_b_dirty_reactivate: "ycsb-b", [
        "workload.records=65536",
        "memcg.limit=32M",
        "kernel.patches=[\"mglru-dirty-reactivate\"]",
        "run.duration=1s",
    ];
}

/// Every shipped scenario has at least one golden case.
#[test]
fn every_shipped_scenario_is_covered() {
    let src = include_str!("golden.rs");
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "toml") {
            let name = p.file_stem().unwrap().to_str().unwrap().to_string();
            assert!(
                src.contains(&format!(": \"{name}\", [")),
                "scenario {name} has no golden case"
            );
        }
    }
}
