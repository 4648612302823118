//! Replaying a counterexample in the simulator: the checker's schedule, stage by
//! stage, through `reclaimlab_sim::replay`, which runs the simulator's own `try_to_unmap`,
//! `pageout`, flush and free functions and user stores, with the simulator's lost-write oracle
//! as the judge. A counterexample the simulator also loses data on is a real lost write in
//! that model too, not an artefact of the checker's abstraction.

use crate::model::{Arch, FolioKind, KernelStep, Model, StoreVia};
use crate::{CheckConfig, Counterexample};
use reclaimlab_sim::config::Policy;
use reclaimlab_sim::mm::memory::Access;
use reclaimlab_sim::replay::{Machine, Step};
use serde::Serialize;

/// What the simulator made of a counterexample.
#[derive(Clone, Debug, Serialize)]
pub struct SimReplay {
    /// Why the schedule could not be replayed (then nothing else is set).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_replayed: Option<String>,
    /// The simulator's oracle found a lost or use-after-free write.
    pub confirmed: bool,
    /// Its findings, as text.
    pub findings: Vec<String>,
    /// What each step did in the simulator.
    pub log: Vec<String>,
}

/// Translate the checker's steps into the simulator's. Layouts the simulator cannot build
/// (shared file folios, several mms, arm64 TLBI steps) are refused with the reason.
pub fn to_sim_steps(model: &Model, cx: &Counterexample) -> Result<Vec<Step>, String> {
    if model.arch != Arch::X86 {
        return Err("the simulator replays x86 schedules only".into());
    }
    if model.mms != 1 || model.folios.iter().any(|f| f.kind != FolioKind::Anon) {
        return Err(
            "the simulator maps each folio in one mm: replay needs an anon-only scope (--pages N with no file pages, e.g. --pages 1 --cpus 2)"
                .into(),
        );
    }
    let mut out = Vec::new();
    for t in &cx.steps {
        let s = match &t.event {
            KernelStep::FolioTrylock { folio, alloc_swap } => Step::FolioTrylock {
                folio: *folio as usize,
                alloc_swap: *alloc_swap,
            },
            KernelStep::TryToUnmapOne { folio, .. } => Step::TryToUnmap {
                folio: *folio as usize,
            },
            KernelStep::TryToUnmapFlushDirty { .. } => Step::TryToUnmapFlushDirty,
            KernelStep::Pageout {
                folio,
                written: true,
            } => Step::Pageout {
                folio: *folio as usize,
            },
            KernelStep::RemoveMapping {
                folio,
                removed: true,
            } => Step::RemoveMapping {
                folio: *folio as usize,
            },
            KernelStep::TryToUnmapFlush { .. } => Step::TryToUnmapFlush,
            KernelStep::FreeUnrefFolios { .. } => Step::FreeUnrefFolios,
            KernelStep::Store { cpu, page, via, .. } => Step::Store {
                cpu: *cpu as usize,
                page: *page as u64,
                expect: Some(match via {
                    StoreVia::TlbHit => Access::TlbHit,
                    StoreVia::PageWalk => Access::Walk,
                    StoreVia::Fault => Access::Fault,
                    StoreVia::WpFault => {
                        return Err(format!(
                            "step {}: a write-protect fault on a file folio has no simulator counterpart",
                            t.step
                        ))
                    }
                }),
            },
            KernelStep::EnterLazyTlb { cpu } => Step::EnterLazyTlb { cpu: *cpu as usize },
            KernelStep::SwitchMm { cpu, .. } => Step::SwitchMm { cpu: *cpu as usize },
            other => {
                return Err(format!(
                    "step {}: {other:?} has no simulator counterpart",
                    t.step
                ))
            }
        };
        out.push(s);
    }
    Ok(out)
}

/// Replay a counterexample in the simulator; a schedule it cannot replay says why.
pub fn replay_in_sim(cfg: &CheckConfig, cx: &Counterexample) -> SimReplay {
    try_replay(cfg, cx).unwrap_or_else(|e| SimReplay {
        not_replayed: Some(e),
        confirmed: false,
        findings: Vec::new(),
        log: Vec::new(),
    })
}

fn try_replay(cfg: &CheckConfig, cx: &Counterexample) -> Result<SimReplay, String> {
    let model = cfg.model()?;
    let steps = to_sim_steps(&model, cx)?;
    let policy = Policy::from_kernel_policy(&cfg.policy);
    let m = Machine::anon(policy, model.cpus as usize, model.pages as u64);
    let out = m.run(&steps)?;
    Ok(SimReplay {
        not_replayed: None,
        confirmed: !out.findings.is_empty(),
        findings: out.findings.iter().map(|f| f.to_string()).collect(),
        log: out.log,
    })
}
