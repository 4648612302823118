//! Crash-safe set-up (real kernel, root): SIGKILL `bench` at 20 points in its first 500 ms —
//! inside the zram set-up window among them — then run it once normally; the machine must be
//! as before: no memcg, no swap, no zram device sized, labelled or hot-added, no journal.
//!
//! Ignored by default (it takes about a minute and needs the live kernel to itself). Run it
//! under the host lock: `flock LOCKFILE cargo test --release -p reclaimlab --test host_crash -- --ignored`.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

mod common;
use common::*;

/// zram devices and their sizes, and the set-up journals present.
fn devices() -> (Vec<(String, String)>, Vec<String>) {
    let zram = ls(Path::new("/sys/block"), |n| n.starts_with("zram"))
        .into_iter()
        .map(|d| {
            let size = std::fs::read_to_string(format!("/sys/block/{d}/disksize"))
                .unwrap_or_default()
                .trim()
                .to_string();
            (d, size)
        })
        .collect();
    (
        zram,
        ls(Path::new("/run/reclaimlab"), |n| n.starts_with("bench-")),
    )
}

const RUN: &[&str] = &[
    "bench",
    "anon-sweep",
    "--set",
    "workload.processes=1",
    "--set",
    "workload.threads=1",
    "--set",
    "workload.bytes=48M",
    "--set",
    "workload.cpus=[0]",
    "--set",
    "memcg.limit=32M",
    "--set",
    "run.duration=1s",
    "--swap",
    "zram:256M",
    "--json",
];

#[test]
#[ignore = "real kernel, ~1 min: run under the host lock with --ignored"]
fn sigkill_during_set_up_leaves_nothing_after_the_next_run() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(cg) = host_or_skip("sigkill_during_set_up", false) else {
        return;
    };
    let before = MachineState::capture(&cg);
    let before_dev = devices();
    // 20 kill times spread over 0..500 ms, in a fixed pseudo-random order (an LCG).
    let mut x: u64 = 0x2545_f491;
    let mut times = Vec::new();
    for i in 0..20u64 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        // Half evenly spaced, half random, so the short set-up window is hit densely.
        times.push(if i % 2 == 0 { i * 25 } else { (x >> 33) % 500 });
    }
    for (i, ms) in times.iter().enumerate() {
        let mut child = bin()
            .args(RUN)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(*ms));
        send("KILL", child.id());
        child.wait().unwrap();
        eprintln!("kill {i} at {ms} ms: {:?}", devices());
    }
    let o = bin().args(RUN).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "the normal run failed: {err}");
    eprintln!("{err}");
    // Workers of killed benches die with them (PR_SET_PDEATHSIG); allow them a moment.
    std::thread::sleep(Duration::from_millis(500));
    assert_clean(&before, &cg, &[]);
    assert_eq!(
        devices(),
        before_dev,
        "zram devices or journals left behind"
    );
}
