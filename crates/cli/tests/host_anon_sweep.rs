//! Real-kernel tests of anon-sweep: a short bench whose anonymous memory is reclaimed
//! with no OOM kill and nothing left behind, and a CI-sized validation suite (two
//! configurations, short runs) through both backends. Accuracy is reported, not asserted.
//!
//! They need root and a memory cgroup controller; without them each test prints why it is
//! skipped and passes.

mod common;
use common::*;

#[test]
fn anon_sweep_bench_reclaims_without_oom_and_leaves_nothing() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(cg_root) = host_or_skip(
        "anon_sweep_bench_reclaims_without_oom_and_leaves_nothing",
        false,
    ) else {
        return;
    };
    let before = MachineState::capture(&cg_root);
    let mut args = vec![
        "bench",
        "anon-sweep",
        "--set",
        "workload.processes=2",
        "--set",
        "workload.threads=1",
        "--set",
        "workload.bytes=32M",
        "--set",
        "workload.cpus=[0,1]",
        "--set",
        "workload.write_ratio=0.5",
        "--set",
        "memcg.limit=32M",
        "--set",
        "run.duration=4s",
        "--json",
    ];
    args.extend(swap_args());
    let j = bench_json(&args);
    assert_eq!(j["backend"], "host");
    let run = &j["runs"][0];
    let c = &run["counters"];
    assert!(c["pgsteal_anon"].as_u64().unwrap() > 0, "{c}");
    assert!(c["pswpout"].as_u64().unwrap() > 0, "{c}");
    assert_eq!(run["oom_kills"], 0, "{run}");
    assert_eq!(run["valid"], true, "{run}");
    assert_eq!(run["throughput"]["unit"], "pages_per_sec");
    assert!(run["throughput"]["value"].as_f64().unwrap() > 0.0, "{run}");
    // Two threads' counts, at least each one's populate pass (4096 pages of its 8192).
    let per = run["extra"]["pages_touched_per_thread"].as_array().unwrap();
    assert_eq!(per.len(), 2);
    assert!(per.iter().all(|n| n.as_u64().unwrap() >= 8192), "{per:?}");
    assert_pinned_processes_ran_only_on_their_cpus(&j);
    assert_clean(&before, &cg_root, &[]);
}

/// The scheduler trace on a pinned run: each worker process (its main thread and its sweeping
/// thread) ran only on its one CPU, the parent having forked it already pinned there.
fn assert_pinned_processes_ran_only_on_their_cpus(j: &serde_json::Value) {
    let p = &j["runs"][0]["extra"]["placement"];
    assert!(p["sched_trace"]["events"].as_u64() > Some(0), "{p}");
    // The reader's own CPU time: some, and far less than the 4-s run.
    let cpu = p["sched_trace"]["reader_cpu_s"].as_f64().unwrap_or(-1.0);
    assert!(cpu > 0.0 && cpu < 1.0, "{p}");
    let procs = p["processes"].as_array().unwrap();
    assert_eq!(procs.len(), 2, "{p}");
    let mut cpus: Vec<u64> = Vec::new();
    for proc in procs {
        let ran = proc["cpus_ran"].as_array().unwrap();
        assert_eq!(ran.len(), 1, "a pinned process ran on one CPU: {proc}");
        let cpu = ran[0].as_u64().unwrap();
        cpus.push(cpu);
        let threads = proc["threads"].as_array().unwrap();
        assert_eq!(threads.len(), 2, "main and sweeping thread: {proc}");
        for t in threads {
            assert_eq!(t["cpus_ran"], serde_json::json!([cpu]), "{proc}");
            assert_eq!(t["first_cpu"], cpu, "{proc}");
        }
    }
    // Worker p is pinned to CPU p; pids are sorted, so compare as sets.
    cpus.sort();
    assert_eq!(cpus, vec![0, 1], "{p}");
}

#[test]
fn ci_suite_runs_both_backends_and_prints_the_table() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(cg_root) = host_or_skip("ci_suite_runs_both_backends_and_prints_the_table", false)
    else {
        return;
    };
    let before = MachineState::capture(&cg_root);
    let dir = std::env::temp_dir().join(format!("rlab-suite-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let suite = dir.join("ci.toml");
    std::fs::write(
        &suite,
        "scenario = \"anon-sweep\"\n\
         sets = [\"run.duration=3s\", \"workload.bytes=32M\", \"memcg.limit=32M\"]\n\
         [[config]]\nname = \"2 processes on CPUs 0,1\"\n\
         sets = [\"workload.processes=2\", \"workload.cpus=[0,1]\"]\n\
         [[config]]\nname = \"1 process, 2 threads on CPUs 0,1\"\n\
         sets = [\"workload.processes=1\", \"workload.threads=2\", \"workload.cpus=[0,1]\", \
         \"memcg.limit=16M\"]\n",
    )
    .unwrap();
    let out = dir.join("out.json");
    let mut cmd = bin();
    cmd.args(["validate", "--suite"])
        .arg(&suite)
        .args(["--repeat", "1", "--markdown", "--out"])
        .arg(&out)
        .args(swap_args());
    let o = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "validate --suite failed: {}\n{stdout}",
        String::from_utf8_lossy(&o.stderr)
    );
    for want in [
        "| configuration | ratio | host median [min–max] | sim | sim error |",
        "| 2 processes on CPUs 0,1 | tlb_shootdowns/pgsteal_anon |",
        "| 1 process, 2 threads on CPUs 0,1 | tlb_shootdowns/pgsteal_anon |",
        "throughput (pages_per_sec)",
        "OOM kills | host 0 (valid runs 1/1), sim 0",
    ] {
        assert!(stdout.contains(want), "no {want:?} in:\n{stdout}");
    }
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let configs = j["configs"].as_array().unwrap();
    assert_eq!(configs.len(), 2);
    for c in configs {
        assert_eq!(c["host"]["backend"], "host", "{}", c["name"]);
        assert_eq!(c["sim"]["backend"], "sim", "{}", c["name"]);
        assert!(c["host"]["runs"][0]["counters"]["pgsteal_anon"].as_u64() > Some(0));
        assert!(c["sim"]["runs"][0]["counters"]["pgsteal_anon"].as_u64() > Some(0));
        // Five per-stolen-page ratios, throughput, and the placement row.
        let rows = c["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 7, "{}", c["name"]);
        assert!(
            rows.iter()
                .any(|r| r["ratio"] == "migrations per worker per second"),
            "{}",
            c["name"]
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
    assert_clean(&before, &cg_root, &[]);
}

/// Needs no root: a suite with a typo fails at once, before any configuration runs.
#[test]
fn suite_with_an_unknown_key_fails_before_running_anything() {
    let dir = std::env::temp_dir().join(format!("rlab-suite-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let suite = dir.join("bad.toml");
    std::fs::write(
        &suite,
        "scenario = \"anon-sweep\"\n[[config]]\nname = \"ok\"\n\
         [[config]]\nname = \"typo\"\nsets = [\"workload.proceses=2\"]\n",
    )
    .unwrap();
    let o = bin()
        .args(["validate", "--suite"])
        .arg(&suite)
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("configuration \"typo\"") && err.contains("unknown key workload.proceses"),
        "{err}"
    );
    assert!(!err.contains("[1/2]"), "a configuration ran: {err}");
}
