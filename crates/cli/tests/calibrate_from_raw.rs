//! `calibrate --from-raw`: the committed profile's stored samples derived again, with no root
//! and no measurement.

mod common;

use common::run;
use std::path::PathBuf;

fn raw() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../profiles/kvm-guest-2vcpu.calibrate.json")
}

#[test]
fn derives_the_shipped_profile_again_from_its_samples() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("again.toml");
    let raw = raw();
    let (code, _, err) = run(&[
        "calibrate",
        "--from-raw",
        raw.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--name",
        "kvm-guest-2vcpu",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    // The committed profile was written by this derivation from these samples: the same costs.
    let again = std::fs::read_to_string(&out).unwrap();
    let shipped = std::fs::read_to_string(raw.with_file_name("kvm-guest-2vcpu.toml")).unwrap();
    let costs = |text: &str| {
        reclaimlab_core::profile::Profile::parse(text, "p")
            .unwrap()
            .costs
            .into_iter()
            .map(|(k, c)| (k, (c.ns, c.source)))
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    assert_eq!(costs(&again), costs(&shipped));
    // The path costs and zram by data kind are among them.
    let c = costs(&again);
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
