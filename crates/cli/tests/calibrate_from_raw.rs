//! `calibrate --from-raw`: the committed profile's stored samples derived again, with no root
//! and no measurement.

mod common;

use common::run;
use std::path::PathBuf;

fn raw() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../profiles/kvm-guest-2vcpu.calibrate.json")
}

/// The quiet machine's shootdown and flush run, which the profile's IPI and flush costs use.
const QUIET_SHOOTDOWN: &str = "kvm-guest-2vcpu.shootdown-quiet-2.calibrate.json";

/// `calibrate --from-raw RAW --out OUT --name kvm-guest-2vcpu` (plus `more`); it must succeed.
fn derive_again(raw: &std::path::Path, out: &std::path::Path, more: &[&str]) {
    let args = [
        "calibrate",
        "--from-raw",
        raw.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--name",
        "kvm-guest-2vcpu",
    ];
    let (code, _, err) = run(&[&args[..], more].concat());
    assert_eq!(code, 0, "{err}");
}

#[test]
fn derives_the_shipped_profile_again_from_its_samples() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("again.toml");
    let raw = raw();
    // The shootdown and flush benchmarks come from a later run on the quiet machine, whose
    // samples replace the first file's (a later --from-raw file wins).
    let quiet = raw.with_file_name(QUIET_SHOOTDOWN);
    derive_again(
        &raw,
        &out,
        &["--from-raw", quiet.to_str().unwrap(), "--json"],
    );
    // The committed profile's calibrate costs were written by this derivation from these
    // samples: the same costs. (Costs measured from another raw file, e.g. the data disk's in
    // kvm-guest-2vcpu.device.txt or the blockio family's own run, are not derived here.)
    let again = std::fs::read_to_string(&out).unwrap();
    let shipped = std::fs::read_to_string(raw.with_file_name("kvm-guest-2vcpu.toml")).unwrap();
    let costs = |text: &str, own_raw: &[&str]| {
        reclaimlab_core::profile::Profile::parse(text, "p")
            .unwrap()
            .costs
            .into_iter()
            .filter(|(_, c)| c.raw.as_deref().is_none_or(|r| own_raw.contains(&r)))
            .map(|(k, c)| (k, (c.ns, c.source)))
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    let again_raw = out.with_extension("calibrate.json");
    let again_raw = again_raw.file_name().unwrap().to_str().unwrap();
    let shipped_raw = [raw.file_name().unwrap().to_str().unwrap(), QUIET_SHOOTDOWN];
    let mut c = costs(&again, &[again_raw]);
    let by_hand = reclaimlab_core::profile::Profile::parse(&shipped, "p").unwrap();
    // A cost the profile takes from a third run (line_transfer: the contention family's own)
    // is derived here too; the profile's figure is that run's.
    c.retain(|k, _| {
        by_hand.costs[k]
            .raw
            .as_deref()
            .is_none_or(|r| shipped_raw.contains(&r))
    });
    assert_eq!(c, costs(&shipped, &shipped_raw));
    assert!(by_hand.costs.len() > costs(&shipped, &shipped_raw).len());
    // The IPI costs are the quiet run's, not the first file's.
    assert_eq!(
        by_hand.costs["ipi_delivery"].raw.as_deref(),
        Some(QUIET_SHOOTDOWN)
    );
    // The path costs and zram by data kind are among them.
    for name in [
        "alloc_anon_folio",
        "do_swap_page",
        "flush_tlb_range_fixed",
        "ipi_delivery",
        "zram_compress_sparse",
        "zram_decompress_random",
    ] {
        assert!(c.contains_key(name), "{name} missing");
    }
    // Sparse data compresses far faster than the stress-ng-like pattern.
    let ns = |n: &str| c[n].0;
    assert!(ns("zram_compress_sparse") < ns("zram_compress") / 5.0);
    assert!(t.path().join("again.calibrate.json").exists());
}

#[test]
fn derives_the_profiles_writeback_costs_again_from_their_samples() {
    // The writeback family's costs come from their own raw file.
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("wb.toml");
    let raw = raw().with_file_name("kvm-guest-2vcpu.writeback.calibrate.json");
    derive_again(&raw, &out, &[]);
    let parse = |text: &str| {
        reclaimlab_core::profile::Profile::parse(text, "p")
            .unwrap()
            .costs
    };
    let again = parse(&std::fs::read_to_string(&out).unwrap());
    let shipped =
        parse(&std::fs::read_to_string(raw.with_file_name("kvm-guest-2vcpu.toml")).unwrap());
    for name in [
        "writepages_folio",
        "writepages_request",
        "writepages_unwritten_request",
        "writeback_complete_folio",
        "writeback_complete_request",
        "writeback_convert_request",
    ] {
        assert_eq!(again[name].ns, shipped[name].ns, "{name}");
        assert_eq!(
            shipped[name].raw.as_deref(),
            raw.file_name().unwrap().to_str()
        );
    }
}

#[test]
fn refuses_a_file_that_is_not_a_raw_document() {
    let t = tempfile::tempdir().unwrap();
    let bad = t.path().join("x.json");
    std::fs::write(&bad, "{\"schema\": 3}").unwrap();
    let (code, _, err) = run(&["calibrate", "--from-raw", bad.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("not a raw calibration document"), "{err}");
    let (code, _, err) = run(&["calibrate", "--from-raw", "/nonexistent/x.json"]);
    assert_ne!(code, 0);
    assert!(err.contains("cannot read"), "{err}");
}

#[test]
fn a_later_document_replaces_the_same_benchmark() {
    let t = tempfile::tempdir().unwrap();
    let raw = raw();
    let mut later: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&raw).unwrap()).unwrap();
    later["command"] = "reclaimlab calibrate --only access".into();
    let ms = later["measurements"].as_array_mut().unwrap();
    ms.retain(|m| m["name"] == "clear-page");
    ms[0]["samples"] = serde_json::json!([500.0, 500.0, 500.0]);
    ms[0]["median"] = 500.0.into();
    let later_path = t.path().join("later.calibrate.json");
    std::fs::write(&later_path, later.to_string()).unwrap();
    let (code, out, err) = run(&[
        "calibrate",
        "--from-raw",
        raw.to_str().unwrap(),
        "--from-raw",
        later_path.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let cal: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(cal["costs"]["zero_page"]["ns"], 500.0);
    // Everything else still comes from the first document.
    assert!(cal["costs"]["ipi_handle"]["ns"].as_f64().unwrap() > 5000.0);
    let notes = cal["notes"].to_string();
    assert!(notes.contains("--only access"), "{notes}");
}
