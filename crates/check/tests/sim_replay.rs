//! Counterexamples replayed in the simulator: the checker's schedule run through the
//! simulator's own reclaim functions must lose the same write, and the same interleaving under
//! a safe policy must not.

use reclaimlab_check::sim_replay::{replay_in_sim, to_sim_steps};
use reclaimlab_check::{check, CheckConfig, Verdict};
use reclaimlab_sim::config::{Patch, Policy};
use reclaimlab_sim::oracle::Finding;
use reclaimlab_sim::replay::{Machine, Step};

fn cfg(policy: &str, cpus: u8, pages: u8) -> CheckConfig {
    let mut c = CheckConfig::new(policy).unwrap();
    c.cpus = cpus;
    c.pages = pages;
    c.file_pages = Some(0);
    c
}

#[test]
fn unsafe_counterexample_is_a_lost_write_in_the_simulator() {
    for (cpus, pages) in [(2, 1), (3, 2)] {
        let c = cfg("6.18+unsafe-defer-dirty-flush", cpus, pages);
        let r = check(&c).unwrap();
        assert_eq!(
            r.verdict,
            Verdict::Counterexample,
            "{cpus} CPUs {pages} pages"
        );
        let cx = r.counterexample.as_ref().unwrap();
        let sim = replay_in_sim(&c, cx);
        assert_eq!(sim.not_replayed, None);
        assert!(
            sim.confirmed,
            "simulator did not lose the write: {:#?}",
            sim.log
        );
        assert!(
            sim.findings[0].starts_with("LOST WRITE"),
            "{:?}",
            sim.findings
        );
    }
}

#[test]
fn same_interleaving_under_6_18_loses_nothing_in_the_simulator() {
    let c = cfg("6.18+unsafe-defer-dirty-flush", 2, 1);
    let r = check(&c).unwrap();
    let cx = r.counterexample.unwrap();
    let model = c.model().unwrap();
    // The same schedule with the stores' expected outcomes dropped: under 6.18 the dirty
    // flush before pageout turns the late store into a fault instead of a TLB hit.
    let steps: Vec<Step> = to_sim_steps(&model, &cx)
        .unwrap()
        .into_iter()
        .map(|s| match s {
            Step::Store { cpu, page, .. } => Step::Store {
                cpu,
                page,
                expect: None,
            },
            s => s,
        })
        .collect();
    let safe = Machine::anon(Policy::linux_6_18(), 2, 1)
        .run(&steps)
        .unwrap();
    assert!(safe.findings.is_empty(), "{:?}", safe.findings);
    let mut unsafe_policy = Policy::linux_6_18();
    unsafe_policy.set(Patch::UnsafeDeferDirtyFlush, true);
    let lost = Machine::anon(unsafe_policy, 2, 1).run(&steps).unwrap();
    assert!(matches!(
        lost.findings[..],
        [Finding::LostWrite { page: 0, .. }]
    ));
}

#[test]
fn store_after_the_batch_flush_faults_and_loses_nothing() {
    // Even the unsafe policy flushes before free_unref_folios: a store after the free
    // faults, reads the page back from swap, and nothing is lost.
    let mut unsafe_policy = Policy::linux_6_18();
    unsafe_policy.set(Patch::UnsafeDeferDirtyFlush, true);
    unsafe_policy.settings.free_batch = 31;
    let mut m = Machine::anon(unsafe_policy, 2, 1);
    let store = |expect| Step::Store {
        cpu: 1,
        page: 0,
        expect,
    };
    for s in [
        Step::FolioTrylock {
            folio: 0,
            alloc_swap: true,
        },
        store(None),
        Step::TryToUnmap { folio: 0 },
        Step::Pageout { folio: 0 },
        Step::RemoveMapping { folio: 0 },
    ] {
        m.step(&s).unwrap();
    }
    // free_folio_batch flushes first, as the kernel does; the entry is gone afterwards.
    m.step(&Step::FreeUnrefFolios).unwrap();
    let after = m.step(&store(None)).unwrap();
    assert!(after.contains("Fault"), "{after}");
    assert!(m.k.oracle.findings.is_empty());
}

#[test]
fn oracle_classifies_a_store_into_a_freed_frame_as_use_after_free() {
    let mut m = Machine::anon(Policy::linux_6_18(), 2, 2);
    let pfn = m.folios[0];
    // A store by cpu1 "through a stale entry" for page 1 into page 0's frame: the frame holds
    // another page, so the store corrupts it.
    m.k.oracle_store(1, m.mm, 1, pfn, true);
    assert!(matches!(
        m.k.oracle.findings[..],
        [Finding::UseAfterFreeWrite { page: 1, .. }]
    ));
    // A stale store into the page's own, still allocated frame is not a finding by itself.
    let own = m.folios[1];
    m.k.oracle_store(1, m.mm, 1, own, true);
    assert_eq!(m.k.oracle.findings.len(), 1);
}
