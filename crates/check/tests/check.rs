//! The checker must catch the unsafe policy (with a replayable, real lost write), pass the
//! baseline and every seed policy at scopes of at least 100,000 states, and turn unsafe when a
//! safety mechanism is removed from the model (mutation tests).

use reclaimlab_check::{
    check, parse_policy, replay, Arch, CheckConfig, CheckReport, Choice, Mutation, Verdict,
    Violation,
};

const MIN_STATES: u64 = 100_000;

fn cfg(
    policy: &str,
    arch: Arch,
    cpus: u8,
    pages: u8,
    file: Option<u8>,
    mms: Option<u8>,
) -> CheckConfig {
    let mut c = CheckConfig::new(policy).unwrap();
    c.arch = arch;
    c.cpus = cpus;
    c.pages = pages;
    c.file_pages = file;
    c.mms = mms;
    c
}

fn assert_passes(c: &CheckConfig) -> CheckReport {
    let r = check(c).unwrap();
    assert_eq!(r.verdict, Verdict::NoLostWrite, "{r}");
    assert!(r.exhausted, "{r}");
    assert!(
        r.states >= MIN_STATES,
        "scope too small: {} states\n{r}",
        r.states
    );
    eprintln!(
        "{} {:?}: {} states, {:.2} s",
        r.policy, r.scope.arch, r.states, r.seconds
    );
    r
}

/// The counterexample replays in the model step by step and the oracle fires exactly at its
/// last step, and not before.
fn assert_replays(c: &CheckConfig, r: &CheckReport) -> Violation {
    let cx = r.counterexample.as_ref().expect("counterexample");
    let rep = replay(c, &cx.choices).unwrap();
    let (at, v) = rep
        .violation
        .clone()
        .expect("replay reproduces the violation");
    assert_eq!(
        at + 1,
        cx.choices.len(),
        "oracle fires at the last step only"
    );
    assert_eq!(v, cx.violation);
    // Every prefix is violation-free.
    let prefix = replay(c, &cx.choices[..cx.choices.len() - 1]).unwrap();
    assert!(prefix.violation.is_none());
    v
}

#[test]
fn unsafe_defer_dirty_flush_loses_a_write_x86() {
    let c = cfg("6.18+unsafe-defer-dirty-flush", Arch::X86, 3, 2, None, None);
    let r = check(&c).unwrap();
    assert_eq!(r.verdict, Verdict::Counterexample, "{r}");
    let v = assert_replays(&c, &r);
    assert!(matches!(v, Violation::LostWrite { .. }), "{v:?}");
    let cx = r.counterexample.unwrap();
    // The anatomy of the race: the dirty flush was skipped, pageout snapshotted, and then a
    // store went through a cached entry whose PTE was already cleared, before the free.
    let pos = |f: &str| cx.steps.iter().position(|s| s.function == f).unwrap();
    let pageout = pos("pageout");
    let hit = cx
        .steps
        .iter()
        .position(|s| s.function == "store (TLB hit)" && s.detail.contains("CLEARED"))
        .expect("a store through a stale TLB entry");
    assert!(pageout < hit);
    assert!(hit < pos("free_unref_folios"));
    assert!(cx.steps[pos("try_to_unmap_flush_dirty")]
        .detail
        .contains("skipped"));
    // The structured events say the same: a deferred dirty unmap, no dirty flush, a write,
    // a store through the TLB after it.
    use reclaimlab_check::{KernelStep, StoreVia};
    assert!(cx.steps.iter().any(|s| matches!(
        s.event,
        KernelStep::TryToUnmapOne {
            pte_dirty: true,
            deferred: true,
            ..
        }
    )));
    assert_eq!(
        cx.steps[pos("try_to_unmap_flush_dirty")].event,
        KernelStep::TryToUnmapFlushDirty { flushed: false }
    );
    assert!(matches!(
        cx.steps[pageout].event,
        KernelStep::Pageout { written: true, .. }
    ));
    assert!(matches!(
        cx.steps[hit].event,
        KernelStep::Store {
            via: StoreVia::TlbHit,
            ..
        }
    ));
    let text = format!("{}", check(&c).unwrap());
    assert!(text.contains("LOST WRITE") && text.contains("shortest counterexample"));
}

#[test]
fn unsafe_counterexample_is_shortest_at_smallest_scope() {
    // One user CPU, one anon page: 9 steps (lock, store, unmap, no flush, pageout,
    // __remove_mapping, stale store, flush, free).
    let c = cfg("6.18+unsafe-defer-dirty-flush", Arch::X86, 2, 1, None, None);
    let r = check(&c).unwrap();
    let cx = r.counterexample.as_ref().unwrap();
    assert_eq!(cx.steps.len(), 9, "{r}");
    assert_replays(&c, &r);
}

#[test]
fn unsafe_defer_dirty_flush_loses_a_write_arm64() {
    let c = cfg(
        "6.18+unsafe-defer-dirty-flush",
        Arch::Arm64,
        3,
        3,
        None,
        None,
    );
    let r = check(&c).unwrap();
    assert_eq!(r.verdict, Verdict::Counterexample, "{r}");
    assert!(matches!(
        assert_replays(&c, &r),
        Violation::LostWrite { .. }
    ));
}

#[test]
fn unsafe_defer_dirty_flush_loses_a_write_to_a_shared_file_folio() {
    // With reclaim writing dirty file folios (->writepage), a file large folio shared by two
    // mms needs the dirty flush just as anon does.
    let c = cfg(
        "6.18+unsafe-defer-dirty-flush+file-large-folio-unmap",
        Arch::X86,
        3,
        2,
        Some(2),
        Some(2),
    );
    let r = check(&c).unwrap();
    assert_eq!(r.verdict, Verdict::Counterexample, "{r}");
    assert!(matches!(
        assert_replays(&c, &r),
        Violation::LostWrite { folio: 0, .. }
    ));
    assert!(format!("{r}").contains("->writepage"));
}

#[test]
fn baseline_6_18_x86_passes() {
    assert_passes(&cfg("6.18", Arch::X86, 3, 2, None, None));
}

#[test]
fn tlb_batch_off_4_2_x86_passes() {
    assert_passes(&cfg("4.2", Arch::X86, 3, 2, None, None));
}

#[test]
fn batch_dirty_flush_x86_passes() {
    // Seed 000: four dirty anon folios unmapped, unlocked while batched, one flush, pageouts.
    assert_passes(&cfg(
        "6.18+batch-dirty-flush",
        Arch::X86,
        3,
        4,
        Some(0),
        None,
    ));
}

#[test]
fn batch_dirty_flush_two_passes_x86_passes() {
    // Kept folios (e.g. mapped again by a fault while unlocked in the batch) go round again.
    let mut c = cfg("6.18+batch-dirty-flush", Arch::X86, 3, 3, Some(0), None);
    c.passes = 2;
    assert_passes(&c);
}

#[test]
fn seeds_000_and_001_together_x86_pass() {
    let mut c = cfg(
        "6.18+batch-dirty-flush+file-large-folio-unmap",
        Arch::X86,
        3,
        3,
        Some(2),
        Some(1),
    );
    c.passes = 2;
    assert_passes(&c);
}

#[test]
fn file_folios_only_activated_passes() {
    // Later kernels never write file folios from reclaim: dirty ones are activated.
    let mut c = cfg("6.18", Arch::X86, 3, 2, None, None);
    c.file_pageout = false;
    assert_passes(&c);
}

#[test]
fn file_large_folio_unmap_x86_passes() {
    // Seed 001: a 2-page file folio whose PTE run is cleared in one step, plus an anon page.
    assert_passes(&cfg(
        "6.18+file-large-folio-unmap",
        Arch::X86,
        4,
        3,
        Some(2),
        Some(1),
    ));
}

/// Seed 001 with the file folio shared by two mms (two try_to_unmap_one calls, a batch cpumask
/// over both). About 1.5 M states, ~6 s in release.
#[test]
fn file_large_folio_unmap_x86_two_mms_passes() {
    assert_passes(&cfg("7.0", Arch::X86, 3, 2, Some(2), Some(2)));
}

#[test]
fn baseline_and_seeds_arm64_pass() {
    assert_passes(&cfg("6.18", Arch::Arm64, 3, 3, None, None));
    assert_passes(&cfg("4.2", Arch::Arm64, 3, 3, None, None));
    assert_passes(&cfg("7.0", Arch::Arm64, 3, 3, None, None));
    assert_passes(&cfg(
        "6.18+batch-dirty-flush",
        Arch::Arm64,
        4,
        3,
        Some(0),
        None,
    ));
}

fn mutated(mut c: CheckConfig, m: Mutation) -> CheckReport {
    c.mutation = Some(m);
    let r = check(&c).unwrap();
    assert_eq!(r.verdict, Verdict::Counterexample, "{}: {r}", m.name());
    assert_replays(&c, &r);
    r
}

#[test]
fn mutation_ignore_writable_breaks_baseline() {
    let r = mutated(
        cfg("6.18", Arch::X86, 3, 2, None, None),
        Mutation::IgnoreWritable,
    );
    assert!(matches!(
        r.counterexample.unwrap().violation,
        Violation::LostWrite { .. }
    ));
    mutated(
        cfg("6.18+batch-dirty-flush", Arch::X86, 3, 4, Some(0), None),
        Mutation::IgnoreWritable,
    );
    mutated(
        cfg("6.18", Arch::Arm64, 3, 3, None, None),
        Mutation::IgnoreWritable,
    );
}

#[test]
fn mutation_switch_ignores_tlb_gen_breaks_lazy_tlb() {
    // x86 skips lazy CPUs when flushing; only the tlb_gen check at switch_mm makes that safe.
    let r = mutated(
        cfg("6.18", Arch::X86, 3, 2, None, None),
        Mutation::SwitchIgnoresTlbGen,
    );
    let cx = r.counterexample.unwrap();
    assert!(cx
        .steps
        .iter()
        .any(|s| s.detail.contains("stale tlb_gen ignored")));
}

#[test]
fn mutation_batch_dirty_first_pte_only_breaks_seed_001() {
    // The batched unmap must OR the dirty bits of the whole PTE run.
    let c = cfg(
        "6.18+file-large-folio-unmap",
        Arch::X86,
        3,
        3,
        Some(2),
        Some(1),
    );
    let r = mutated(c.clone(), Mutation::BatchDirtyFirstPteOnly);
    assert!(matches!(
        r.counterexample.unwrap().violation,
        Violation::LostWrite { page: 2, .. }
    ));
    // Without seed 001 the mutation has nothing to act on.
    let mut base = cfg("6.18", Arch::X86, 3, 3, Some(2), Some(1));
    base.mutation = Some(Mutation::BatchDirtyFirstPteOnly);
    assert_eq!(check(&base).unwrap().verdict, Verdict::NoLostWrite);
}

#[test]
fn mutation_ignore_remap_breaks_batch_dirty_flush() {
    // Seed 000 unlocks batched folios; a fault may map one back before its pageout. Only the
    // refcount checks in pageout and __remove_mapping keep it from being freed while mapped.
    let r = mutated(
        cfg("6.18+batch-dirty-flush", Arch::X86, 3, 2, Some(0), None),
        Mutation::IgnoreRemap,
    );
    let cx = r.counterexample.unwrap();
    assert!(
        cx.steps.iter().any(|s| s.function == "do_swap_page"),
        "{cx:?}"
    );
}

#[test]
fn replay_rejects_a_disabled_choice() {
    let c = cfg("6.18", Arch::X86, 2, 1, None, None);
    let e = replay(&c, &[Choice::TrimCpumask { cpu: 1, mm: 0 }]).unwrap_err();
    assert!(e.contains("not enabled"), "{e}");
}

#[test]
fn policy_names_and_errors() {
    assert!(parse_policy("6.18+batch-dirty-flush").is_ok());
    assert!(parse_policy("6.18+unsafe-defer-dirty-flush").is_ok());
    let e = parse_policy("6.18+nope").unwrap_err();
    for name in [
        "batch-dirty-flush",
        "file-large-folio-unmap",
        "unsafe-defer-dirty-flush",
        "tlb-batch",
        "6.18",
        "4.2",
    ] {
        assert!(e.contains(name), "{e}");
    }
    assert!(parse_policy("9.9")
        .unwrap_err()
        .contains("unknown kernel preset"));
    assert!(Arch::parse("riscv").unwrap_err().contains("arm64"));
    let mut c = CheckConfig::new("6.18").unwrap();
    c.cpus = 9;
    assert!(check(&c).unwrap_err().contains("--cpus"));
}

#[test]
fn report_serializes() {
    let c = cfg("6.18+unsafe-defer-dirty-flush", Arch::X86, 2, 1, None, None);
    let r = check(&c).unwrap();
    let j = serde_json::to_value(&r).unwrap();
    assert_eq!(j["verdict"], "counterexample");
    assert_eq!(j["counterexample"]["violation"]["kind"], "lost-write");
    assert_eq!(j["counterexample"]["choices"][0]["kind"], "reclaim");
    assert_eq!(
        j["counterexample"]["steps"][0]["event"]["event"],
        "folio_trylock"
    );
    assert!(j["states"].as_u64().unwrap() > 0);
    // The schedule in JSON replays.
    let choices: Vec<Choice> =
        serde_json::from_value(j["counterexample"]["choices"].clone()).unwrap();
    assert!(replay(&c, &choices).unwrap().violation.is_some());
}

#[test]
fn depth_bound_is_exact_and_state_cap_gives_incomplete() {
    // The smallest unsafe counterexample has 9 steps: a bound of 8 finds nothing (and says the
    // search was cut), a bound of 9 finds it.
    let mut c = cfg("6.18+unsafe-defer-dirty-flush", Arch::X86, 2, 1, None, None);
    c.depth = Some(8);
    let r = check(&c).unwrap();
    assert_eq!(r.verdict, Verdict::NoLostWrite);
    assert!(!r.exhausted);
    assert!(format!("{r}").contains("cut at depth"));
    c.depth = Some(9);
    assert_eq!(check(&c).unwrap().verdict, Verdict::Counterexample);

    let mut c = cfg("6.18", Arch::X86, 3, 2, None, None);
    c.max_states = 1000;
    let r = check(&c).unwrap();
    assert_eq!(r.verdict, Verdict::Incomplete);
    assert!(!r.passed());
}

#[test]
fn model_invariants_hold_in_every_reachable_state() {
    // Small scopes of every policy and arch, with the model's own consistency checked on every
    // state: the flush machinery's invariant (an entry for a cleared PTE is always owed a
    // flush) included.
    for policy in [
        "4.2",
        "6.18",
        "7.0",
        "6.18+batch-dirty-flush",
        "6.18+batch-dirty-flush+file-large-folio-unmap",
    ] {
        for arch in [Arch::X86, Arch::Arm64] {
            for (cpus, pages, file, mms, passes) in [
                (2, 2, None, None, 2),
                (3, 3, Some(2), Some(1), 1),
                (3, 2, Some(2), Some(1), 1),
                (2, 3, None, None, 2),
            ] {
                let mut c = cfg(policy, arch, cpus, pages, file, mms);
                c.passes = passes;
                c.check_model = true;
                let r = check(&c).unwrap();
                assert_eq!(r.verdict, Verdict::NoLostWrite, "{r}");
            }
        }
    }
}

/// The optional mprotect actor: after `mprotect(PROT_READ)` returns no store may land. A
/// deferred reclaim flush leaves writable entries for PTEs that mprotect's walk no longer
/// sees; `flush_tlb_batched_pending` in `change_pte_range` is what closes that
/// (docs/kernel-facts.md §5).
#[test]
fn mprotect_race_is_closed_by_flush_tlb_batched_pending() {
    for (arch, cpus, pages, file, mms) in [
        (Arch::X86, 2, 3, None, None),
        (Arch::Arm64, 3, 2, None, None),
    ] {
        let mut c = cfg("7.0", arch, cpus, pages, file, mms);
        c.mprotect = true;
        c.check_model = true;
        let r = check(&c).unwrap();
        assert_eq!(r.verdict, Verdict::NoLostWrite, "{r}");
        assert!(r.exhausted && r.states > 50_000, "{r}");
        assert!(format!("{r}").contains("no write after mprotect"));
        let r = mutated(c.clone(), Mutation::NoFlushBatchedPending);
        assert!(
            matches!(
                r.counterexample.as_ref().unwrap().violation,
                Violation::WriteAfterMprotect { .. }
            ),
            "{r}"
        );
    }
    let mut c = cfg("6.18+batch-dirty-flush", Arch::X86, 3, 2, Some(0), None);
    c.mprotect = true;
    assert_eq!(check(&c).unwrap().verdict, Verdict::NoLostWrite);
}
