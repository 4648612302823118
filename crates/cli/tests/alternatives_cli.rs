//! Two machines in one comparison (`compare --before-set/--after-set`), `machine.invlpgb`, and
//! `check` on LUF and INVLPGB, as a user runs them.

use std::process::Command;

/// Run `reclaimlab` with the whitespace-separated arguments of `line`.
fn run(line: &str) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_reclaimlab"))
        .args(line.split_whitespace())
        .output()
        .expect("runs");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (
        o.status.code().unwrap_or(-1),
        text(&o.stdout),
        text(&o.stderr),
    )
}

#[test]
fn compare_two_machines_with_per_side_sets() {
    // A small stress-vm: 4 workers on 4 CPUs for 300 ms.
    let (code, out, err) = run(
        "compare stress-vm --before 6.18 --after 6.18 --after-set machine.invlpgb=true \
         --set machine.cpus=4 --set workload.workers=4 --set workload.bytes=64M \
         --set memcg.limit=32M --set run.duration=300ms --json",
    );
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let tlb = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == "tlb_shootdowns")
        .cloned()
        .unwrap_or_else(|| panic!("no tlb_shootdowns row: {v}"));
    assert!(tlb["before"].as_f64().unwrap() > 0.0, "{tlb}");
    assert_eq!(tlb["after"].as_f64().unwrap(), 0.0, "{tlb}");
    let notes = v["notes"].to_string();
    assert!(notes.contains("machine.invlpgb"), "{notes}");
    assert!(v.get("differences").is_none(), "{v}");
    // A per-side set is for simulations only.
    let (code, _, err) = run("compare a.json b.json --after-set x=1");
    assert_eq!(code, 2, "{err}");
    // And an arm64 machine has no INVLPGB.
    let (code, _, err) = run("sim stress-vm --set machine.arch=arm64 --set machine.invlpgb=true");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("machine.invlpgb"), "{err}");
}

#[test]
fn check_passes_luf_and_invlpgb_and_catches_luf_writable() {
    for line in [
        "check --policy 6.18+luf --cpus 2 --pages 2",
        "check --invlpgb --cpus 2 --pages 2",
    ] {
        let (code, out, err) = run(line);
        assert_eq!(code, 0, "{line}: {out}{err}");
    }
    let (code, out, _) = run("check --policy 6.18+luf-writable --cpus 2 --pages 1");
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("LUF"), "{out}");
    assert!(
        out.contains("replayed in the simulator: confirmed"),
        "{out}"
    );
}
