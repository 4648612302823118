//! The flusher and the device as actors (`CheckConfig::flusher`): page_mkclean's flush is what
//! keeps a store out of a folio after its writeback snapshot (the `mkclean-no-flush` mutation
//! loses a write), reclaim keeps a folio under writeback and frees it once written, and the
//! kernel's deferred unmap flush races the flusher on a dirty file folio reclaim activated.

use reclaimlab_check::{
    check, replay, Arch, CheckConfig, Choice, KernelStep, Mutation, StoreVia, Verdict, Violation,
};

/// One shared file page mapped by two mms, 3 CPUs, dirty file folios activated (6.18).
fn file_scope(policy: &str, arch: Arch) -> CheckConfig {
    let mut c = CheckConfig::new(policy).unwrap();
    c.arch = arch;
    c.cpus = 3;
    c.pages = 1;
    c.file_pages = Some(1);
    c.flusher = true;
    c.file_pageout = false;
    c.check_model = true;
    c
}

fn passes(c: &CheckConfig, min_states: u64) {
    let r = check(c).unwrap();
    assert_eq!(r.verdict, Verdict::NoLostWrite, "{r}");
    assert!(r.exhausted && r.states >= min_states, "{r}");
    eprintln!(
        "{} {:?}: {} states, {:.2} s",
        r.policy, c.arch, r.states, r.seconds
    );
}

#[test]
fn flusher_without_deferred_flush_passes() {
    // 4.2 flushes each unmapped PTE at once: with the flusher writing, nothing is lost.
    passes(&file_scope("4.2", Arch::X86), 300_000);
    // arm64 broadcasts each flush at once and has no lazy CPUs to come back: a fourth CPU.
    let mut c = file_scope("4.2", Arch::Arm64);
    c.cpus = 4;
    passes(&c, 100_000);
    let mut c = file_scope("4.2", Arch::X86);
    c.passes = 2;
    passes(&c, 500_000);
}

#[test]
fn flusher_with_reclaim_writing_file_folios_passes() {
    // Reclaim that writes dirty file folios itself keeps them locked from the unmap through
    // try_to_unmap_flush_dirty and pageout: the flusher cannot get between them.
    let mut c = file_scope("6.18", Arch::X86);
    c.file_pageout = true;
    passes(&c, 500_000);
}

/// The schedule of the broken variant in full: a store through the writable entry page_mkclean
/// did not flush, after the snapshot; the device completes; reclaim frees the clean folio.
#[test]
fn mkclean_no_flush_loses_a_write() {
    for (policy, pageout) in [("4.2", false), ("6.18", true), ("7.0", true)] {
        let mut c = file_scope(policy, Arch::X86);
        c.file_pageout = pageout;
        c.mutation = Some(Mutation::MkcleanNoFlush);
        let r = check(&c).unwrap();
        assert_eq!(r.verdict, Verdict::Counterexample, "{r}");
        let cx = r.counterexample.as_ref().unwrap();
        assert!(cx.steps.len() <= 8, "{r}");
        let mk = cx
            .steps
            .iter()
            .position(|s| s.function == "folio_clear_dirty_for_io")
            .expect("the flusher cleaned the folio");
        assert!(cx.steps[mk].detail.contains("MUTATION: no flush"), "{r}");
        let hit = cx
            .steps
            .iter()
            .position(|s| {
                matches!(
                    s.event,
                    KernelStep::Store {
                        via: StoreVia::TlbHit,
                        ..
                    }
                )
            })
            .expect("a store through the surviving entry");
        assert!(mk < hit, "{r}");
        assert!(matches!(
            cx.violation,
            Violation::LatentLostWrite { page: 0, .. } | Violation::LostWrite { page: 0, .. }
        ));
        // Without the mutation the same schedule is not even possible: the store after
        // page_mkclean has no entry to hit and takes a write-protect fault.
        c.mutation = None;
        assert!(
            replay(&c, &cx.choices).is_err()
                || replay(&c, &cx.choices).unwrap().violation.is_none()
        );
    }
    // ... and carried on to the free: the device completes, reclaim unmaps the clean PTEs and
    // frees the folio with the store missing from the file.
    let mut c = file_scope("4.2", Arch::X86);
    c.mutation = Some(Mutation::MkcleanNoFlush);
    let sched = [
        Choice::Store { cpu: 1, page: 0 },
        Choice::Flusher { folio: 0 },
        Choice::Store { cpu: 1, page: 0 },
        Choice::EndWriteback { folio: 0 },
        Choice::Reclaim, // folio_trylock
        Choice::Reclaim, // try_to_unmap_one mm0 (clean)
        Choice::Reclaim, // try_to_unmap_one mm1, clean: to __remove_mapping
        Choice::Reclaim, // __remove_mapping
        Choice::Reclaim, // try_to_unmap_flush
        Choice::Reclaim, // free_unref_folios
    ];
    let r = replay(&c, &sched).unwrap();
    let (at, v) = r.violation.clone().expect("the free loses the store");
    assert_eq!(at, sched.len() - 1, "{:#?}", r.steps);
    assert_eq!(v, Violation::LostWrite { page: 0, folio: 0 });
    assert!(
        r.steps[2].detail.contains("PTE present"),
        "{:#?}",
        r.steps[2]
    );
}

#[test]
fn reclaim_keeps_a_folio_under_writeback_and_frees_it_written() {
    let mut c = file_scope("6.18", Arch::X86);
    c.passes = 2;
    let sched = [
        Choice::Store { cpu: 1, page: 0 }, // do_wp_page: PG_dirty
        Choice::Flusher { folio: 0 },      // page_mkclean (flush), PG_writeback
        Choice::Reclaim,                   // folio_trylock: under writeback, keep
        Choice::Reclaim,                   // try_to_unmap_flush
        Choice::Reclaim,                   // free_unref_folios (nothing)
        Choice::EndWriteback { folio: 0 }, // the file has the store
        Choice::Reclaim,                   // pass 2: folio_trylock
        Choice::Reclaim,                   // try_to_unmap_one mm0
        Choice::Reclaim,                   // try_to_unmap_one mm1: clean
        Choice::Reclaim,                   // __remove_mapping
        Choice::Reclaim,                   // try_to_unmap_flush
        Choice::Reclaim,                   // free_unref_folios {f0}
    ];
    let r = replay(&c, &sched).unwrap();
    assert!(r.violation.is_none(), "{:#?}", r.steps);
    assert_eq!(
        r.steps[0].event,
        KernelStep::Store {
            cpu: 1,
            mm: 0,
            page: 0,
            via: StoreVia::WpFault
        }
    );
    assert!(
        r.steps[2].detail.contains("PG_writeback"),
        "{:#?}",
        r.steps[2]
    );
    assert!(
        r.steps[4].pending.contains("PG_writeback"),
        "{:#?}",
        r.steps[4]
    );
    assert_eq!(
        r.steps[5].event,
        KernelStep::FolioEndWriteback {
            folio: 0,
            rotated: true
        }
    );
    assert_eq!(
        r.steps[11].event,
        KernelStep::FreeUnrefFolios { folios: vec![0] }
    );
    // A store between the snapshot and the completion re-dirties the folio (write-protect
    // fault), so reclaim keeps it in pass 2 instead.
    let mut redirty = sched[..5].to_vec();
    redirty.push(Choice::Store { cpu: 1, page: 0 });
    // Pass 2 activates the folio (dirty after the unmap): one reclaim step fewer.
    redirty.extend_from_slice(&sched[5..sched.len() - 1]);
    let r = replay(&c, &redirty).unwrap();
    assert!(r.violation.is_none(), "{:#?}", r.steps);
    assert!(matches!(
        r.steps[5].event,
        KernelStep::Store {
            via: StoreVia::WpFault,
            ..
        }
    ));
    assert!(!r
        .steps
        .iter()
        .any(|s| s.event == KernelStep::FreeUnrefFolios { folios: vec![0] }));
}

/// What the checker finds on 6.18 itself: reclaim unmaps a dirty file folio with its TLB
/// flush deferred, activates it and unlocks it (the flush waits for the end of
/// shrink_folio_list); the flusher's page_mkclean finds no PTE left to flush, snapshots the
/// folio and clears PG_dirty; a store through the still-cached writable entry lands after
/// the snapshot in a folio that is now clean.
#[test]
fn deferred_unmap_flush_races_the_flusher_on_6_18() {
    for arch in [Arch::X86, Arch::Arm64] {
        let c = file_scope("6.18", arch);
        let r = check(&c).unwrap();
        assert_eq!(r.verdict, Verdict::Counterexample, "{r}");
        let cx = r.counterexample.as_ref().unwrap();
        assert_eq!(cx.steps.len(), 8, "{r}");
        let pos = |f: &str| cx.steps.iter().position(|s| s.function == f).unwrap();
        let unmap = pos("try_to_unmap_one");
        assert!(matches!(
            cx.steps[unmap].event,
            KernelStep::TryToUnmapOne {
                pte_dirty: true,
                deferred: true,
                ..
            }
        ));
        let mk = pos("folio_clear_dirty_for_io");
        assert_eq!(
            cx.steps[mk].event,
            KernelStep::FolioClearDirtyForIo {
                folio: 0,
                pages: vec![]
            },
            "{r}"
        );
        let hit = cx
            .steps
            .iter()
            .position(|s| s.function == "store (TLB hit)" && s.detail.contains("CLEARED"))
            .expect("a store through the stale entry");
        assert!(
            unmap < mk && mk < hit && hit < pos("try_to_unmap_flush"),
            "{r}"
        );
        assert!(matches!(
            cx.violation,
            Violation::LatentLostWrite { page: 0, folio: 0 }
        ));
    }
}

/// A hypothetical fix passes where 6.18 loses the write: x86 at 3 CPUs, arm64 (7.0) at 4.
fn closes_the_flusher_race(patch: &str, arm64_min_states: u64) {
    passes(&file_scope(&format!("6.18+{patch}"), Arch::X86), 500_000);
    let mut c = file_scope(&format!("7.0+{patch}"), Arch::Arm64);
    c.cpus = 4;
    passes(&c, arm64_min_states);
}

/// The hypothetical fix: a `try_to_unmap_flush_dirty` before the dirty file folio is activated
/// (and unlocked) leaves no writable translation for the flusher's writeback to miss.
#[test]
fn flush_dirty_before_activate_closes_the_flusher_race() {
    closes_the_flusher_race("flush-dirty-before-activate", 100_000);
}

/// The other hypothetical fix: the activated dirty file folio stays locked until the batch's
/// try_to_unmap_flush, so the flusher (and a fault) waits for the flush instead of reclaim
/// flushing early; no extra flush, and no writable translation left for writeback to miss.
#[test]
fn unlock_dirty_after_flush_closes_the_flusher_race() {
    closes_the_flusher_race("unlock-dirty-after-flush", 90_000);
}
