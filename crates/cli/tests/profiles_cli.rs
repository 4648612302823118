//! `reclaimlab profiles` and `--profile` as a user meets them.

use std::process::Command;

fn run(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_reclaimlab"))
        .args(args)
        .current_dir(std::env::temp_dir()) // shipped profiles work from any directory
        .output()
        .expect("runs");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The shipped generic-x86 profile's text.
fn generic_x86_text() -> String {
    reclaimlab_core::profile::SHIPPED
        .iter()
        .find(|(n, _)| *n == "generic-x86")
        .unwrap()
        .1
        .to_string()
}

const SMALL: &[&str] = &[
    "--set",
    "workload.file_bytes=32M",
    "--set",
    "workload.reclaim_bytes=16M",
    "--set",
    "memcg.limit=64M",
    "--set",
    "machine.cpus=2",
];

#[test]
fn lists_profiles_and_shows_one() {
    let (code, out, _) = run(&["profiles"]);
    assert_eq!(code, 0);
    for n in ["generic-x86", "generic-arm64", "seed000-x86-16cpu"] {
        assert!(out.contains(n), "{out}");
    }
    let (code, out, _) = run(&["profiles", "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let g = v
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "generic-x86")
        .unwrap();
    assert_eq!(g["costs"]["published"], 1);
    let (code, out, _) = run(&["profiles", "generic-x86"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("local_flush_one") && out.contains("published"),
        "{out}"
    );
    let (code, out, _) = run(&["profiles", "generic-x86", "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["costs_detail"]["fault_base"]["ns"], 700.0);
    let bad = std::env::temp_dir().join(format!("reclaimlab-prof-{}.toml", std::process::id()));
    std::fs::write(
        &bad,
        generic_x86_text().replace("[costs.ipi_send]", "[costs.ipi_sned]"),
    )
    .unwrap();
    let (code, _, err) = run(&["profiles", bad.to_str().unwrap()]);
    std::fs::remove_file(&bad).unwrap();
    assert_eq!(code, 2);
    assert!(err.contains("unknown cost \"ipi_sned\""), "{err}");
    let (code, _, err) = run(&["profiles", "nope"]);
    assert_eq!(code, 2);
    assert!(err.contains("no profile named \"nope\""), "{err}");
}

#[test]
fn profile_flag_wins_over_the_scenario_key() {
    let mut args = vec!["sim", "file-reclaim", "--json"];
    args.extend_from_slice(SMALL);
    args.extend_from_slice(&[
        "--set",
        "machine.profile=no-such-profile",
        "--profile",
        "generic-x86",
    ]);
    let (code, out, err) = run(&args);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["runs"][0]["extra"]["profile"]["name"], "generic-x86");
    let mut args = vec!["sim", "file-reclaim"];
    args.extend_from_slice(SMALL);
    args.extend_from_slice(&["--profile", "generic-arm64"]);
    let (code, _, err) = run(&args);
    assert_eq!(code, 2);
    assert!(err.contains("does not match profile"), "{err}");
    // With two result files there is no simulation for a profile to change.
    let (code, _, err) = run(&["compare", "a.json", "b.json", "--profile", "generic-x86"]);
    assert_eq!(code, 2);
    assert!(err.contains("--profile applies to simulations"), "{err}");
}
