//! The command line as a user meets it: listing, errors, and the compare table.

mod common;

use common::write_doc;
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_reclaimlab"))
}

fn run(args: &[&str]) -> (i32, String, String) {
    let o = bin().args(args).output().expect("runs");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn lists_and_prints_scenarios() {
    let (code, out, _) = run(&["scenarios"]);
    assert_eq!(code, 0);
    for n in ["stress-vm", "file-reclaim", "file-mmap-rw"] {
        assert!(out.contains(n), "{out}");
    }
    let (code, out, _) = run(&["scenarios", "stress-vm"]);
    assert_eq!(code, 0);
    assert!(out.contains("kind = \"stress-vm\""));
}

#[test]
fn scenario_errors_name_key_and_origin() {
    let (code, _, err) = run(&["sim", "stress-vm", "--set", "workload.workerz=2"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--set workload.workerz=2: unknown key workload.workerz"),
        "{err}"
    );
    let (code, _, err) = run(&["sim", "stress-vm", "--set", "memcg.limit=12Q"]);
    assert_eq!(code, 2);
    assert!(err.contains("memcg.limit: bad size unit"), "{err}");
    let (code, _, err) = run(&["sim", "no-such-scenario"]);
    assert_eq!(code, 2);
    assert!(err.contains("no scenario named"), "{err}");
    let (code, _, err) = run(&["bench", "stress-vm", "--swap", "disk:4G"]);
    assert_eq!(code, 2);
    assert!(err.contains("use zram:SIZE"), "{err}");
    let (code, _, err) = run(&["bench", "stress-vm", "--swap", "file:4G:var/tmp"]);
    assert_eq!(code, 2);
    assert!(err.contains("must be an absolute path"), "{err}");
}

#[test]
fn compare_prints_seed_table() {
    let dir = std::env::temp_dir().join(format!("rl-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let b = write_doc(&dir, "b.json", &[100, 120, 110], &[10.0, 11.0, 12.0]);
    let a = write_doc(&dir, "a.json", &[30, 35, 40], &[11.5, 12.5, 13.0]);
    let (code, out, err) = run(&["compare", &b, &a, "--markdown"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("| Metric | Before | After | Delta (abs / %) |"),
        "{out}"
    );
    assert!(
        out.contains("| tlb_shootdowns | 110 | 35 | -75 (-68.2%) |"),
        "{out}"
    );
    // Throughput ranges overlap (11-13 vs 11.5-13): flagged not significant.
    assert!(
        out.contains("throughput (bogo_ops_per_sec)") && out.contains("n.s."),
        "{out}"
    );
    let (code, out, _) = run(&["compare", &b, &a, "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["rows"].as_array().unwrap().len(), 4);
    let (code, _, err) = run(&["compare", &b, "/nonexistent.json"]);
    assert_eq!(code, 2);
    assert!(err.contains("cannot read /nonexistent.json"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn check_finds_the_unsafe_race_and_passes_the_baseline() {
    let (code, out, err) = run(&[
        "check",
        "--policy",
        "6.18+unsafe-defer-dirty-flush",
        "--cpus",
        "2",
        "--pages",
        "1",
    ]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("LOST WRITE"), "{out}");
    let (code, out, err) = run(&[
        "check", "--policy", "6.18", "--cpus", "2", "--pages", "2", "--json",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["states"].as_u64().unwrap_or(0) > 0, "{v}");
    let (code, _, err) = run(&["check", "--policy", "6.18+nope"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown patch"), "{err}");
}

#[test]
fn compare_runs_the_7_0_preset_on_arm64() {
    // "7.0" must reach the scenario as a string, not the TOML number 7.
    let (code, out, err) = run(&[
        "compare",
        "file-reclaim",
        "--before",
        "6.18",
        "--after",
        "7.0",
        "--set",
        "machine.arch=arm64",
        "--set",
        "machine.cpus=4",
        "--set",
        "workload.file_bytes=8M",
        "--set",
        "workload.reclaim_bytes=4M",
        "--set",
        "sim.file_folio_order=4",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("sim 7.0"), "{out}");
}

#[test]
fn bench_rejects_the_sim_only_kswapd_workload() {
    // Before the root check: the answer does not depend on who runs it.
    for cmd in ["bench", "validate"] {
        let (code, _, err) = run(&[cmd, "kswapd-mmap-read"]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("kswapd-mmap-read is sim only"), "{err}");
    }
}

/// The short stress-vm comparison the mail layout test and the ASCII test run.
const SMALL_STRESS_VM: &[&str] = &[
    "compare",
    "stress-vm",
    "--before",
    "6.18",
    "--after",
    "6.18+batch-dirty-flush",
    "--set",
    "run.duration=1s",
    "--set",
    "machine.cpus=4",
    "--set",
    "workload.workers=4",
    "--set",
    "workload.bytes=64M",
    "--set",
    "memcg.limit=32M",
];

#[test]
fn compare_mail_layout() {
    let mut args = SMALL_STRESS_VM.to_vec();
    args.extend(["--format", "mail"]);
    let (code, out, err) = run(&args);
    assert_eq!(code, 0, "{err}");
    assert!(out.is_ascii(), "{out}");
    let lines: Vec<&str> = out.lines().collect();
    // The configuration: one "Label:" per line, values in one column.
    let header: Vec<&str> = lines
        .iter()
        .take_while(|l| !l.is_empty())
        .copied()
        .collect();
    let labels: Vec<&str> = header
        .iter()
        .map(|l| l.split(':').next().unwrap())
        .collect();
    assert_eq!(
        labels,
        [
            "Before",
            "After",
            "Scenario",
            "Backend",
            "Arch",
            "CPUs",
            "Memory",
            "Swap",
            "memcg limit",
            "Workload",
            "Duration",
            "Seed",
            "Runs"
        ],
        "{out}"
    );
    for l in &header {
        assert!(
            l.len() > 14 && &l[13..14] == " " && &l[14..15] != " ",
            "{l}"
        );
    }
    assert!(header.contains(&"Before:       6.18"), "{out}");
    assert!(
        header.contains(&"After:        6.18+batch-dirty-flush"),
        "{out}"
    );
    assert!(header.contains(&"CPUs:         4"), "{out}");
    assert!(header.contains(&"memcg limit:  32M"), "{out}");
    assert!(header.contains(&"Duration:     1s"), "{out}");
    assert!(header.contains(&"Runs:         1 per side"), "{out}");
    assert!(
        header
            .iter()
            .any(|l| l.starts_with("Workload:     stress-vm ")
                && l.contains("workers=4")
                && l.contains("bytes_total=64M")),
        "{out}"
    );
    // Then the columns: a header, a dashed line, rows right-aligned to the same width.
    let table = &lines[header.len() + 1..];
    let cols: Vec<&str> = table[0].split_whitespace().collect();
    assert_eq!(cols, ["before", "after", "delta", "delta", "%"], "{out}");
    assert!(table[1].chars().all(|c| c == '-'), "{out}");
    let width = table[1].len();
    let rows: Vec<&str> = table[2..]
        .iter()
        .take_while(|l| !l.is_empty())
        .copied()
        .collect();
    assert!(rows.len() >= 4, "{out}");
    for l in [table[0]].iter().chain(&rows) {
        assert_eq!(l.len(), width, "not aligned: {l:?}\n{out}");
        assert!(l.ends_with('%'), "{l:?}");
    }
    let names: Vec<&str> = rows
        .iter()
        .map(|l| l.split("   ").next().unwrap())
        .collect();
    for n in [
        "bogo ops/s",
        "TLB shootdowns",
        "function call IPIs",
        "pgsteal anon",
    ] {
        assert!(names.contains(&n), "{n} missing: {names:?}");
    }
    assert!(
        !out.contains("wall"),
        "no wall-clock row without --all: {out}"
    );
    // --raw-names: the keys; --all: the wall-clock row too.
    args.extend(["--raw-names", "--all"]);
    let (code, out, err) = run(&args);
    assert_eq!(code, 0, "{err}");
    for k in [
        "throughput (bogo_ops_per_sec)",
        "tlb_shootdowns",
        "pgsteal_anon",
        "wall_seconds",
    ] {
        assert!(out.lines().any(|l| l.starts_with(k)), "{k}: {out}");
    }
}

#[test]
fn text_is_ascii_off_a_terminal_and_aliases_agree() {
    // stdout is a pipe here: the text table is plain ASCII.
    let (code, out, err) = run(SMALL_STRESS_VM);
    assert_eq!(code, 0, "{err}");
    assert!(out.is_ascii(), "{out}");
    assert!(out.contains("| tlb_shootdowns "), "{out}");
    for (alias, format) in [("--json", "json"), ("--markdown", "markdown")] {
        let mut a = SMALL_STRESS_VM.to_vec();
        a.push(alias);
        let mut f = SMALL_STRESS_VM.to_vec();
        f.extend(["--format", format]);
        assert_eq!(run(&a), run(&f), "{alias}");
    }
    let mut both = SMALL_STRESS_VM.to_vec();
    both.extend(["--json", "--format", "mail"]);
    assert_eq!(run(&both).0, 2);
}

#[test]
fn help_says_where_the_keys_are_and_every_default() {
    for cmd in ["sim", "bench", "compare", "sweep"] {
        let (code, out, err) = run(&[cmd, "--help"]);
        assert_eq!(code, 0, "{err}");
        assert!(
            out.contains("`reclaimlab scenarios NAME` prints"),
            "{cmd}: {out}"
        );
        // Every option says its default: clap's [default: ...] or its own "(default: ...)",
        // or it is a flag, required, or says what holds when it is absent.
        let opts: Vec<&str> = out.split("\n      --").skip(1).collect();
        assert!(!opts.is_empty(), "{out}");
        for o in opts {
            let flag = !o.lines().next().unwrap_or("").contains('<');
            let has = o.contains("default") || o.contains("required") || o.contains("no default");
            assert!(flag || has, "{cmd}: --{o}");
        }
    }
    let (_, out, _) = run(&["sweep", "--help"]);
    assert!(out.contains("[default: 6.18]"), "{out}");
    let (_, out, _) = run(&["compare", "--help"]);
    assert!(out.contains("[default: text]"), "{out}");
    // The command the help points to exists and prints keys with their values.
    let (code, out, _) = run(&["scenarios", "stress-vm"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("[workload]") && out.contains("workers = "),
        "{out}"
    );
}

/// `--jobs` changes how many simulations run at once, never their results.
#[test]
fn jobs_do_not_change_sweep_or_compare_results() {
    let small = [
        "--set",
        "machine.cpus=2",
        "--set",
        "workload.bytes=16M",
        "--set",
        "memcg.limit=4M",
        "--set",
        "run.duration=100ms",
    ];
    // The same simulations with `--jobs J` appended: the JSON must not depend on J.
    let with_jobs = |args: &[&str], jobs: &str| {
        let mut a = args.to_vec();
        a.extend_from_slice(&["--json", "--jobs", jobs]);
        a.extend_from_slice(&small);
        let (code, out, err) = run(&a);
        assert_eq!(code, 0, "{err}");
        out
    };
    let sweep_args = [
        "sweep",
        "stress-vm",
        "--vary",
        "workload.workers=1,2",
        "--after",
        "6.18+batch-dirty-flush",
    ];
    let sweep = |jobs: &str| with_jobs(&sweep_args, jobs);
    assert_eq!(sweep("1"), sweep("2"));
    assert_eq!(sweep("1"), sweep("3"));
    let compare_args = [
        "compare",
        "stress-vm",
        "--before",
        "6.18",
        "--after",
        "6.18+batch-dirty-flush",
    ];
    let compare = |jobs: &str| with_jobs(&compare_args, jobs);
    assert_eq!(compare("1"), compare("2"));
    let (code, _, err) = run(&[
        "sweep",
        "stress-vm",
        "--vary",
        "machine.cpus=2",
        "--jobs",
        "0",
    ]);
    assert_eq!(code, 2, "{err}");
}
