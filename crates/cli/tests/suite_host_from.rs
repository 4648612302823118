//! `validate --suite S --host-result STORED.json`: the stored host runs are reused by
//! configuration name and only the simulator runs again (no root needed), so a model change can
//! be held against one set of host measurements. A stored run of other sets is refused (`sim.*`
//! keys aside: the host ignores them).

use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_reclaimlab"))
}

const COMMON: &[&str] = &["run.duration=20ms", "workload.bytes=8M", "memcg.limit=8M"];

/// A simulated result standing in for a host one (same document format).
fn doc(sets: &[&str]) -> serde_json::Value {
    let mut c = bin();
    c.args(["sim", "anon-sweep", "--json", "--set", "machine.cpus=2"]);
    for s in sets {
        c.args(["--set", s]);
    }
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn write_suite(dir: &std::path::Path) -> std::path::PathBuf {
    let p = dir.join("s.toml");
    let common: Vec<String> = COMMON.iter().map(|s| format!("{s:?}")).collect();
    std::fs::write(
        &p,
        format!(
            "scenario = \"anon-sweep\"\nsets = [{}]\n\
             [[config]]\nname = \"one\"\nsets = [\"workload.processes=1\"]\n\
             [[config]]\nname = \"two\"\nsets = [\"workload.processes=2\"]\n",
            common.join(", ")
        ),
    )
    .unwrap();
    p
}

fn stored(dir: &std::path::Path, two_sets: &[&str]) -> std::path::PathBuf {
    let mut one: Vec<&str> = COMMON.to_vec();
    one.push("workload.processes=1");
    let mut two: Vec<&str> = COMMON.to_vec();
    two.extend_from_slice(two_sets);
    let configs: Vec<serde_json::Value> = [("one", one), ("two", two)]
        .into_iter()
        .map(|(name, sets)| {
            let d = doc(&sets);
            serde_json::json!({"name": name, "sets": sets, "error": null, "seconds": 1.0,
                               "host": d, "sim": d})
        })
        .collect();
    let p = dir.join("stored.json");
    std::fs::write(&p, serde_json::json!({ "configs": configs }).to_string()).unwrap();
    p
}

/// `validate --suite SUITE --host-result HOST --json` and any `extra` arguments.
fn validate(suite: &std::path::Path, host: &std::path::Path, extra: &[&str]) -> Command {
    let mut c = bin();
    c.args(["validate", "--suite"])
        .arg(suite)
        .arg("--host-result")
        .arg(host)
        .arg("--json")
        .args(extra);
    c
}

#[test]
fn stored_host_runs_are_reused_and_only_the_simulator_runs() {
    let d = tempfile::tempdir().unwrap();
    let suite = write_suite(d.path());
    let host = stored(d.path(), &["workload.processes=2"]);
    let o = validate(&suite, &host, &["--set", "sim.tick=50us"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let configs = v["configs"].as_array().unwrap();
    assert_eq!(configs.len(), 2);
    for c in configs {
        assert!(c["error"].is_null(), "{c}");
        // The host column holds the stored runs: one run each, as stored.
        assert_eq!(c["host_runs"], 1, "{c}");
        assert!(!c["rows"].as_array().unwrap().is_empty());
    }
}

#[test]
fn a_stored_run_of_other_sets_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let suite = write_suite(d.path());
    let host = stored(d.path(), &["workload.processes=3"]);
    let o = validate(&suite, &host, &[]).output().unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("\"two\"") && err.contains("other sets"),
        "{err}"
    );
}

#[test]
fn sim_keys_do_not_take_part_in_matching_a_stored_run() {
    // The host ignores sim.* keys: a stored run whose sets carry one the suite no longer gives
    // (or the other way round) is the same host measurement.
    let d = tempfile::tempdir().unwrap();
    let suite = write_suite(d.path());
    let host = stored(d.path(), &["sim.tick=50us", "workload.processes=2"]);
    let o = validate(&suite, &host, &[]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// `--background-from-host`: a configuration whose stored host runs carry a foreign record is
/// simulated with the load derived from it (shown in the JSON); one without a record (a host
/// document from before bench kept one) fails with the reason; without the flag nothing is
/// derived.
#[test]
fn background_from_host_derives_the_load_from_the_stored_record() {
    let d = tempfile::tempdir().unwrap();
    let suite = write_suite(d.path());
    let host = stored(d.path(), &["workload.processes=2"]);
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&host).unwrap()).unwrap();
    v["configs"][0]["host"]["runs"][0]["foreign"] = serde_json::json!({
        "window_seconds": 10.0, "scan_seconds": [0.002, 0.002], "scanned_tasks": [100, 100],
        "user": {"tasks_ran": 3, "tasks_seen": 40, "cpu_seconds": 0.3, "wait_seconds": 0.01,
                 "timeslices": 300, "groups": 2, "median_nice": 0},
        "kthreads": {"tasks_ran": 9, "tasks_seen": 60, "cpu_seconds": 0.1, "wait_seconds": 0.0,
                     "timeslices": 900, "groups": 0, "median_nice": 0},
        "workload_tasks": 1, "workload_cpu_seconds": 9.9, "cpu_busy_seconds": [10.0, 0.4],
        "unaccounted_busy_seconds": 0.0, "forks": 0
    });
    std::fs::write(&host, v.to_string()).unwrap();
    let run = |flag: bool| {
        let extra: &[&str] = if flag {
            &["--background-from-host"]
        } else {
            &[]
        };
        let o = validate(&suite, &host, extra).output().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
            panic!("{e}: {}", String::from_utf8_lossy(&o.stderr));
        });
        v
    };
    let on = run(true);
    assert_eq!(on["background_from_host"], true);
    let one = &on["configs"][0];
    assert!(one["error"].is_null(), "{one}");
    // 3 tasks, 0.3 CPU-s over 3 × 10 s, 10 s × 3 / 300 runs.
    let b = &one["background_from_host"];
    assert_eq!(b["tasks"], 3, "{one}");
    assert_eq!(b["period_ns"], 100_000_000u64, "{one}");
    assert!((b["duty"].as_f64().unwrap() - 0.01).abs() < 1e-9, "{one}");
    let two = &on["configs"][1];
    assert!(
        two["error"]
            .as_str()
            .is_some_and(|e| e.contains("no foreign-load record")),
        "{two}"
    );
    let off = run(false);
    for c in off["configs"].as_array().unwrap() {
        assert!(
            c["error"].is_null() && c.get("background_from_host").is_none(),
            "{c}"
        );
    }
}

/// `--background-from-host` on a configuration that declares its own foreign load (bench ran
/// it, so its `rl-load-N` tasks are in the record): the declared load stays, its tasks are
/// taken out of the record, and the rest goes to `machine.background_other`; the simulation
/// runs both sets.
#[test]
fn background_from_host_beside_a_declared_load_adds_the_other_tasks() {
    let d = tempfile::tempdir().unwrap();
    let load = [
        "machine.background_load.tasks=1",
        "machine.background_load.duty=0.3",
        "machine.background_load.period=20ms",
    ];
    let mut sets: Vec<&str> = COMMON.to_vec();
    sets.extend(load);
    sets.push("workload.processes=1");
    let suite = d.path().join("s.toml");
    let quoted: Vec<String> = sets.iter().map(|s| format!("{s:?}")).collect();
    std::fs::write(
        &suite,
        format!(
            "scenario = \"anon-sweep\"\nsets = [{}]\n[[config]]\nname = \"one\"\nsets = []\n",
            quoted.join(", ")
        ),
    )
    .unwrap();
    let mut host = doc(&sets);
    // 10 s: bench's load task (3 CPU-s) and two other user tasks (0.2 CPU-s), 900 runs in all.
    host["runs"][0]["foreign"] = serde_json::json!({
        "window_seconds": 10.0, "scan_seconds": [0.002, 0.002], "scanned_tasks": [100, 100],
        "user": {"tasks_ran": 3, "tasks_seen": 40, "cpu_seconds": 3.2, "wait_seconds": 0.01,
                 "timeslices": 900, "groups": 2, "median_nice": 0,
                 "top": [["rl-load-0", 3.0], ["rl-loaded", 0.15], ["bash", 0.05]]},
        "kthreads": {"tasks_ran": 0, "tasks_seen": 60, "cpu_seconds": 0.0, "wait_seconds": 0.0,
                     "timeslices": 0, "groups": 0, "median_nice": 0},
        "workload_tasks": 1, "workload_cpu_seconds": 9.9, "cpu_busy_seconds": [10.0, 3.4],
        "unaccounted_busy_seconds": 0.0, "forks": 0
    });
    let stored = d.path().join("stored.json");
    let configs = serde_json::json!([{"name": "one", "sets": sets, "error": null,
                                      "seconds": 1.0, "host": host, "sim": host}]);
    std::fs::write(
        &stored,
        serde_json::json!({ "configs": configs }).to_string(),
    )
    .unwrap();
    let out = d.path().join("out.json");
    let o = validate(&suite, &stored, &["--background-from-host", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let one = &v["configs"][0];
    assert!(one["error"].is_null(), "{one}");
    let b = &one["background_from_host"];
    // Two others: 0.2 CPU-s over 2 x 10 s; 900 runs less the load's 500 wake-ups (10 s / 20 ms).
    assert_eq!(b["beside_load"], true, "{b}");
    assert_eq!(b["tasks"], 2, "{b}");
    assert!((b["duty"].as_f64().unwrap() - 0.01).abs() < 1e-9, "{b}");
    assert_eq!(b["period_ns"], 50_000_000u64, "{b}");
    // The model ran the declared task at its duty and the two others at theirs.
    let sim: reclaimlab_core::ResultDoc = serde_json::from_value(one["sim"].clone()).unwrap();
    let bg = sim.runs[0].task_values("background", "cpu_seconds");
    assert_eq!(bg.len(), 3, "{bg:?}");
    let secs = 0.02; // run.duration
    assert!((bg[0] / secs - 0.3).abs() < 0.05, "{bg:?}");
    assert!(bg[1..].iter().all(|c| c / secs < 0.05), "{bg:?}");
}

#[test]
fn calibrate_needs_an_out_file_and_live_host_runs() {
    // validate --suite validation/default.toml --calibrate EXTRA...: refused; its stderr.
    let refused = |extra: &[&str]| -> String {
        let o = bin()
            .args([
                "validate",
                "--suite",
                "validation/default.toml",
                "--calibrate",
            ])
            .args(extra)
            .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .output()
            .unwrap();
        assert!(!o.status.success());
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let err = refused(&[]);
    assert!(
        err.contains("--calibrate") && err.contains("--out"),
        "{err}"
    );
    let err = refused(&["--host-result", "x.json"]);
    assert!(err.contains("cannot be used with"), "{err}");
}

/// `--sim-seeds N`: each configuration is simulated N times (run.seed 1..=N) and the sim column
/// is their median; a `--set run.seed` beside it is refused, as is `--placement-from-host`.
#[test]
fn sim_seeds_simulates_each_configuration_once_per_seed() {
    let d = tempfile::tempdir().unwrap();
    let suite = write_suite(d.path());
    let host = stored(d.path(), &["workload.processes=2"]);
    let o = validate(&suite, &host, &["--sim-seeds", "3"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for c in v["configs"].as_array().unwrap() {
        assert!(c["error"].is_null(), "{c}");
        assert_eq!(c["sim_runs"], 3, "{c}");
    }
    let o = validate(&suite, &host, &["--sim-seeds", "2", "--set", "run.seed=5"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
    let err = format!("{v}{}", String::from_utf8_lossy(&o.stderr));
    assert!(err.contains("drop --set run.seed"), "{err}");
    let o = validate(
        &suite,
        &host,
        &["--sim-seeds", "2", "--placement-from-host"],
    )
    .output()
    .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
    let err = format!("{v}{}", String::from_utf8_lossy(&o.stderr));
    assert!(err.contains("drop --sim-seeds"), "{err}");
}
