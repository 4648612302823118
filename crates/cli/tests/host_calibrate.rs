//! Real-kernel test of `reclaimlab calibrate`: a --quick subset runs, writes a profile that
//! `Profile::parse` accepts with its raw samples beside it, and leaves nothing behind. It needs
//! root and a memory cgroup controller; without them it prints why it is skipped and passes.

use reclaimlab_core::profile::{Profile, Provenance};

mod common;
use common::*;

#[test]
fn bad_family_is_an_error_naming_it() {
    let out = bin()
        .args(["calibrate", "--quick", "--only", "fault,tlb"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("\"tlb\"") && err.contains("shootdown"),
        "{err}"
    );
}

/// The names of a raw calibration document's measurements.
fn measurement_names(raw: &serde_json::Value) -> Vec<&str> {
    raw["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect()
}

/// Run reclaimlab with `args`; it must succeed and leave the machine as it found it.
/// Returns (stdout, stderr).
fn calibrate_clean(cg_root: &std::path::Path, args: &[&str]) -> (String, String) {
    let before = MachineState::capture(cg_root);
    let run = bin().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&run.stderr).into_owned();
    assert!(run.status.success(), "calibrate failed: {err}");
    assert_eq!(
        MachineState::capture(cg_root),
        before,
        "calibrate left something behind"
    );
    (String::from_utf8_lossy(&run.stdout).into_owned(), err)
}

#[test]
fn quick_subset_writes_a_profile_and_leaves_nothing_behind() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(cg_root) = host_or_skip("calibrate", false) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("rlab-calibrate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("test-machine.toml");
    let (_, err) = calibrate_clean(
        &cg_root,
        &[
            "calibrate",
            "--quick",
            "--only",
            "fault,flush,zram,reclaim",
            "--out",
            out.to_str().unwrap(),
        ],
    );

    let p = Profile::parse(&std::fs::read_to_string(&out).unwrap(), "test-machine.toml").unwrap();
    assert_eq!(p.profile.name, "test-machine");
    for name in ["fault_base", "zram_compress", "local_flush_one"] {
        let c = p
            .costs
            .get(name)
            .unwrap_or_else(|| panic!("{name} missing: {err}"));
        assert_eq!(c.provenance, Provenance::Measured);
        assert_eq!(c.raw.as_deref(), Some("test-machine.calibrate.json"));
        assert!(c.ns > 0.0 && c.samples == Some(5), "{name}: {c:?}");
    }
    let raw: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("test-machine.calibrate.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(raw["schema"], "reclaimlab-calibrate/1");
    let names = measurement_names(&raw);
    for n in [
        "anon-write-fault",
        "reclaim-file-order0",
        "reclaim-anon-zram",
        "swapin-fault-zram",
    ] {
        assert!(names.contains(&n), "{n} not in {names:?}");
    }
    assert!(!raw["checks"].as_array().unwrap().is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The cycle family: perf profiles the swap-in/reclaim cycle and the reclaim path's costs come
/// out of it, every one of them a positive figure, and nothing is left behind (memcg, swap,
/// the perf data file in --dir). Skips without perf.
#[test]
fn the_cycle_family_sets_the_reclaim_path_costs() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(cg_root) = host_or_skip("calibrate cycle", false) else {
        return;
    };
    if std::process::Command::new("perf")
        .arg("--version")
        .output()
        .map_or(true, |o| !o.status.success())
    {
        eprintln!("skipping the cycle family: perf is not installed");
        return;
    }
    let dir = std::env::temp_dir().join(format!("rlab-cycle-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (stdout, err) = calibrate_clean(
        &cg_root,
        &[
            "calibrate",
            "--quick",
            "--only",
            "flush,cycle",
            "--json",
            "--dir",
            dir.to_str().unwrap(),
        ],
    );
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "perf data left in --dir"
    );
    let cal: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    for name in [
        "rmap_walk",
        "isolate_folio",
        "swap_writeout",
        "remove_mapping",
        "fault_base",
        "do_swap_page",
    ] {
        let ns = cal["costs"][name]["ns"].as_f64();
        assert!(
            ns.is_some_and(|v| v > 0.0),
            "{name}: {:?}\n{err}",
            cal["notes"]
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The writeback family: its six benchmarks run, the per-folio submission cost comes out
/// positive, and its data files in --dir are gone afterwards.
#[test]
fn the_writeback_family_measures_and_removes_its_files() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(cg_root) = host_or_skip("calibrate writeback", false) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("rlab-calibrate-wb-{}", std::process::id()));
    // calibrate's own default directory for data files (a disk filesystem, not tmpfs).
    let data =
        std::path::Path::new("/var/tmp").join(format!("rlab-wb-data-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    let out = dir.join("wb.toml");
    let args = [
        "--dir",
        data.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    let (_, err) = calibrate_clean(
        &cg_root,
        &[&["calibrate", "--quick", "--only", "writeback"][..], &args].concat(),
    );
    let p = Profile::parse(&std::fs::read_to_string(&out).unwrap(), "wb.toml").unwrap();
    let c = p
        .costs
        .get("writepages_folio")
        .unwrap_or_else(|| panic!("writepages_folio missing: {err}"));
    assert_eq!(c.provenance, Provenance::Measured);
    assert!(c.ns > 0.0, "{c:?}");
    let raw: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("wb.calibrate.json")).unwrap())
            .unwrap();
    let names = measurement_names(&raw);
    for kind in ["random-unwritten", "random-written", "seq-unwritten"] {
        for side in ["submit", "complete"] {
            let n = format!("writeback-{kind}-{side}");
            assert!(names.contains(&n.as_str()), "{n} not in {names:?}");
        }
    }
    assert_eq!(
        std::fs::read_dir(&data).unwrap().count(),
        0,
        "data files left in --dir"
    );
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&data).unwrap();
}
