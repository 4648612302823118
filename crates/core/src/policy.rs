//! Kernel presets and the seed series as named policies: `PRESET[+PATCH...]`.
//!
//! One registry for every consumer (sim, check, CLI, Python) so that `6.18+batch-dirty-flush`
//! means the same thing everywhere. The rows are data in `policy/table.rs`; this module reads
//! them: names, implied patches, arch limits and the presets' settings. The simulator and the
//! checker ask [`KernelPolicy::has`] (or their own `has` over [`KernelPolicy::in_force`]) at
//! each decision point.

use crate::arch::Arch;
use serde::{Serialize, Serializer};
use std::fmt;

/// Defines `enum Patch` and `PATCHES` (its rows, in declaration order) from one list, so that a
/// patch cannot exist without its row.
macro_rules! patch_table {
    ($($(#[$doc:meta])* $variant:ident { $($field:ident: $value:expr),* $(,)? }),* $(,)?) => {
        /// A switchable change to the reclaim path, named after the series that made it.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Patch {
            $($(#[$doc])* $variant,)*
        }

        impl Patch {
            /// Every patch, in table order.
            pub const ALL: &'static [Patch] = &[$(Patch::$variant,)*];
        }

        /// Every patch's row, indexed by `Patch as usize`.
        pub const PATCHES: &[PatchRow] = &[
            $(PatchRow { patch: Patch::$variant, $($field: $value),* },)*
        ];
    };
}

mod table;
pub use table::{Patch, PATCHES, PRESETS};

/// The LKML series (a seed benchmark of this project) a patch comes from.
#[derive(Clone, Copy, Debug)]
pub struct Seed {
    /// The seed's number (`000`..`004`).
    pub number: &'static str,
    /// When the series was posted, or the release that merged it.
    pub when: &'static str,
}

/// One patch: everything the tool knows about it besides its decision points.
#[derive(Clone, Copy, Debug)]
pub struct PatchRow {
    pub patch: Patch,
    /// The one name (`--patch`, `PRESET+NAME`, `kernel.patches`, results).
    pub name: &'static str,
    pub seed: Option<Seed>,
    /// One line for `reclaimlab policies` (after the seed, when there is one).
    pub summary: &'static str,
    /// Patches this one builds on: in force whenever it is.
    pub implies: &'static [Patch],
    /// The architectures whose kernel has the changed code; a scenario or a check on another
    /// is refused.
    pub arches: &'static [Arch],
    /// `check`'s small-scope model has the decision point; otherwise `check` accepts the
    /// patch with a note that it has no effect there.
    pub in_check: bool,
}

/// What a release does at the decision points that are not patches of the seed series:
/// constants and behaviours that changed between releases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// How many folios shrink_folio_list frees at once (after a try_to_unmap_flush).
    pub free_batch: usize,
    /// x86 tlb_single_page_flush_ceiling: a longer range is flushed whole.
    pub single_page_flush_ceiling: u64,
    /// flush_tlb_range passes freed_tables = true (since 3ef938c35035).
    pub range_flush_freed_tables: bool,
    /// vm.watermark_scale_factor (10 since 4.6); 0 = the older rule low = min + min/4,
    /// high = min + min/2.
    pub watermark_scale_factor: u64,
    /// The kernel carries the INVLPGB series: it uses broadcast invalidation when the CPU has
    /// it (`machine.invlpgb`).
    pub uses_invlpgb: bool,
}

/// A released kernel: its patches and settings.
#[derive(Clone, Copy, Debug)]
pub struct Preset {
    pub name: &'static str,
    pub summary: &'static str,
    pub patches: &'static [Patch],
    pub settings: Settings,
}

impl Patch {
    pub fn row(self) -> &'static PatchRow {
        &PATCHES[self as usize]
    }

    pub fn name(self) -> &'static str {
        self.row().name
    }

    /// One line for `reclaimlab policies`.
    pub fn summary(self) -> String {
        let r = self.row();
        match r.seed {
            Some(s) => format!("seed {} ({}): {}", s.number, s.when, r.summary),
            None => r.summary.to_string(),
        }
    }

    /// The patch named `s`. Another spelling of a name (`file_large_folio_unmap`) is refused
    /// with the name to use.
    pub fn parse(s: &str) -> Result<Patch, String> {
        if let Some(r) = PATCHES.iter().find(|r| r.name == s) {
            return Ok(r.patch);
        }
        let spelled = s.trim().to_ascii_lowercase().replace('_', "-");
        if let Some(r) = PATCHES.iter().find(|r| r.name == spelled) {
            return Err(format!(
                "unknown patch {}: the name is {}",
                crate::units::clip(s),
                r.name
            ));
        }
        let names: Vec<&str> = PATCHES.iter().map(|r| r.name).collect();
        Err(format!(
            "unknown patch {}: one of {}",
            crate::units::clip(s),
            names.join(", ")
        ))
    }
}

impl Serialize for Patch {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// A set of patches (a bit per `Patch`): cheap to copy and to ask at a decision point.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PatchSet(u64);

impl PatchSet {
    pub fn has(self, p: Patch) -> bool {
        self.0 & (1 << p as u32) != 0
    }

    pub fn insert(&mut self, p: Patch) {
        self.0 |= 1 << p as u32;
    }

    pub fn remove(&mut self, p: Patch) {
        self.0 &= !(1 << p as u32);
    }

    /// The patches in the set, in table order.
    pub fn iter(self) -> impl Iterator<Item = Patch> {
        Patch::ALL.iter().copied().filter(move |&p| self.has(p))
    }

    /// The set with every patch its members imply (transitively).
    pub fn with_implied(self) -> PatchSet {
        let mut out = self;
        loop {
            let before = out;
            for p in before.iter() {
                p.row().implies.iter().for_each(|&q| out.insert(q));
            }
            if out == before {
                return out;
            }
        }
    }
}

impl FromIterator<Patch> for PatchSet {
    fn from_iter<I: IntoIterator<Item = Patch>>(it: I) -> PatchSet {
        let mut s = PatchSet::default();
        it.into_iter().for_each(|p| s.insert(p));
        s
    }
}

impl Serialize for PatchSet {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl Preset {
    pub fn find(name: &str) -> Result<&'static Preset, String> {
        PRESETS.iter().find(|p| p.name == name).ok_or_else(|| {
            let names: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
            format!(
                "unknown kernel preset {}: one of {}",
                crate::units::clip(name),
                names.join(", ")
            )
        })
    }
}

/// A preset plus patches: what the simulator and the checker model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KernelPolicy {
    pub preset: String,
    /// Every patch named: the preset's and the added ones (not those they imply).
    pub patches: PatchSet,
    /// The patches added on top of the preset, in the order given.
    pub added: Vec<Patch>,
    /// The preset's settings.
    #[serde(skip)]
    pub settings: Settings,
}

impl KernelPolicy {
    pub fn new(preset: &str, added: &[String]) -> Result<KernelPolicy, String> {
        let row = Preset::find(preset)?;
        let mut patches: PatchSet = row.patches.iter().copied().collect();
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
            settings: row.settings,
        })
    }

    /// Parse `PRESET[+PATCH...]`, e.g. `6.18+batch-dirty-flush`.
    pub fn parse(spec: &str) -> Result<KernelPolicy, String> {
        let mut parts = spec.split('+').map(str::trim);
        let preset = parts.next().unwrap_or("");
        let added: Vec<String> = parts.map(str::to_string).collect();
        KernelPolicy::new(preset, &added)
    }

    /// Every patch in force: those named and those they imply.
    pub fn in_force(&self) -> PatchSet {
        self.patches.with_implied()
    }

    pub fn has(&self, p: Patch) -> bool {
        self.in_force().has(p)
    }

    /// Whether the preset's kernel uses INVLPGB when the CPU has it (`machine.invlpgb`).
    pub fn uses_invlpgb(&self) -> bool {
        self.settings.uses_invlpgb
    }

    /// Refuse a patch whose code the architecture's kernel does not have.
    pub fn check_arch(&self, arch: Arch) -> Result<(), String> {
        refuse_other_arch(self.in_force().iter().map(Patch::row), arch)
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

/// The first row whose arches exclude `arch`, as an error naming the patch.
fn refuse_other_arch<'a>(
    rows: impl IntoIterator<Item = &'a PatchRow>,
    arch: Arch,
) -> Result<(), String> {
    match rows.into_iter().find(|r| !r.arches.contains(&arch)) {
        None => Ok(()),
        Some(r) => {
            let on: Vec<&str> = r.arches.iter().map(|a| a.name()).collect();
            Err(format!(
                "patch {} is not modelled on {arch} (only on {})",
                r.name,
                on.join(", ")
            ))
        }
    }
}

/// `reclaimlab policies`: the presets with their patches, then every patch.
pub fn listing() -> String {
    let mut s = String::from("Kernel presets (--kernel):\n");
    for p in PRESETS {
        let names: Vec<&str> = p.patches.iter().map(|p| p.name()).collect();
        s += &format!("  {:<6} {} [{}]\n", p.name, p.summary, names.join(", "));
    }
    s += "Policies (--patch, or PRESET+NAME):\n";
    for p in Patch::ALL {
        s += &format!("  {:<24} {}\n", p.name(), p.summary());
    }
    s
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
        assert!(l.has(Patch::Luf) && !l.has(Patch::LufWritable) && l.uses_invlpgb());
        assert!(KernelPolicy::parse("6.18+luf-writable")
            .unwrap()
            .has(Patch::Luf));
        assert!(!KernelPolicy::parse("4.2").unwrap().uses_invlpgb());
        assert!(KernelPolicy::parse("5.0")
            .unwrap_err()
            .contains("unknown kernel preset"));
    }

    #[test]
    fn another_spelling_of_a_name_is_refused_with_the_name() {
        for typed in ["file_large_folio_unmap", "File-Large-Folio-Unmap"] {
            let e = Patch::parse(typed).unwrap_err();
            assert!(e.ends_with("the name is file-large-folio-unmap"), "{e}");
        }
    }

    #[test]
    fn a_row_limited_to_one_arch_is_refused_on_the_other() {
        // No shipped row is arch-limited; a copy of one with x86 only stands in for the next.
        let x86_only = PatchRow {
            arches: &[Arch::X86],
            ..*Patch::Luf.row()
        };
        assert_eq!(refuse_other_arch([&x86_only], Arch::X86), Ok(()));
        assert_eq!(
            refuse_other_arch([Patch::TlbBatch.row(), &x86_only], Arch::Arm64),
            Err("patch luf is not modelled on arm64 (only on x86)".into())
        );
    }

    #[test]
    fn implied_patches_are_in_force_but_not_named() {
        let k = KernelPolicy::parse("6.18+mglru-dirty-reactivate").unwrap();
        assert!(k.has(Patch::Mglru) && !k.patches.has(Patch::Mglru));
        assert_eq!(
            serde_json::to_value(k.patches).unwrap(),
            serde_json::json!(["tlb-batch", "mglru-dirty-reactivate"])
        );
    }

    /// Every consumer reads a row without code of its own: walking the table shows that a
    /// new row is named, parsed, listed, implied and arch-checked with nothing else added.
    #[test]
    fn every_row_is_reachable_from_its_name() {
        let list = listing();
        for (i, r) in PATCHES.iter().enumerate() {
            assert_eq!(r.patch as usize, i, "rows in enum order");
            assert_eq!(Patch::ALL[i], r.patch);
            assert_eq!(
                PATCHES.iter().filter(|o| o.name == r.name).count(),
                1,
                "{} is one patch's name",
                r.name
            );
            assert!(!r.summary.is_empty() && !r.arches.is_empty(), "{}", r.name);
            let implied: PatchSet = r.implies.iter().copied().collect();
            assert!(
                !implied.with_implied().has(r.patch),
                "{} implies itself",
                r.name
            );
            for preset in PRESETS {
                let k = KernelPolicy::parse(&format!("{}+{}", preset.name, r.name)).unwrap();
                assert!(k.has(r.patch) && r.implies.iter().all(|&q| k.has(q)));
                assert_eq!(k.to_string(), format!("{}+{}", preset.name, r.name));
                for a in Arch::ALL {
                    assert_eq!(k.check_arch(a).is_ok(), r.arches.contains(&a));
                }
            }
            assert!(
                list.contains(&format!("  {:<24} {}\n", r.name, r.patch.summary())),
                "{list}"
            );
        }
        for p in PRESETS {
            assert!(Preset::find(p.name).is_ok() && list.contains(p.summary));
        }
    }

    #[test]
    fn the_presets_differ_only_where_the_releases_do() {
        let old = Preset::find("4.2").unwrap();
        let new = Preset::find("6.18").unwrap();
        assert_eq!((old.settings.free_batch, new.settings.free_batch), (32, 31));
        assert!(!old.settings.range_flush_freed_tables && new.settings.range_flush_freed_tables);
        assert_eq!(Preset::find("7.0").unwrap().settings, new.settings);
    }
}
