//! The policy table (reclaimlab_core::policy) reaches the simulator with no code per patch: a
//! row's name resolves from a scenario with its implied patches and the preset's settings, and
//! every patch is asked at a decision point (`Kernel::has`). A new row fails the second test
//! until its decision point exists (docs/policies.md).

use reclaimlab_core::policy::{PATCHES, PRESETS};
use reclaimlab_core::{Scenario, Target};
use reclaimlab_sim::config::Policy;
use std::path::Path;

#[test]
fn every_row_resolves_from_a_scenario() {
    for r in PATCHES {
        for preset in PRESETS {
            let sets = [
                format!("kernel.preset={:?}", preset.name),
                format!("kernel.patches=[{:?}]", r.name),
            ];
            let scn = Scenario::load("stress-vm", &sets, Target::Sim).unwrap();
            let p = Policy::from_scenario(&scn).unwrap();
            assert_eq!(p.name, format!("{}+{}", preset.name, r.name));
            assert!(p.has(r.patch) && r.implies.iter().all(|&q| p.has(q)));
            assert!(preset.patches.iter().all(|&q| p.has(q)));
            assert_eq!(p.settings, preset.settings);
        }
    }
}

fn sources(dir: &Path, out: &mut String) {
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            *out += &std::fs::read_to_string(&path).unwrap();
        }
    }
}

#[test]
fn every_patch_is_asked_at_a_decision_point() {
    let mut src = String::new();
    sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut src);
    for r in PATCHES {
        let ask = format!("has(Patch::{:?})", r.patch);
        assert!(
            src.contains(&ask),
            "patch {} has a row but no decision point in the simulator: add `{ask}` where the \
             kernel code it changes is modelled",
            r.name
        );
    }
}
