//! Real-kernel tests of `reclaimlab bench`: short runs whose counters must move, and
//! the "leaves nothing behind" guarantee on every exit path (success, SIGINT, SIGTERM, injected
//! error, injected panic, workload hang/timeout, workload killed).
//!
//! They need root and a memory cgroup controller; without them each test prints why it is
//! skipped and passes. CI runs as root on a machine with memcg v1, so they run there. They run
//! one at a time (they share swap, zram0 and tracefs).

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::*;

/// Wait until bench (pid `bench`) has a memcg with processes in it; return their pids.
fn wait_for_workload(child: &mut Child, cg_root: &Path) -> Vec<i32> {
    let prefix = format!("reclaimlab-{}-", child.id());
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(60) {
        if let Ok(Some(st)) = child.try_wait() {
            panic!("bench exited early: {st:?}");
        }
        for d in ls(cg_root, |n| n.starts_with(&prefix)) {
            let procs =
                std::fs::read_to_string(cg_root.join(&d).join("cgroup.procs")).unwrap_or_default();
            let pids: Vec<i32> = procs
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect();
            if !pids.is_empty() {
                std::thread::sleep(Duration::from_millis(500));
                return pids;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("bench never started its workload");
}

fn wait_exit(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let t = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            panic!("bench did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The short stress-vm run: 2 workers, 300M in total, a 200M memcg, for `duration`.
fn stress_vm(duration: &'static str) -> Vec<&'static str> {
    vec![
        "bench",
        "stress-vm",
        "--set",
        "workload.workers=2",
        "--set",
        "workload.bytes=300M",
        "--set",
        "memcg.limit=200M",
        "--set",
        duration,
        "--json",
    ]
}

#[test]
fn stress_vm_short_run_moves_shootdowns_and_anon_reclaim() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(cg) = host_or_skip("stress_vm_short_run", true) else {
        return;
    };
    let before = MachineState::capture(&cg);
    let mut args = stress_vm("run.duration=8s");
    args.extend(swap_args());
    let d = bench_json(&args);
    assert_eq!(d["backend"], "host");
    assert_eq!(d["scenario"], "stress-vm");
    assert!(d["workload_command"]
        .as_str()
        .unwrap()
        .contains("--vm 2 --vm-bytes 300M --vm-keep"));
    assert!(d["workload_version"]
        .as_str()
        .unwrap()
        .contains("stress-ng"));
    let r = &d["runs"][0];
    let c = &r["counters"];
    assert!(c["tlb_shootdowns"].as_u64().unwrap() > 0, "{c}");
    assert!(c["pgsteal_anon"].as_u64().unwrap() > 0, "{c}");
    assert_eq!(
        r["per_cpu"]["tlb_shootdowns"].as_array().unwrap().len(),
        reclaimlab_host::machine_limits().0
    );
    assert!(r["memcg_stat"].as_object().is_some_and(|m| !m.is_empty()));
    assert_eq!(r["throughput"]["unit"], "bogo_ops_per_sec");
    assert!(r["throughput"]["value"].as_f64().unwrap() > 0.0);
    assert!(r["wall_seconds"].as_f64().unwrap() >= 7.5);
    assert!(d["median"]["tlb_shootdowns"].as_f64().unwrap() > 0.0);
    assert_eq!(d["machine"]["cgroup"].as_str().unwrap().len(), 2);
    assert_clean(&before, &cg, &[]);
}

#[test]
fn file_reclaim_times_the_reclaim_with_a_trace() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(cg) = host_or_skip("file_reclaim", false) else {
        return;
    };
    let before = MachineState::capture(&cg);
    let d = bench_json(&[
        "bench",
        "file-reclaim",
        "--set",
        "workload.file_bytes=256M",
        "--set",
        "workload.reclaim_bytes=128M",
        // A busy holder, so the reclaim's flushes reach its CPU as shootdowns.
        "--set",
        "workload.hold=spin",
        "--set",
        "memcg.limit=512M",
        "--repeat",
        "2",
        "--trace",
        "--json",
    ]);
    assert_eq!(d["runs"].as_array().unwrap().len(), 2);
    for r in d["runs"].as_array().unwrap() {
        assert_eq!(r["throughput"]["unit"], "reclaim_seconds");
        assert!(r["throughput"]["value"].as_f64().unwrap() > 0.0);
        assert!(
            r["counters"]["pgsteal_file"].as_u64().unwrap() > 0,
            "{}",
            r["counters"]
        );
        assert!(
            r["extra"]["reclaimed_bytes"].as_u64().unwrap() >= 100 << 20,
            "{}",
            r["extra"]
        );
        // --trace: a tlb:tlb_flush histogram of the reclaim, with the kernel's reason names.
        let t = &r["extra"]["tlb_flush_trace"];
        assert!(t["events"].as_u64().unwrap() > 0, "{t}");
        assert!(
            t["by_reason"]
                .as_object()
                .unwrap()
                .keys()
                .any(|k| k.contains("shootdown")),
            "{t}"
        );
    }
    assert_clean(&before, &cg, &[]);
}

/// Start a bench, wait for its workload, deliver `sig`, and check the exit and the machine.
fn interrupted_run(test: &str, sig: (&str, i32), extra: &[&str]) {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(cg) = host_or_skip(test, true) else {
        return;
    };
    let before = MachineState::capture(&cg);
    let mut args = stress_vm("run.duration=60s");
    args.extend(extra);
    let mut child = bin()
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pids = wait_for_workload(&mut child, &cg);
    send(sig.0, child.id());
    let st = wait_exit(&mut child, Duration::from_secs(60));
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(st.code(), Some(128 + sig.1), "{err}");
    assert!(err.contains("cleaning up"), "{err}");
    assert_clean(&before, &cg, &pids);
}

#[test]
fn sigint_cleans_up() {
    let swap = swap_args();
    interrupted_run("sigint_cleans_up", ("INT", 2), &swap);
}

#[test]
fn sigterm_cleans_up_swap_and_tracing_too() {
    // Always ask for zram here (the machine's own swap, if any, stays as it is) and tracing.
    interrupted_run(
        "sigterm_cleans_up",
        ("TERM", 15),
        &["--swap", "zram:1G", "--trace"],
    );
}

const MMAP_RW: &[&str] = &[
    "bench",
    "file-mmap-rw",
    "--set",
    "workload.file_bytes=128M",
    "--set",
    "memcg.limit=64M",
    "--set",
    "run.duration=3s",
    "--set",
    "host.grace=2s",
    "--json",
];

/// A file-mmap-rw run with RECLAIMLAB_TEST_FAULT=`fault`: it must exit with `code`, say
/// `message`, end within 30 s and leave the machine as it was.
fn faulted_run(test: &str, fault: &str, code: i32, message: &str) {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(cg) = host_or_skip(test, false) else {
        return;
    };
    let before = MachineState::capture(&cg);
    let t = Instant::now();
    let o = bin()
        .args(MMAP_RW)
        .env("RECLAIMLAB_TEST_FAULT", fault)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(code), "{err}");
    assert!(err.contains(message), "{err}");
    assert!(t.elapsed() < Duration::from_secs(30));
    assert_clean(&before, &cg, &[]);
}

#[test]
fn injected_error_cleans_up() {
    faulted_run("injected_error", "error", 2, "injected error");
}

#[test]
fn injected_panic_cleans_up() {
    faulted_run("injected_panic", "panic", 101, "injected panic");
}

#[test]
fn hung_workload_times_out_and_cleans_up() {
    // Killed at run.duration + host.grace = 5 s.
    faulted_run("hung_workload", "hang", 2, "did not report within 5s");
}

#[test]
fn killed_workload_marks_the_run_invalid_and_cleans_up() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(cg) = host_or_skip("killed_workload", true) else {
        return;
    };
    let before = MachineState::capture(&cg);
    let mut args = stress_vm("run.duration=30s");
    args.extend(swap_args());
    let mut child = bin()
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pids = wait_for_workload(&mut child, &cg);
    // Kill stress-ng itself (the member of the memcg whose parent is bench), as an OOM kill would.
    let bench = child.id().to_string();
    let top: Vec<i32> = pids
        .iter()
        .copied()
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .and_then(|s| {
                    s.rsplit(')')
                        .next()
                        .map(|r| r.split_whitespace().nth(1) == Some(&bench))
                })
                .unwrap_or(false)
        })
        .collect();
    assert_eq!(top.len(), 1, "{pids:?}");
    send("KILL", top[0] as u32);
    wait_exit(&mut child, Duration::from_secs(60));
    let d = stdout_json(&child.wait_with_output().unwrap());
    let r = &d["runs"][0];
    assert_eq!(r["valid"], false);
    let notes = r["notes"].to_string();
    assert!(notes.contains("killed by signal 9"), "{notes}");
    assert_clean(&before, &cg, &pids);
}

#[test]
fn refuses_without_root() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !is_root() {
        let o = bin().args(["bench", "file-reclaim"]).output().unwrap();
        assert_eq!(o.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&o.stderr).contains("needs root"));
        return;
    }
    // As root: drop to nobody for the child.
    let o = bin()
        .args(["bench", "file-reclaim"])
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("needs root"), "{err}");
}

#[test]
fn anon_scenario_without_swap_is_refused_with_the_fix() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(cg) = host_or_skip("anon_without_swap", true) else {
        return;
    };
    if swap_is_on() {
        eprintln!("skipping anon_without_swap: this machine has swap on");
        return;
    }
    let before = MachineState::capture(&cg);
    let o = bin()
        .args(["bench", "stress-vm", "--set", "run.duration=1s"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("needs swap") && err.contains("--swap zram:4G"),
        "{err}"
    );
    assert_clean(&before, &cg, &[]);
}

#[test]
fn bad_keys_and_missing_stress_ng_fail_before_changing_anything() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(cg) = host_or_skip("fail_before_changes", false) else {
        return;
    };
    let before = MachineState::capture(&cg);
    for (set, want) in [
        ("host.bogus=1", "unknown key host.bogus"),
        (
            "host.stress_ng=/nonexistent/stress-ng",
            "apt-get install stress-ng",
        ),
    ] {
        let o = bin()
            .args([
                "bench",
                "stress-vm",
                "--swap",
                "zram:1G",
                "--trace",
                "--set",
                set,
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(want), "{err}");
        assert_clean(&before, &cg, &[]);
    }
}

#[test]
fn file_mmap_rw_sweeps_a_mapping_larger_than_the_limit() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(cg) = host_or_skip("file_mmap_rw", false) else {
        return;
    };
    let before = MachineState::capture(&cg);
    let extra = [
        "--set",
        "workload.write=true",
        "--set",
        "workload.pattern=random",
    ];
    let d = bench_json(&[MMAP_RW, &extra].concat());
    let r = &d["runs"][0];
    assert_eq!(r["valid"], true);
    assert_eq!(r["throughput"]["unit"], "pages_per_sec");
    assert!(r["throughput"]["value"].as_f64().unwrap() > 0.0);
    let per = r["extra"]["pages_touched_per_thread"].as_array().unwrap();
    assert_eq!(per.len(), reclaimlab_host::machine_limits().0);
    assert!(
        r["counters"]["pgsteal_file"].as_u64().unwrap() > 0,
        "{}",
        r["counters"]
    );
    assert_clean(&before, &cg, &[]);
}

/// Undoes the test's own zram0 swap even if the test fails.
struct Zram0Swap;

impl Drop for Zram0Swap {
    fn drop(&mut self) {
        let _ = Command::new("swapoff").arg("/dev/zram0").status();
        let _ = std::fs::write("/sys/block/zram0/reset", "1");
    }
}

#[test]
fn busy_zram0_makes_bench_hot_add_and_remove_its_own_device() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(cg) = host_or_skip("busy_zram0", false) else {
        return;
    };
    let zram0_free =
        std::fs::read_to_string("/sys/block/zram0/disksize").is_ok_and(|s| s.trim() == "0");
    if !zram0_free || !Path::new("/sys/class/zram-control/hot_add").exists() {
        eprintln!("skipping busy_zram0: needs a free /dev/zram0 and zram hot_add");
        return;
    }
    std::fs::write("/sys/block/zram0/disksize", "64M").unwrap();
    let _guard = Zram0Swap;
    assert!(Command::new("mkswap")
        .arg("/dev/zram0")
        .output()
        .unwrap()
        .status
        .success());
    assert!(Command::new("swapon")
        .arg("/dev/zram0")
        .status()
        .unwrap()
        .success());
    let before = MachineState::capture(&cg);
    let devices_before = ls(Path::new("/sys/block"), |n| n.starts_with("zram"));
    let d = bench_json(&[
        "bench",
        "file-reclaim",
        "--set",
        "workload.file_bytes=64M",
        "--set",
        "workload.reclaim_bytes=32M",
        "--set",
        "memcg.limit=128M",
        "--swap",
        "zram:256M",
        "--json",
    ]);
    let devs = d["machine"]["swap"]["devices"].to_string();
    assert!(
        devs.contains("/dev/zram0") && devs.contains("/dev/zram"),
        "{devs}"
    );
    assert_eq!(d["machine"]["swap"]["kind"], "zram");
    assert_eq!(
        d["machine"]["swap"]["devices"].as_array().unwrap().len(),
        2,
        "{devs}"
    );
    assert_eq!(
        ls(Path::new("/sys/block"), |n| n.starts_with("zram")),
        devices_before
    );
    assert_clean(&before, &cg, &[]);
}

#[test]
fn what_a_sigkilled_bench_left_is_removed_by_the_next_one() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(cg) = host_or_skip("sigkilled_bench", true) else {
        return;
    };
    let before = MachineState::capture(&cg);
    let mut args = stress_vm("run.duration=60s");
    args.extend(["--swap", "zram:1G"]);
    let mut child = bin()
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let pids = wait_for_workload(&mut child, &cg);
    // SIGKILL cannot be caught: the memcg and the zram swap stay behind (the workload dies
    // with bench through PR_SET_PDEATHSIG).
    send("KILL", pid);
    wait_exit(&mut child, Duration::from_secs(10));
    assert!(!ls(&cg, |n| n.starts_with(&format!("reclaimlab-{pid}-"))).is_empty());
    assert!(swap_is_on());
    let o = bin().args(MMAP_RW).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("removed memcg") && err.contains("took down swap"),
        "{err}"
    );
    assert!(err.contains(&format!("killed bench (pid {pid})")), "{err}");
    assert_clean(&before, &cg, &pids);
}

/// One process sweeping 16M in an 8M memcg for 2 s, with `extra` arguments, as JSON.
fn small_anon_sweep<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let base = [
        "bench",
        "anon-sweep",
        "--set",
        "workload.processes=1",
        "--set",
        "workload.bytes=16M",
        "--set",
        "memcg.limit=8M",
        "--set",
        "run.duration=2s",
        "--json",
    ];
    [&base[..], extra, &swap_args()].concat()
}

/// Each run records the tasks outside its memcg during the window (`runs[].foreign`): bench's
/// own threads at least (its placement sampler wakes every 100 ms), the workers not.
#[test]
fn bench_records_the_foreign_load_of_its_window() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(cg) = host_or_skip("foreign_load", false) else {
        return;
    };
    let before = MachineState::capture(&cg);
    let d = bench_json(&small_anon_sweep(&[]));
    let f = &d["runs"][0]["foreign"];
    let w = f["window_seconds"].as_f64().unwrap();
    assert!((1.9..4.0).contains(&w), "{f}");
    let scan = f["scan_seconds"][1].as_f64().unwrap();
    assert!(scan > 0.0 && scan < 1.0, "{f}");
    let user = &f["user"];
    assert!(user["tasks_ran"].as_u64().unwrap() >= 1, "{f}");
    assert!(user["timeslices"].as_u64().unwrap() >= 10, "sampler: {f}");
    assert!(
        user["top"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t[0] == "reclaimlab"),
        "bench's own threads are foreign: {f}"
    );
    // The worker ran ~2 s in the memcg and is not counted as foreign.
    assert!(f["workload_cpu_seconds"].as_f64().unwrap() > 1.0, "{f}");
    assert!(user["cpu_seconds"].as_f64().unwrap() < 2.0 * w, "{f}");
    assert_clean(&before, &cg, &[]);
}

/// `--swap file:SIZE`: a swap file on a disk filesystem (a block swap device): the run swaps
/// through it (pages read back with I/O, so pgpgin counts them) and it is gone afterwards.
#[test]
fn a_swap_file_is_a_block_device_for_the_run_and_gone_after() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(cg) = host_or_skip("swap_file", false) else {
        return;
    };
    let before = MachineState::capture(&cg);
    let d = bench_json(&[
        "bench",
        "anon-sweep",
        "--set",
        "workload.processes=1",
        "--set",
        "workload.bytes=48M",
        "--set",
        "memcg.limit=24M",
        "--set",
        "run.duration=2s",
        "--swap",
        "file:256M",
        "--json",
    ]);
    assert_eq!(d["machine"]["swap"]["kind"], "file");
    let devs = d["machine"]["swap"]["devices"].to_string();
    let made_in = format!("{}/reclaimlab-", reclaimlab_host::DEFAULT_SWAPFILE_DIR);
    assert!(devs.contains(&made_in), "{devs}");
    let c = &d["runs"][0]["counters"];
    assert!(c["pswpout"].as_u64().unwrap() > 0, "{c}");
    assert!(c["pswpin"].as_u64().unwrap() > 0, "{c}");
    assert_clean(&before, &cg, &[]);
}

/// A swap file a SIGKILLed bench left on is switched off and removed by the next bench, found
/// by its name (no journal needed).
#[test]
fn a_dead_benchs_swap_file_is_taken_down_by_the_next_one() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(cg) = host_or_skip("dead_swap_file", false) else {
        return;
    };
    let before = MachineState::capture(&cg);
    // A PID that is not running: a child that has exited and been reaped.
    let mut c = Command::new("true").spawn().unwrap();
    let dead = c.id();
    c.wait().unwrap();
    let path = format!(
        "{}/reclaimlab-{dead}-swap.dat",
        reclaimlab_host::DEFAULT_SWAPFILE_DIR
    );
    let made = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "fallocate -l 64M {path} && chmod 600 {path} && mkswap -L rlab-{dead} {path} \
             >/dev/null && swapon {path}"
        ))
        .status()
        .unwrap();
    assert!(made.success());
    let o = bin().args(MMAP_RW).output().unwrap();
    // Whatever bench said, take the file down ourselves if it is still there.
    let left = Path::new(&path).exists();
    if left {
        let _ = Command::new("swapoff").arg(&path).status();
        let _ = std::fs::remove_file(&path);
    }
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(!left, "{err}");
    assert!(
        err.contains(&format!("took down swap file {path}")),
        "{err}"
    );
    assert_clean(&before, &cg, &[]);
}

/// Live tasks named `rl-load-N` (the scenario's foreign load, background.rs).
fn load_threads() -> usize {
    let mut n = 0;
    for p in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(tasks) = std::fs::read_dir(p.path().join("task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
            if reclaimlab_core::background::is_load_comm(comm.trim_end()) {
                n += 1;
            }
        }
    }
    n
}

/// `machine.background_load` on the host: bench runs the duty-cycle tasks for the run, outside
/// the memcg and counted as foreign (not as the workload), and they are gone after it.
#[test]
fn bench_runs_the_scenarios_foreign_load_and_stops_it() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(cg) = host_or_skip("background_load", false) else {
        return;
    };
    let before = MachineState::capture(&cg);
    let d = bench_json(&small_anon_sweep(&[
        "--set",
        "machine.background_load.tasks=2",
        "--set",
        "machine.background_load.duty=0.4",
        "--set",
        "machine.background_load.period=10ms",
        "--set",
        "machine.background_load.groups=2",
        "--set",
        "machine.background_load.cpus=0",
    ]));
    let f = &d["runs"][0]["foreign"];
    let w = f["window_seconds"].as_f64().unwrap();
    let top = f["user"]["top"].as_array().unwrap();
    let load: Vec<f64> = top
        .iter()
        .filter(|t| reclaimlab_core::background::is_load_comm(t[0].as_str().unwrap()))
        .map(|t| t[1].as_f64().unwrap())
        .collect();
    assert_eq!(load.len(), 2, "both load tasks are foreign: {f}");
    // Both on CPU 0 at 40% each: at most 80% of it between them, and they did run.
    assert!(load.iter().all(|&s| s > 0.05 * w && s < 0.5 * w), "{f}");
    assert!(f["user"]["groups"].as_u64().unwrap() >= 2, "{f}");
    assert_eq!(load_threads(), 0, "the load outlived bench");
    assert_clean(&before, &cg, &[]);
}

/// A bench killed with SIGKILL takes its foreign load with it (PR_SET_PDEATHSIG).
#[test]
fn a_sigkilled_benchs_foreign_load_dies_with_it() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(cg) = host_or_skip("background_load_killed", false) else {
        return;
    };
    let before = MachineState::capture(&cg);
    let mut child = bin()
        .args([
            "bench",
            "file-mmap-rw",
            "--set",
            "workload.file_bytes=64M",
            "--set",
            "memcg.limit=32M",
            "--set",
            "run.duration=60s",
            "--set",
            "machine.background_load.tasks=1",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let pids = wait_for_workload(&mut child, &cg);
    assert!(load_threads() >= 1, "the load did not start");
    send("KILL", pid);
    wait_exit(&mut child, Duration::from_secs(10));
    let t = Instant::now();
    while load_threads() > 0 && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(load_threads(), 0, "the load outlived a killed bench");
    // What SIGKILL left (the memcg, the data file) goes with the next bench.
    let o = bin().args(MMAP_RW).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // What the next bench says it undid, shown if the machine is not clean.
    eprintln!("{}", String::from_utf8_lossy(&o.stderr));
    assert_clean(&before, &cg, &pids);
}
