//! The policy table (reclaimlab_core::policy) reaches the checker with no code per patch: a
//! row's `in_check` says whether the model has its decision point, and this test holds the two
//! to each other, so a new row cannot be silently accepted as modelled (docs/policies.md).

use reclaimlab_check::{policy_help, CheckConfig};
use reclaimlab_core::policy::PATCHES;

#[test]
fn in_check_matches_the_models_decision_points() {
    let model = include_str!("../src/model.rs");
    let help = policy_help();
    for r in PATCHES {
        let ask = format!("has(Patch::{:?})", r.patch);
        assert_eq!(
            model.contains(&ask),
            r.in_check,
            "patch {}: in_check is {} but model.rs {} `{ask}`",
            r.name,
            r.in_check,
            if r.in_check { "never asks" } else { "asks" }
        );
        let line = help
            .lines()
            .find(|l| l.split_whitespace().next() == Some(r.name))
            .unwrap_or_else(|| panic!("{} missing from:\n{help}", r.name));
        assert_eq!(
            line.ends_with("[no effect in check]"),
            !r.in_check,
            "{line}"
        );
        let m = CheckConfig::new(&format!("6.18+{}", r.name))
            .unwrap()
            .model()
            .unwrap();
        assert!(m.patches.has(r.patch) && r.implies.iter().all(|&q| m.patches.has(q)));
    }
}
