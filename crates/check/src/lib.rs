//! `reclaimlab check`: an exhaustive small-scope safety checker for TLB-flush batching in page
//! reclaim. Can any CPU still store through a stale TLB entry to a page that reclaim has written
//! out and freed (a **lost write**) or to a freed frame (a **use-after-free write**)?
//!
//! The checker explores every interleaving of user stores, context switches and reclaim's steps
//! (`shrink_folio_list` for the chosen policy) breadth-first with a visited set, so it either
//! proves "no lost write within scope" or returns the shortest counterexample. See docs/check.md.
//!
//! Wiring `reclaimlab check [--policy P] [--arch A] [--cpus N] [--pages N] [--depth N] [--json]`:
//!
//! ```no_run
//! use reclaimlab_check::{check, Arch, CheckConfig};
//! # let (policy, arch, cpus, pages, depth, json) = ("6.18", None::<&str>, None::<u8>, None::<u8>, None::<u32>, false);
//! let mut cfg = CheckConfig::new(policy)?; // error text lists the valid presets and patches
//! if let Some(a) = arch { cfg.arch = Arch::parse(a)?; }
//! if let Some(n) = cpus { cfg.cpus = n; }
//! if let Some(n) = pages { cfg.pages = n; }
//! cfg.depth = depth;
//! let report = check(&cfg)?; // Err: invalid scope, with the flag named
//! if json { println!("{}", serde_json::to_string_pretty(&report).unwrap()); } else { print!("{report}"); }
//! std::process::exit(if report.passed() { 0 } else { 1 });
//! # Ok::<(), String>(())
//! ```

pub mod model;
mod search;
pub mod sim_replay;
mod visited;

pub use model::{
    Arch, Choice, Event, Folio, FolioKind, KernelStep, Model, Mutation, StoreVia, Violation,
};
pub use reclaimlab_core::policy::{KernelPolicy, Patch};

use serde::Serialize;
use std::fmt;
use std::time::Instant;

/// What to check and at which scope.
#[derive(Clone, Debug)]
pub struct CheckConfig {
    pub policy: KernelPolicy,
    pub arch: Arch,
    /// CPUs in all; CPU 0 runs reclaim (kswapd), the others run user tasks. 2..=4.
    pub cpus: u8,
    /// Base pages (= frames) in the folio list. 1..=8.
    pub pages: u8,
    /// Of those, pages in one shared file folio (the rest are order-0 anon folios).
    /// `None`: 2 when pages >= 3, else pages - 1.
    pub file_pages: Option<u8>,
    /// mms: 1 or 2 (mm 1 maps the file folio only). `None`: 2 when there is a file folio.
    pub mms: Option<u8>,
    /// Bound on schedule length (BFS levels); `None` explores until no new state appears.
    pub depth: Option<u32>,
    /// `shrink_folio_list` passes over the list (kept folios are tried again).
    pub passes: u8,
    /// Reclaim writes dirty file folios itself (`->writepage`, kswapd with PGDAT_DIRTY, as up
    /// to about 6.15) rather than only activating them for the flusher. Default true: the
    /// writing path is the one that needs the dirty flush.
    pub file_pageout: bool,
    /// Add user `mprotect(PROT_READ)` calls and their oracle (no store lands after one
    /// returns): the race `flush_tlb_batched_pending` closes. Off by default.
    pub mprotect: bool,
    /// x86 with INVLPGB and a kernel that uses it (6.15+; `--invlpgb`): reclaim's batched
    /// flush is a broadcast plus TLBSYNC. Off by default.
    pub invlpgb: bool,
    /// The writeback flusher and device as actors: clean file PTEs write-protected
    /// (writenotify), `page_mkclean` + PG_writeback + `folio_end_writeback`, reclaim keeping
    /// folios under writeback. Off by default (`--flusher`, which also sets `file_pageout =
    /// false`, as 6.18).
    pub flusher: bool,
    /// `free_folios` batch size (the kernel's 31).
    pub free_batch: u8,
    /// Seed 000's dirty batch size (31).
    pub dirty_batch: u8,
    /// Plant a deliberate bug (for mutation tests).
    pub mutation: Option<Mutation>,
    /// Give up (verdict `incomplete`) after this many distinct states.
    pub max_states: u64,
    /// Check the model's own consistency invariants on every state (tests; panics on a
    /// modelling error).
    pub check_model: bool,
}

/// Parse `PRESET[+PATCH...]` (e.g. `6.18+batch-dirty-flush`). The error lists the valid names.
pub fn parse_policy(spec: &str) -> Result<KernelPolicy, String> {
    KernelPolicy::parse(spec).map_err(|e| format!("{e}\n{}", policy_help()))
}

/// The names `parse_policy` accepts, one line each.
pub fn policy_help() -> String {
    let mut s = String::from("policy = PRESET[+PATCH...]\n  presets:");
    for preset in reclaimlab_core::policy::PRESETS {
        s += &format!("\n    {:<8} {}", preset.name, preset.summary);
    }
    s += "\n  patches:";
    for p in Patch::ALL {
        let note = if p.row().in_check {
            ""
        } else {
            " [no effect in check]"
        };
        s += &format!("\n    {:<26} {}{note}", p.name(), p.summary());
    }
    s
}

impl CheckConfig {
    /// Defaults: x86, 3 CPUs (reclaim + 2 user), 2 pages (an anon page and a one-page file
    /// folio shared by 2 mms), one pass, unbounded depth: ~1.3 M states, a few seconds.
    /// For a file *large* folio (seed 001) use `pages = 3` with `cpus = 2`, or
    /// `file_pages = Some(2)`.
    pub fn new(policy_spec: &str) -> Result<CheckConfig, String> {
        Ok(CheckConfig {
            policy: parse_policy(policy_spec)?,
            arch: Arch::X86,
            cpus: 3,
            pages: 2,
            file_pages: None,
            mms: None,
            depth: None,
            passes: 1,
            file_pageout: true,
            mprotect: false,
            invlpgb: false,
            flusher: false,
            free_batch: 31,
            dirty_batch: 31,
            mutation: None,
            max_states: 10_000_000,
            check_model: false,
        })
    }

    /// Validate the scope and build the model.
    pub fn model(&self) -> Result<Model, String> {
        self.policy
            .check_arch(self.arch)
            .map_err(|e| format!("--arch {}: {e}", self.arch))?;
        if self.invlpgb && self.arch != Arch::X86 {
            return Err(
                "--invlpgb: INVLPGB is an x86 (AMD) instruction; arm64 broadcasts its TLBIs anyway"
                    .into(),
            );
        }
        if !(2..=model::MAX_CPUS as u8).contains(&self.cpus) {
            return Err(format!(
                "--cpus {}: must be 2..={} (CPU 0 runs reclaim)",
                self.cpus,
                model::MAX_CPUS
            ));
        }
        if !(1..=model::MAX_PAGES as u8).contains(&self.pages) {
            return Err(format!(
                "--pages {}: must be 1..={}",
                self.pages,
                model::MAX_PAGES
            ));
        }
        let file = self
            .file_pages
            .unwrap_or(if self.pages >= 3 { 2 } else { self.pages - 1 });
        if file > self.pages {
            return Err(format!("file pages {file} exceed --pages {}", self.pages));
        }
        let mms = self.mms.unwrap_or(if file > 0 { 2 } else { 1 });
        if !(1..=model::MAX_MMS as u8).contains(&mms) {
            return Err(format!("mms {mms}: must be 1 or 2"));
        }
        if self.passes == 0 || self.free_batch == 0 || self.dirty_batch == 0 {
            return Err("passes and batch sizes must be at least 1".into());
        }
        let anon = self.pages - file;
        let mut folios = Vec::new();
        let mut page_folio = [0u8; model::MAX_PAGES];
        for p in 0..anon {
            page_folio[p as usize] = folios.len() as u8;
            folios.push(Folio {
                first: p,
                nr: 1,
                kind: FolioKind::Anon,
            });
        }
        if file > 0 {
            for p in anon..self.pages {
                page_folio[p as usize] = folios.len() as u8;
            }
            folios.push(Folio {
                first: anon,
                nr: file,
                kind: FolioKind::File,
            });
        }
        let all = ((1u16 << self.pages) - 1) as u8;
        let file_mask = all & !(((1u16 << anon) - 1) as u8);
        let mut mapped = [0u8; model::MAX_MMS];
        mapped[0] = all;
        if mms > 1 {
            mapped[1] = file_mask;
        }
        Ok(Model {
            arch: self.arch,
            cpus: self.cpus,
            mms,
            pages: self.pages,
            folios,
            page_folio,
            mapped,
            patches: self.policy.in_force(),
            mutation: self.mutation,
            free_batch: self.free_batch,
            dirty_batch: self.dirty_batch,
            passes: self.passes,
            file_pageout: self.file_pageout,
            mprotect: self.mprotect,
            // 4.2 predates the series: it ignores the CPU's INVLPGB.
            invlpgb: self.invlpgb && self.policy.uses_invlpgb(),
            flusher: self.flusher,
            describe: true,
        })
    }

    fn notes(&self) -> Vec<String> {
        let mut n = Vec::new();
        for p in self.policy.patches.iter() {
            if !p.row().in_check {
                n.push(format!(
                    "patch {} is accepted but has no effect in this model (it changes neither which PTEs are cleared nor when flushes happen in shrink_folio_list)",
                    p.name()
                ));
            }
        }
        if self.invlpgb && !self.policy.uses_invlpgb() {
            n.push(format!(
                "--invlpgb has no effect: preset {} predates the INVLPGB series (6.15)",
                self.policy.preset
            ));
        }
        if self.invlpgb && self.policy.uses_invlpgb() {
            n.push("no mm gets a global ASID in this scope (it needs more than 3 CPUs running it at once), so only reclaim's batched flush is a broadcast".into());
        }
        if self.mutation == Some(Mutation::InvlpgbNoTlbsync) && !self.invlpgb {
            n.push("mutation invlpgb-no-tlbsync has no effect without --invlpgb".into());
        }
        if self.mutation == Some(Mutation::MkcleanNoFlush) && !self.flusher {
            n.push("mutation mkclean-no-flush has no effect without --flusher".into());
        }
        if let Some(m) = self.mutation {
            n.push(format!("MUTATION {} planted (deliberate bug)", m.name()));
        }
        n
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Every reachable state (within the depth bound, if any) was explored; the oracle never fired.
    NoLostWrite,
    /// The oracle fired; see `counterexample`.
    Counterexample,
    /// `max_states` was hit before the search finished: nothing is proved.
    Incomplete,
}

#[derive(Clone, Debug, Serialize)]
pub struct Scope {
    pub arch: Arch,
    pub cpus: u8,
    pub user_cpus: u8,
    pub mms: u8,
    pub pages: u8,
    pub folios: Vec<Folio>,
    pub depth: Option<u32>,
    pub passes: u8,
    pub file_pageout: bool,
    pub mprotect: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub invlpgb: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub flusher: bool,
    pub free_batch: u8,
    pub dirty_batch: u8,
}

/// One line of a counterexample.
#[derive(Clone, Debug, Serialize)]
pub struct TraceStep {
    /// 1-based position in the schedule.
    pub step: usize,
    /// `reclaim(cpu0)` or `cpuN`.
    pub actor: String,
    /// The explorer's choice (replayable with [`replay`]).
    pub choice: Choice,
    /// The same step in kernel terms with its operands (for replay in the simulator).
    pub event: KernelStep,
    /// Kernel function (or hardware action) the step mirrors.
    pub function: &'static str,
    pub detail: String,
    /// Pending flush state and cached writable+dirty TLB entries after the step.
    pub pending: String,
    /// Set on the step where the oracle fires.
    pub violation: Option<Violation>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Counterexample {
    pub violation: Violation,
    /// The schedule, replayable with [`replay`].
    pub choices: Vec<Choice>,
    pub steps: Vec<TraceStep>,
}

#[derive(Clone, Debug, Serialize)]
pub struct CheckReport {
    pub policy: String,
    pub mutation: Option<Mutation>,
    pub scope: Scope,
    pub verdict: Verdict,
    /// Distinct states explored (after state hashing).
    pub states: u64,
    /// Transitions generated (including those into already-seen states).
    pub transitions: u64,
    /// Length of the longest shortest-schedule reached (BFS depth).
    pub depth_reached: u32,
    /// True when the search ran out of new states (not cut by the depth bound).
    pub exhausted: bool,
    pub seconds: f64,
    pub counterexample: Option<Counterexample>,
    /// The counterexample replayed through the simulator's own reclaim functions,
    /// or why it could not be.
    pub sim_replay: Option<sim_replay::SimReplay>,
    pub notes: Vec<String>,
}

impl CheckReport {
    /// True when nothing was found and the search completed (the CLI's exit status 0).
    pub fn passed(&self) -> bool {
        self.verdict == Verdict::NoLostWrite
    }
}

/// Run the exhaustive search.
pub fn check(cfg: &CheckConfig) -> Result<CheckReport, String> {
    let mut model = cfg.model()?;
    // The search needs verdicts only; a counterexample's steps are described when replayed.
    model.describe = false;
    let t0 = Instant::now();
    let out = search::bfs(&model, cfg.depth, cfg.max_states, cfg.check_model);
    let seconds = t0.elapsed().as_secs_f64();
    let (verdict, counterexample) = match out.violation {
        Some((choices, _)) => {
            let r = replay(cfg, &choices)?;
            let (_, v) = r
                .violation
                .clone()
                .ok_or("internal: counterexample does not replay")?;
            (
                Verdict::Counterexample,
                Some(Counterexample {
                    violation: v,
                    choices,
                    steps: r.steps,
                }),
            )
        }
        None if out.truncated => (Verdict::Incomplete, None),
        None => (Verdict::NoLostWrite, None),
    };
    Ok(CheckReport {
        policy: cfg.policy.to_string(),
        mutation: cfg.mutation,
        scope: Scope {
            arch: cfg.arch,
            cpus: model.cpus,
            user_cpus: model.cpus - 1,
            mms: model.mms,
            pages: model.pages,
            folios: model.folios.clone(),
            depth: cfg.depth,
            passes: model.passes,
            file_pageout: model.file_pageout,
            mprotect: model.mprotect,
            invlpgb: model.invlpgb,
            flusher: model.flusher,
            free_batch: model.free_batch,
            dirty_batch: model.dirty_batch,
        },
        verdict,
        states: out.states,
        transitions: out.transitions,
        depth_reached: out.depth_reached,
        exhausted: out.exhausted,
        seconds,
        sim_replay: counterexample
            .as_ref()
            .map(|cx| sim_replay::replay_in_sim(cfg, cx)),
        counterexample,
        notes: cfg.notes(),
    })
}

/// The result of replaying a schedule in the model.
#[derive(Clone, Debug, Serialize)]
pub struct Replay {
    pub steps: Vec<TraceStep>,
    /// The first step (0-based index) where the oracle fired, and what it found.
    pub violation: Option<(usize, Violation)>,
}

/// Replay `choices` from the initial state step by step, running the oracle at every step.
/// Stops at the first violation. Errors if a choice is not enabled where it is taken.
pub fn replay(cfg: &CheckConfig, choices: &[Choice]) -> Result<Replay, String> {
    let model = cfg.model()?;
    let mut s = model.initial();
    let mut steps = Vec::new();
    let mut enabled = Vec::new();
    for (i, &c) in choices.iter().enumerate() {
        model.choices(&s, &mut enabled);
        if !enabled.contains(&c) {
            return Err(format!("step {}: {c:?} is not enabled", i + 1));
        }
        let before = s.clone();
        let (ev, viol) = model.step(&mut s, c);
        steps.push(TraceStep {
            event: model.kernel_step(&before, &s, c),
            step: i + 1,
            actor: match c {
                Choice::Reclaim => "reclaim(cpu0)".to_string(),
                Choice::Store { cpu, .. }
                | Choice::SwitchToIdle { cpu }
                | Choice::SwitchMm { cpu, .. }
                | Choice::TrimCpumask { cpu, .. }
                | Choice::TlbiComplete { cpu, .. }
                | Choice::Mprotect { cpu, .. } => format!("cpu{cpu}"),
                Choice::Flusher { .. } => "flusher".to_string(),
                Choice::EndWriteback { .. } => "device".to_string(),
            },
            choice: c,
            function: ev.function,
            detail: ev.detail,
            pending: model.pending(&s),
            violation: viol.clone(),
        });
        if let Some(v) = viol {
            return Ok(Replay {
                steps,
                violation: Some((i, v)),
            });
        }
    }
    Ok(Replay {
        steps,
        violation: None,
    })
}

impl fmt::Display for CheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sc = &self.scope;
        let folios: Vec<String> = sc
            .folios
            .iter()
            .enumerate()
            .map(|(i, fo)| {
                format!(
                    "f{i}={}{}",
                    match fo.kind {
                        FolioKind::Anon => "anon",
                        FolioKind::File => "file",
                    },
                    if fo.nr > 1 {
                        format!("[p{}-p{}]", fo.first, fo.first + fo.nr - 1)
                    } else {
                        format!("[p{}]", fo.first)
                    }
                )
            })
            .collect();
        writeln!(
            f,
            "check {} on {}: {} CPUs (cpu0 reclaims, {} run user tasks), {} mm(s), {} pages ({}), {} pass(es), dirty file folios {}{}",
            self.policy,
            sc.arch.name(),
            sc.cpus,
            sc.user_cpus,
            sc.mms,
            sc.pages,
            folios.join(" "),
            sc.passes,
            match (sc.file_pageout, sc.flusher) {
                (true, false) => "written by reclaim",
                (false, false) => "activated",
                (true, true) => "written by reclaim or the flusher (PG_writeback)",
                (false, true) => "activated, written by the flusher (PG_writeback)",
            },
            match (sc.mprotect, sc.depth) {
                (true, Some(d)) => format!(", mprotect actor, depth <= {d}"),
                (true, None) => ", mprotect actor".to_string(),
                (false, Some(d)) => format!(", depth <= {d}"),
                (false, None) => String::new(),
            }
        )?;
        for n in &self.notes {
            writeln!(f, "note: {n}")?;
        }
        writeln!(
            f,
            "explored {} distinct states ({} transitions, depth {}{}) in {:.2} s",
            self.states,
            self.transitions,
            self.depth_reached,
            if self.exhausted { ", exhausted" } else { "" },
            self.seconds
        )?;
        match (&self.verdict, &self.counterexample) {
            (Verdict::NoLostWrite, _) => {
                write!(f, "verdict: no lost write within scope")?;
                if sc.mprotect {
                    write!(f, " (and no write after mprotect)")?;
                }
                if !self.exhausted {
                    write!(f, " (cut at depth {})", self.depth_reached)?;
                }
                writeln!(f)
            }
            (Verdict::Incomplete, _) => writeln!(
                f,
                "verdict: INCOMPLETE (state limit reached; nothing proved)"
            ),
            (Verdict::Counterexample, Some(cx)) => {
                writeln!(f, "verdict: {}", cx.violation)?;
                writeln!(f, "shortest counterexample ({} steps):", cx.steps.len())?;
                for s in &cx.steps {
                    writeln!(
                        f,
                        "{:>3}. {:<13} {:<28} {}",
                        s.step, s.actor, s.function, s.detail
                    )?;
                    writeln!(f, "     {:<13} pending: {}", "", s.pending)?;
                    if let Some(v) = &s.violation {
                        writeln!(f, "     ==> {v}")?;
                    }
                }
                match &self.sim_replay {
                    Some(r) if r.not_replayed.is_some() => writeln!(
                        f,
                        "not replayed in the simulator: {}",
                        r.not_replayed.as_deref().unwrap_or_default()
                    ),
                    Some(r) if r.confirmed => {
                        writeln!(f, "replayed in the simulator: confirmed")?;
                        for x in &r.findings {
                            writeln!(f, "     ==> {x}")?;
                        }
                        Ok(())
                    }
                    Some(r) => writeln!(
                        f,
                        "replayed in the simulator: NOT confirmed (the simulator's oracle found nothing; steps: {})",
                        r.log.join("; ")
                    ),
                    None => Ok(()),
                }
            }
            (Verdict::Counterexample, None) => writeln!(f, "verdict: counterexample (missing)"),
        }
    }
}
