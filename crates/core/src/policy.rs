//! Kernel presets and the seed series as named policies: `PRESET[+PATCH...]`.
//!
//! One registry for every consumer (sim, check, CLI) so that `6.18+batch-dirty-flush` means the
//! same thing everywhere.

use serde::Serialize;
use std::collections::BTreeSet;
use std::fmt;

/// A switchable change to the reclaim path, named after the series that made it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Patch {
    /// Seed 003 (Mel Gorman, 2015; merged in 4.3): defer the unmap flush into a per-task batch.
    TlbBatch,
    /// Seed 000 (Zhang Peng, 2026): one try_to_unmap_flush_dirty per batch of dirty folios.
    BatchDirtyFlush,
    /// Seed 001 (Baolin Wang, ~7.0): unmap a file large folio's PTE run in one step.
    FileLargeFolioUnmap,
    /// Seed 004 (Baolin Wang, ~7.0): clear a large folio's young bits with one flush.
    ClearFlushYoungPtes,
    /// Multi-gen LRU (seed 002's base).
    Mglru,
    /// Seed 002 (Kairui Song, ~7.2): dirty/writeback folios reactivated through shrink_folio_list.
    MglruDirtyReactivate,
    /// Deliberately unsafe: defer the flush of writable PTEs past pageout (the 2015 RFC's first form).
    UnsafeDeferDirtyFlush,
    /// LUF, lazy unmap flush (Byungchul Park, SK hynix, RFC 2024-2025, not merged): the flush
    /// of a folio whose every mapping was read-only is deferred until the folio is allocated
    /// again.
    Luf,
    /// Deliberately unsafe: LUF that also defers writable mappings (for `check`).
    LufWritable,
}

impl Patch {
    pub const ALL: [Patch; 9] = [
        Patch::TlbBatch,
        Patch::BatchDirtyFlush,
        Patch::FileLargeFolioUnmap,
        Patch::ClearFlushYoungPtes,
        Patch::Mglru,
        Patch::MglruDirtyReactivate,
        Patch::UnsafeDeferDirtyFlush,
        Patch::Luf,
        Patch::LufWritable,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Patch::TlbBatch => "tlb-batch",
            Patch::BatchDirtyFlush => "batch-dirty-flush",
            Patch::FileLargeFolioUnmap => "file-large-folio-unmap",
            Patch::ClearFlushYoungPtes => "clear-flush-young-ptes",
            Patch::Mglru => "mglru",
            Patch::MglruDirtyReactivate => "mglru-dirty-reactivate",
            Patch::UnsafeDeferDirtyFlush => "unsafe-defer-dirty-flush",
            Patch::Luf => "luf",
            Patch::LufWritable => "luf-writable",
        }
    }

    /// One line for `reclaimlab policies`.
    pub fn summary(self) -> &'static str {
        match self {
            Patch::TlbBatch => {
                "seed 003 (2015, in 4.3): batch unmap TLB flushes, one IPI for many pages"
            }
            Patch::BatchDirtyFlush => {
                "seed 000 (2026): one flush for a batch of dirty folios before their pageouts"
            }
            Patch::FileLargeFolioUnmap => {
                "seed 001 (~7.0): clear a file large folio's PTEs in one step"
            }
            Patch::ClearFlushYoungPtes => {
                "seed 004 (~7.0): batch young-bit clearing with one flush (arm64 contpte)"
            }
            Patch::Mglru => "multi-gen LRU (the base of seed 002)",
            Patch::MglruDirtyReactivate => {
                "seed 002 (~7.2): MGLRU dirty folios reactivated via shrink_folio_list"
            }
            Patch::UnsafeDeferDirtyFlush => {
                "UNSAFE, for `check`: defer writable-PTE flushes past pageout"
            }
            Patch::Luf => {
                "LUF (Byungchul Park, RFC 2024-2025, not merged): read-only unmaps flushed at reallocation"
            }
            Patch::LufWritable => "UNSAFE, for `check`: LUF that also defers writable mappings",
        }
    }

    pub fn parse(s: &str) -> Result<Patch, String> {
        Patch::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Patch::ALL.iter().map(|p| p.name()).collect();
                format!(
                    "unknown patch {}: one of {}",
                    crate::units::clip(s),
                    names.join(", ")
                )
            })
    }
}

/// Kernel presets: which patches a released kernel already carries.
pub const PRESETS: &[(&str, &[Patch], &str)] = &[
    (
        "4.2",
        &[],
        "before batched unmap flushing: every cleared PTE is flushed at once",
    ),
    (
        "6.18",
        &[Patch::TlbBatch],
        "this machine's kernel: batched unmap flush, per-folio dirty flush",
    ),
    (
        "7.0",
        &[
            Patch::TlbBatch,
            Patch::FileLargeFolioUnmap,
            Patch::ClearFlushYoungPtes,
        ],
        "adds batched file large folio unmap and young-bit clearing (seeds 001, 004)",
    ),
];

/// A preset plus patches: what the simulator and the checker model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KernelPolicy {
    pub preset: String,
    /// Every patch in force (the preset's and the added ones).
    pub patches: BTreeSet<Patch>,
    /// The patches added on top of the preset, in the order given.
    pub added: Vec<Patch>,
}

impl KernelPolicy {
    pub fn new(preset: &str, added: &[String]) -> Result<KernelPolicy, String> {
        let (_, base, _) = PRESETS
            .iter()
            .find(|(n, _, _)| *n == preset)
            .ok_or_else(|| {
                let names: Vec<&str> = PRESETS.iter().map(|p| p.0).collect();
                format!(
                    "unknown kernel preset {}: one of {}",
                    crate::units::clip(preset),
                    names.join(", ")
                )
            })?;
        let mut patches: BTreeSet<Patch> = base.iter().copied().collect();
        let mut list = Vec::new();
        for a in added {
            let p = Patch::parse(a)?;
            patches.insert(p);
            list.push(p);
        }
        Ok(KernelPolicy {
            preset: preset.to_string(),
            patches,
            added: list,
        })
    }

    /// Parse `PRESET[+PATCH...]`, e.g. `6.18+batch-dirty-flush`.
    pub fn parse(spec: &str) -> Result<KernelPolicy, String> {
        let mut parts = spec.split('+').map(str::trim);
        let preset = parts.next().unwrap_or("");
        let added: Vec<String> = parts.map(str::to_string).collect();
        KernelPolicy::new(preset, &added)
    }

    pub fn has(&self, p: Patch) -> bool {
        self.patches.contains(&p)
    }

    /// Whether the preset's kernel uses INVLPGB when the CPU has it (`machine.invlpgb`):
    /// Rik van Riel's broadcast TLB invalidation series was merged in 6.15 (tip x86/core,
    /// March 2025), so 6.18 and 7.0 carry it and 4.2 does not.
    pub fn uses_invlpgb(&self) -> bool {
        self.preset != "4.2"
    }

    /// Either form of LUF.
    pub fn has_luf(&self) -> bool {
        self.has(Patch::Luf) || self.has(Patch::LufWritable)
    }

    /// The `--set`s that make a scenario model this policy; given after the others, they win
    /// over the scenario's own kernel keys (what `compare` and `sweep` simulate).
    pub fn scenario_sets(&self) -> [String; 2] {
        let names: Vec<String> = self
            .added
            .iter()
            .map(|p| format!("{:?}", p.name()))
            .collect();
        [
            format!("kernel.preset={:?}", self.preset),
            format!("kernel.patches=[{}]", names.join(",")),
        ]
    }
}

impl fmt::Display for KernelPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.preset)?;
        for p in &self.added {
            write!(f, "+{}", p.name())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_specs() {
        let k = KernelPolicy::parse("6.18+batch-dirty-flush").unwrap();
        assert!(k.has(Patch::TlbBatch) && k.has(Patch::BatchDirtyFlush));
        assert!(!k.has(Patch::FileLargeFolioUnmap));
        assert_eq!(k.to_string(), "6.18+batch-dirty-flush");
        assert_eq!(
            k.scenario_sets(),
            [
                "kernel.preset=\"6.18\"",
                "kernel.patches=[\"batch-dirty-flush\"]"
            ]
        );
        assert!(!KernelPolicy::parse("4.2").unwrap().has(Patch::TlbBatch));
        assert!(KernelPolicy::parse("7.0")
            .unwrap()
            .has(Patch::ClearFlushYoungPtes));
        let e = KernelPolicy::parse("6.18+nope").unwrap_err();
        assert!(
            e.contains("unknown patch \"nope\"") && e.contains("batch-dirty-flush"),
            "{e}"
        );
        let l = KernelPolicy::parse("6.18+luf").unwrap();
        assert!(l.has_luf() && !l.has(Patch::LufWritable) && l.uses_invlpgb());
        assert!(KernelPolicy::parse("6.18+luf-writable").unwrap().has_luf());
        assert!(!KernelPolicy::parse("4.2").unwrap().uses_invlpgb());
        assert!(KernelPolicy::parse("5.0")
            .unwrap_err()
            .contains("unknown kernel preset"));
    }
}
