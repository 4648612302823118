//! The search's figures are pinned: how the visited set stores states (a speed matter) must not
//! change how many states and transitions it finds, how deep it goes, or its verdict.

use reclaimlab_check::{check, Arch, CheckConfig, Verdict};

/// (states, transitions, depth reached, verdict) of one scope.
fn figures(c: &CheckConfig) -> (u64, u64, u32, Verdict) {
    let r = check(c).unwrap();
    (r.states, r.transitions, r.depth_reached, r.verdict)
}

/// The default scope (6.18, x86, 3 CPUs, 2 pages), as counted before the compact keys.
#[test]
fn default_scope_counts() {
    let c = CheckConfig::new("6.18").unwrap();
    assert_eq!(
        figures(&c),
        (1_262_968, 8_680_961, 38, Verdict::NoLostWrite)
    );
}

/// A counterexample: the search stops at the same state, after the same transitions, with a
/// schedule as short.
#[test]
fn unsafe_policy_counts() {
    let c = CheckConfig::new("6.18+unsafe-defer-dirty-flush").unwrap();
    let r = check(&c).unwrap();
    assert_eq!(
        (r.states, r.transitions, r.depth_reached, r.verdict),
        (123_675, 584_957, 13, Verdict::Counterexample)
    );
    assert_eq!(r.counterexample.unwrap().choices.len(), 13);
}

/// Scopes whose keys take one, two and four words.
#[test]
fn other_scope_counts() {
    let mut c = CheckConfig::new("6.18").unwrap();
    c.cpus = 2;
    c.pages = 3;
    assert_eq!(figures(&c), (56_016, 235_847, 33, Verdict::NoLostWrite));
    c.pages = 5;
    assert_eq!(figures(&c), (793_834, 3_627_865, 53, Verdict::NoLostWrite));
    c.pages = 1;
    c.arch = Arch::Arm64;
    assert_eq!(figures(&c), (42, 95, 9, Verdict::NoLostWrite));
}
