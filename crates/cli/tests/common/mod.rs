//! Helpers shared by the real-kernel tests (`host_bench.rs`, `host_anon_sweep.rs`): skipping
//! without root, the machine state bench may touch (to check that nothing is left behind), and
//! running `reclaimlab` for its JSON.
#![allow(dead_code)] // each test binary uses its own subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

/// Real-kernel tests run one at a time (they share swap, zram0 and tracefs).
pub static SERIAL: Mutex<()> = Mutex::new(());

pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_reclaimlab"))
}

/// Run reclaimlab: (exit code, stdout, stderr).
pub fn run(args: &[&str]) -> (i32, String, String) {
    let o = bin().args(args).output().expect("runs");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The memory controller's directory, or None (with the reason printed) when the tests must skip.
pub fn host_or_skip(test: &str, needs_stress_ng: bool) -> Option<PathBuf> {
    if !is_root() {
        eprintln!("skipping {test}: needs root (bench creates a memcg)");
        return None;
    }
    let root = match reclaimlab_host::cgroup::detect() {
        Ok(r) => r.dir,
        Err(e) => {
            eprintln!("skipping {test}: {e}");
            return None;
        }
    };
    if needs_stress_ng && Command::new("stress-ng").arg("--version").output().is_err() {
        eprintln!("skipping {test}: stress-ng is not installed (apt-get install stress-ng)");
        return None;
    }
    Some(root)
}

/// Everything bench may touch, to compare before and after.
#[derive(Debug, PartialEq)]
pub struct MachineState {
    pub swaps: String,
    pub zram_disksize: String,
    pub tracefs_mounted: bool,
    pub trace_instances: Vec<String>,
    pub reclaim_cgroups: Vec<String>,
    pub thp: Vec<String>,
    pub data_files: Vec<String>,
}

pub fn ls(dir: &Path, pred: impl Fn(&str) -> bool) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| pred(n))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

impl MachineState {
    pub fn capture(cg_root: &Path) -> MachineState {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let mounts = read("/proc/mounts");
        let mut thp = vec![read("/sys/kernel/mm/transparent_hugepage/enabled")];
        for d in ls(Path::new("/sys/kernel/mm/transparent_hugepage"), |n| {
            n.starts_with("hugepages-")
        }) {
            thp.push(read(&format!(
                "/sys/kernel/mm/transparent_hugepage/{d}/enabled"
            )));
        }
        MachineState {
            swaps: read("/proc/swaps"),
            zram_disksize: read("/sys/block/zram0/disksize"),
            tracefs_mounted: mounts.lines().any(|l| l.contains(" tracefs ")),
            trace_instances: trace_instances(mounts.contains(" /sys/kernel/tracing tracefs ")),
            reclaim_cgroups: ls(cg_root, |n| n.contains("reclaim") || n.contains("rlab")),
            thp,
            data_files: ls(Path::new("/var/tmp"), |n| n.starts_with("reclaimlab-")),
        }
    }
}

/// Trace instances live on in the kernel when tracefs is unmounted: look at them through a
/// private mount (then unmount it) when /sys/kernel/tracing is not mounted.
pub fn trace_instances(mounted: bool) -> Vec<String> {
    if mounted {
        return ls(Path::new("/sys/kernel/tracing/instances"), |_| true);
    }
    let dir = std::env::temp_dir().join(format!("rlab-test-tracefs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ok = Command::new("mount")
        .args(["-t", "tracefs", "nodev"])
        .arg(&dir)
        .status()
        .is_ok_and(|s| s.success());
    let v = if ok {
        ls(&dir.join("instances"), |_| true)
    } else {
        vec![]
    };
    if ok {
        assert!(Command::new("umount").arg(&dir).status().unwrap().success());
    }
    std::fs::remove_dir(&dir).unwrap();
    v
}

pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|u| u.split_whitespace().nth(1).map(|e| e == "0"))
        .unwrap_or(false)
}

/// Send a signal by PID with kill(1) (this crate does not depend on nix or libc).
pub fn send(sig: &str, pid: u32) {
    let st = Command::new("kill")
        .args([format!("-{sig}"), pid.to_string()])
        .status()
        .unwrap();
    assert!(st.success(), "kill -{sig} {pid}");
}

pub fn swap_is_on() -> bool {
    std::fs::read_to_string("/proc/swaps")
        .unwrap_or_default()
        .lines()
        .count()
        > 1
}

/// `--swap zram:1G` when the machine has no swap of its own.
pub fn swap_args() -> Vec<&'static str> {
    if swap_is_on() {
        vec![]
    } else {
        vec!["--swap", "zram:1G"]
    }
}

/// The JSON of a bench that must succeed.
pub fn stdout_json(o: &Output) -> serde_json::Value {
    assert!(
        o.status.success(),
        "bench failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "bench did not print JSON ({e}); stderr:\n{}",
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

/// Run `reclaimlab ARGS`, which must succeed, and parse its JSON.
pub fn bench_json(args: &[&str]) -> serde_json::Value {
    stdout_json(&bin().args(args).output().unwrap())
}

pub fn assert_clean(before: &MachineState, cg_root: &Path, pids: &[i32]) {
    let after = MachineState::capture(cg_root);
    assert_eq!(&after, before, "bench left state behind");
    for p in pids {
        let alive = std::fs::read_to_string(format!("/proc/{p}/stat"))
            .map(|s| !s.contains(") Z "))
            .unwrap_or(false);
        assert!(!alive, "workload process {p} is still running");
    }
}

/// A host-style result with three runs (so overlapping ranges make a delta "n.s.").
pub fn write_doc(dir: &Path, name: &str, shoot: &[u64], thr: &[f64]) -> String {
    let runs: Vec<serde_json::Value> = shoot
        .iter()
        .zip(thr)
        .map(|(s, t)| {
            serde_json::json!({"counters": {"tlb_shootdowns": s, "pgsteal_anon": 1000},
                "wall_seconds": 60.0, "throughput": {"value": t, "unit": "bogo_ops_per_sec"}})
        })
        .collect();
    let mut doc: reclaimlab_core::ResultDoc = serde_json::from_value(serde_json::json!({
        "schema": reclaimlab_core::SCHEMA, "scenario": "stress-vm", "backend": "host",
        "kernel": "6.18.0", "machine": {"cpus": 2, "memory_bytes": 1, "arch": "x86", "cgroup": "v1",
        "swap": {"kind": "zram", "devices": [], "bytes": 0}}, "config": {}, "runs": runs,
        "median": {}, "min": {}, "max": {}}))
    .unwrap();
    doc.summarize();
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_string(&doc).unwrap()).unwrap();
    p.to_string_lossy().into_owned()
}
