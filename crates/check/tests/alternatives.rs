//! The alternatives to reclaim's IPI shootdowns: INVLPGB broadcast invalidation (x86,
//! `--invlpgb`) and LUF (lazy unmap flush, `luf`; unsafe `luf-writable`). Each safe design
//! must pass, and its unsafe form (or the mechanism removed) must be caught.

use reclaimlab_check::{check, Arch, CheckConfig, CheckReport, Mutation, Verdict, Violation};

fn cfg(policy: &str, cpus: u8, pages: u8) -> CheckConfig {
    CheckConfig {
        cpus,
        pages,
        check_model: true,
        ..CheckConfig::new(policy).unwrap()
    }
}

/// A complete search that found nothing.
fn passes(c: &CheckConfig) -> CheckReport {
    let r = check(c).unwrap();
    assert!(r.exhausted && r.verdict == Verdict::NoLostWrite, "{r}");
    r
}

fn trace(r: &CheckReport) -> String {
    let cx = r.counterexample.as_ref().expect("a counterexample");
    cx.steps
        .iter()
        .map(|s| format!("{} {}", s.function, s.detail))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn luf_is_safe_in_the_default_scope() {
    let mut c = CheckConfig::new("6.18+luf").unwrap();
    c.max_states = 5_000_000;
    let r = passes(&c);
    assert!(r.states > 100_000, "{r}");
}

#[test]
fn luf_defers_read_only_mappings_and_stays_safe() {
    // With the mprotect actor, a page can be read-only when reclaim unmaps it: then LUF
    // takes its flush, which shows as states 6.18 never reaches.
    for (cpus, pages) in [(3, 1), (2, 2)] {
        let mut base = cfg("6.18", cpus, pages);
        base.mprotect = true;
        let mut luf = cfg("6.18+luf", cpus, pages);
        luf.mprotect = true;
        let (b, l) = (passes(&base), passes(&luf));
        assert_ne!(b.states, l.states, "LUF deferred nothing at {cpus}/{pages}");
    }
}

#[test]
fn luf_writable_is_caught_and_the_simulator_confirms() {
    // Default scope: the shortest schedule (file folio shared by two mms: not replayable).
    let r = check(&CheckConfig::new("6.18+luf-writable").unwrap()).unwrap();
    assert_eq!(r.verdict, Verdict::Counterexample, "{r}");
    let t = trace(&r);
    assert!(t.contains("LUF: inc_mm_tlb_gen"), "{t}");
    assert!(t.contains("UNSAFE: writable mappings too"), "{t}");
    // An anon-only scope the simulator can build: the same finding in the simulator.
    let r = check(&cfg("6.18+luf-writable", 2, 1)).unwrap();
    let cx = r.counterexample.as_ref().expect("a counterexample");
    assert!(matches!(
        cx.violation,
        Violation::UseAfterFreeWrite { .. } | Violation::LostWrite { .. }
    ));
    let sim = r.sim_replay.as_ref().expect("replayed");
    assert!(sim.not_replayed.is_none(), "{:?}", sim.not_replayed);
    assert!(sim.confirmed, "{:?}", sim.log);
}

#[test]
fn invlpgb_batch_flush_is_safe() {
    let mut c = CheckConfig::new("6.18").unwrap();
    c.invlpgb = true;
    c.check_model = true;
    let r = passes(&c);
    assert!(r.scope.invlpgb);
    let mut d = cfg("6.18+batch-dirty-flush", 3, 4);
    d.file_pages = Some(0);
    d.invlpgb = true;
    passes(&d);
}

#[test]
fn invlpgb_without_tlbsync_is_caught() {
    let mut c = cfg("6.18", 2, 1);
    c.invlpgb = true;
    c.mutation = Some(Mutation::InvlpgbNoTlbsync);
    let r = check(&c).unwrap();
    assert_eq!(r.verdict, Verdict::Counterexample, "{r}");
    let t = trace(&r);
    assert!(t.contains("MUTATION: no TLBSYNC"), "{t}");
    assert!(!t.contains("IPIs ["), "no IPI with INVLPGB: {t}");
}

#[test]
fn invlpgb_is_refused_on_arm64_and_ignored_by_4_2() {
    let mut c = CheckConfig::new("6.18").unwrap();
    c.arch = Arch::Arm64;
    c.invlpgb = true;
    let e = check(&c).unwrap_err();
    assert!(e.contains("--invlpgb") && e.contains("x86"), "{e}");
    let mut old = cfg("4.2", 2, 1);
    old.invlpgb = true;
    let r = passes(&old);
    assert!(!r.scope.invlpgb);
    assert!(
        r.notes.iter().any(|n| n.contains("predates")),
        "{:?}",
        r.notes
    );
}
