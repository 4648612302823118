//! Machine profiles (`machine.profile`, `--profile`): loading, arch checks, the result record,
//! and that a profile's costs reach the simulation deterministically.

use reclaimlab_core::{Scenario, Target};

fn load(sets: &[&str]) -> Result<Scenario, String> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    Scenario::load("file-reclaim", &sets, Target::Sim).map_err(|e| e.to_string())
}

fn run(sets: &[&str]) -> anyhow::Result<reclaimlab_core::ResultDoc> {
    let scn = load(sets).map_err(anyhow::Error::msg)?;
    let doc = reclaimlab_sim::run(&scn, &Default::default())?;
    scn.finish()?;
    Ok(doc)
}

const SMALL: &[&str] = &[
    "workload.file_bytes=64M",
    "workload.reclaim_bytes=48M",
    "memcg.limit=128M",
    "machine.cpus=4",
];

fn with<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    SMALL.iter().copied().chain(extra.iter().copied()).collect()
}

fn write_tmp(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("reclaimlab-profiles-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn generic_x86_with(cost: &str, ns: f64) -> String {
    let (_, text) = reclaimlab_core::profile::SHIPPED
        .iter()
        .find(|(n, _)| *n == "generic-x86")
        .unwrap();
    let mut p = reclaimlab_core::profile::Profile::parse(text, "generic-x86").unwrap();
    p.profile.name = "test".into();
    p.costs.get_mut(cost).unwrap().ns = ns;
    p.to_toml().unwrap()
}

#[test]
fn name_and_file_load_the_same_profile() {
    let by_name = load(&["machine.profile=\"generic-x86\""]).unwrap();
    let p = by_name.profile.as_ref().unwrap();
    assert_eq!(p.origin, "profiles/generic-x86.toml");
    let text = p.profile.to_toml().unwrap();
    let f = write_tmp("same.toml", &text);
    let by_file = load(&[&format!("machine.profile={:?}", f.to_str().unwrap())]).unwrap();
    let q = by_file.profile.as_ref().unwrap();
    assert_eq!(q.origin, f.to_str().unwrap());
    assert_eq!(p.profile, q.profile);
}

#[test]
fn unknown_profile_name_lists_the_shipped_ones() {
    let e = load(&["machine.profile=\"no-such-machine\""]).unwrap_err();
    assert!(e.contains("machine.profile"), "{e}");
    assert!(e.contains("no profile named \"no-such-machine\""), "{e}");
    assert!(
        e.contains("generic-x86") && e.contains("generic-arm64"),
        "{e}"
    );
    let e = load(&["machine.profile=\"/nonexistent/dir/p.toml\""]).unwrap_err();
    assert!(e.contains("cannot read"), "{e}");
}

#[test]
fn a_bad_profile_file_is_an_error_naming_the_file() {
    let f = write_tmp("bad.toml", "[profile]\nname = \"x\"\n");
    let e = load(&[&format!("machine.profile={:?}", f.to_str().unwrap())]).unwrap_err();
    assert!(e.contains("bad.toml"), "{e}");
    assert!(e.contains("machine"), "{e}");
}

#[test]
fn arch_mismatch_is_an_error_and_a_missing_arch_comes_from_the_profile() {
    // file-reclaim sets machine.arch = "x86".
    let e = load(&["machine.profile=\"generic-arm64\""]).unwrap_err();
    assert!(e.contains("machine.arch"), "{e}");
    assert!(
        e.contains("does not match profile \"generic-arm64\""),
        "{e}"
    );
    let ok = load(&[
        "machine.profile=\"generic-arm64\"",
        "machine.arch=\"arm64\"",
    ])
    .unwrap();
    assert_eq!(ok.machine.arch, reclaimlab_core::scenario::Arch::Arm64);
    // A scenario without machine.arch takes the profile's.
    let text = reclaimlab_core::scenario::locate("file-reclaim")
        .unwrap()
        .1
        .replace("arch = \"x86\"", "");
    let f = write_tmp("noarch.toml", &text);
    let scn = Scenario::load(
        f.to_str().unwrap(),
        &["machine.profile=\"generic-arm64\"".to_string()],
        Target::Sim,
    )
    .unwrap();
    assert_eq!(scn.machine.arch, reclaimlab_core::scenario::Arch::Arm64);
}

#[test]
fn unknown_cost_name_fails_before_the_run_and_lists_valid_names() {
    let text =
        generic_x86_with("fault_base", 700.0).replace("[costs.fault_base]", "[costs.fault_bsae]");
    let f = write_tmp("unknown-cost.toml", &text);
    let e = run(&with(&[&format!(
        "machine.profile={:?}",
        f.to_str().unwrap()
    )]))
    .unwrap_err()
    .to_string();
    assert!(e.contains("unknown cost \"fault_bsae\""), "{e}");
    assert!(e.contains("file_read_page"), "{e}");
}

#[test]
fn the_result_records_the_profile_and_its_costs_reach_the_model() {
    let plain = run(&with(&[])).unwrap();
    assert!(!plain.runs[0].extra.contains_key("profile"));
    assert!(plain.config["machine"].get("profile").is_none());
    let generic = run(&with(&["machine.profile=\"generic-x86\""])).unwrap();
    let rec = &generic.runs[0].extra["profile"];
    assert_eq!(rec["name"], "generic-x86");
    assert_eq!(rec["costs"]["published"], 1);
    assert_eq!(rec["sha256"].as_str().unwrap().len(), 64);
    assert_eq!(generic.config["machine"]["profile"], "generic-x86");
    // generic-x86 describes 16 CPUs; SMALL simulates 4.
    assert!(
        generic.runs[0]
            .notes
            .iter()
            .any(|n| n.contains("16-CPU machine") && n.contains("has 4 CPUs")),
        "{:?}",
        generic.runs[0].notes
    );
    assert!(!plain.runs[0].notes.iter().any(|n| n.contains("profile")));
    // The generic profile is the built-in table: the same figures.
    assert_eq!(generic.runs[0].throughput, plain.runs[0].throughput);
    assert_eq!(generic.runs[0].counters, plain.runs[0].counters);
    // Doubling one reclaim cost lengthens the timed reclaim.
    let f = write_tmp("slow-rmap.toml", &generic_x86_with("rmap_walk", 2500.0));
    let slow = run(&with(&[&format!(
        "machine.profile={:?}",
        f.to_str().unwrap()
    )]))
    .unwrap();
    assert!(
        slow.runs[0].throughput.value > plain.runs[0].throughput.value * 1.2,
        "{} vs {}",
        slow.runs[0].throughput.value,
        plain.runs[0].throughput.value
    );
}

#[test]
fn a_run_with_a_profile_is_deterministic() {
    let s = with(&[
        "machine.profile=\"seed001-arm64-32core\"",
        "machine.arch=\"arm64\"",
    ]);
    let a = serde_json::to_string(&run(&s).unwrap()).unwrap();
    let b = serde_json::to_string(&run(&s).unwrap()).unwrap();
    assert_eq!(a, b);
}
