//! The small-scope model: CPUs with TLBs, one or two mms, a short folio list, and reclaim as a
//! deterministic sequence of steps following `shrink_folio_list` (mm/vmscan.c) for a policy.
//!
//! Every transition is one [`Choice`]: either "reclaim takes its next step" (reclaim is one
//! thread, so its next step is a function of the state) or one step of a user CPU (a store, a
//! context switch, an x86 cpumask trim, an arm64 TLBI completing early). Applying a choice yields
//! an [`Event`] named after the kernel function it mirrors, and maybe a [`Violation`].

use serde::{Deserialize, Serialize};
use std::fmt;

/// Most CPUs modelled (CPU 0 runs reclaim; the others run user tasks).
pub const MAX_CPUS: usize = 4;
/// Most mms modelled.
pub const MAX_MMS: usize = 2;
/// Most base pages (one frame per page; bitmasks are u8).
pub const MAX_PAGES: usize = 8;

use reclaimlab_core::policy::{Patch, PatchSet};
pub use reclaimlab_core::Arch;

/// A deliberate bug planted in the model, to show the checker would notice its absence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mutation {
    /// `set_tlb_ubc_flush_pending` never sets `writable`, so `try_to_unmap_flush_dirty` is a no-op.
    IgnoreWritable,
    /// x86 `switch_mm_irqs_off` ignores a stale `tlb_gen` (no flush when switching back).
    SwitchIgnoresTlbGen,
    /// Batched unmap of a PTE run keeps only the first PTE's dirty bit (instead of ORing all).
    BatchDirtyFirstPteOnly,
    /// `pageout` (is_page_cache_freeable) and `__remove_mapping` (refcount freeze) ignore the
    /// references of a mapping re-established by a fault while the folio was unlocked.
    IgnoreRemap,
    /// `change_pte_range` skips `flush_tlb_batched_pending` (needs the mprotect actor).
    NoFlushBatchedPending,
    /// x86 INVLPGB (`--invlpgb`): `arch_tlbbatch_flush` issues the broadcast but skips
    /// TLBSYNC, so the invalidations may complete after the folio is freed.
    InvlpgbNoTlbsync,
    /// The flusher's `page_mkclean` write-protects and cleans each PTE but skips the flush
    /// `ptep_clear_flush` does (needs the flusher): a cached writable+dirty entry survives.
    MkcleanNoFlush,
}

impl Mutation {
    pub const ALL: [Mutation; 7] = [
        Mutation::IgnoreWritable,
        Mutation::SwitchIgnoresTlbGen,
        Mutation::BatchDirtyFirstPteOnly,
        Mutation::IgnoreRemap,
        Mutation::NoFlushBatchedPending,
        Mutation::InvlpgbNoTlbsync,
        Mutation::MkcleanNoFlush,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Mutation::IgnoreWritable => "ignore-writable",
            Mutation::SwitchIgnoresTlbGen => "switch-ignores-tlb-gen",
            Mutation::BatchDirtyFirstPteOnly => "batch-dirty-first-pte-only",
            Mutation::IgnoreRemap => "ignore-remap",
            Mutation::NoFlushBatchedPending => "no-flush-batched-pending",
            Mutation::InvlpgbNoTlbsync => "invlpgb-no-tlbsync",
            Mutation::MkcleanNoFlush => "mkclean-no-flush",
        }
    }
    pub fn parse(s: &str) -> Result<Mutation, String> {
        Mutation::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                let n: Vec<&str> = Mutation::ALL.iter().map(|m| m.name()).collect();
                format!("unknown mutation {s:?}: one of {}", n.join(", "))
            })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FolioKind {
    /// Swap-backed anonymous folio, mapped by mm 0 only; written by `swap_writeout`.
    Anon,
    /// Shared file mapping (MAP_SHARED, writable), mapped by every mm; clean at start.
    File,
}

#[derive(Clone, Copy, Debug, Serialize)]
pub struct Folio {
    pub first: u8,
    pub nr: u8,
    pub kind: FolioKind,
}

impl Folio {
    pub fn mask(&self) -> u8 {
        (((1u16 << self.nr) - 1) as u8) << self.first
    }
}

/// The fixed part of the scope: machine, layout and policy.
#[derive(Clone, Debug)]
pub struct Model {
    pub arch: Arch,
    pub cpus: u8,
    pub mms: u8,
    pub pages: u8,
    pub folios: Vec<Folio>,
    pub page_folio: [u8; MAX_PAGES],
    /// Which vpages each mm maps (vpage index == frame index).
    pub mapped: [u8; MAX_MMS],
    /// Every patch in force, the implied ones included (`KernelPolicy::in_force`).
    pub patches: PatchSet,
    pub mutation: Option<Mutation>,
    /// `free_folios` batch size: `try_to_unmap_flush` + `free_unref_folios` when it fills (31).
    pub free_batch: u8,
    /// Seed 000's dirty batch size (31).
    pub dirty_batch: u8,
    /// Number of `shrink_folio_list` passes over the list.
    pub passes: u8,
    /// Dirty file folios are written by reclaim (`->writepage`: kswapd with PGDAT_DIRTY, up to
    /// about 6.15) instead of only being activated for the flusher (later kernels).
    pub file_pageout: bool,
    /// User threads may call `mprotect(PROT_READ)` on a page (checks that no store lands
    /// after it returns: the race `flush_tlb_batched_pending` closes).
    pub mprotect: bool,
    /// x86 with INVLPGB (6.15+): `arch_tlbbatch_flush` is a broadcast of every non-global
    /// translation on every CPU plus TLBSYNC, no IPIs.
    pub invlpgb: bool,
    /// The writeback flusher and the device as actors (6.18's dirty page cache): file PTEs
    /// are write-protected while clean (writenotify), the flusher cleans a dirty file folio
    /// for I/O (`page_mkclean`) and puts it under PG_writeback, the device completes it
    /// later (`folio_end_writeback`); reclaim keeps a folio under writeback.
    pub flusher: bool,
    /// Build each step's [`Event::detail`] text. The search turns it off (it only needs the
    /// verdict; a counterexample is replayed with it on), which saves formatting a sentence
    /// for each of millions of transitions.
    pub describe: bool,
}

/// A step's detail text while it is built: nothing at all when the model does not describe
/// ([`Model::describe`] off), so the search formats and allocates nothing.
#[derive(Default)]
enum Detail {
    #[default]
    Off,
    Static(&'static str),
    Text(String),
}

impl Detail {
    fn into_string(self) -> String {
        match self {
            Detail::Off => String::new(),
            Detail::Static(s) => s.to_string(),
            Detail::Text(s) => s,
        }
    }

    fn as_str(&self) -> &str {
        match self {
            Detail::Off => "",
            Detail::Static(s) => s,
            Detail::Text(s) => s,
        }
    }
}

impl From<&'static str> for Detail {
    fn from(s: &'static str) -> Detail {
        Detail::Static(s)
    }
}

impl std::ops::AddAssign<&str> for Detail {
    fn add_assign(&mut self, rhs: &str) {
        match self {
            Detail::Off => {}
            Detail::Static(s) => *self = Detail::Text(format!("{s}{rhs}")),
            Detail::Text(s) => s.push_str(rhs),
        }
    }
}

impl std::ops::AddAssign<&Detail> for Detail {
    fn add_assign(&mut self, rhs: &Detail) {
        *self += rhs.as_str();
    }
}

impl std::ops::Add<&str> for Detail {
    type Output = Detail;
    fn add(mut self, rhs: &str) -> Detail {
        self += rhs;
        self
    }
}

impl std::fmt::Display for Detail {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `format!` for a step's detail: formatted only when the model describes its steps.
macro_rules! det {
    ($model:expr, $($arg:tt)*) => {
        if $model.describe {
            Detail::Text(format!($($arg)*))
        } else {
            Detail::Off
        }
    };
}

/// [`det!`] as a `String` (empty when the model does not describe its steps).
macro_rules! dets {
    ($model:expr, $($arg:tt)*) => {
        if $model.describe {
            format!($($arg)*)
        } else {
            String::new()
        }
    };
}

/// Where reclaim is in `shrink_folio_list`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Phase {
    /// `folio_trylock` (+ `folio_alloc_swap` and `folio_mark_dirty` for anon).
    Lock,
    /// `try_to_unmap_one` on (mm, page).
    Unmap,
    /// `try_to_unmap_flush_dirty` before this folio's pageout.
    FlushDirty,
    /// `pageout` → `swap_writeout`: clear dirty, write (snapshot), unlock.
    Pageout,
    /// relock + `__remove_mapping`.
    RemoveMapping,
    /// free batch full: `try_to_unmap_flush` ...
    FreeBatchFlush,
    /// ... then `free_unref_folios`.
    FreeBatchFree,
    /// Seed 000: one `try_to_unmap_flush_dirty` for the batch.
    BatchFlushDirty,
    /// Seed 000: `folio_lock` + `pageout` of a batched folio.
    BatchPageout,
    /// End of the list: `try_to_unmap_flush` ...
    FinalFlush,
    /// ... then `free_unref_folios`.
    FinalFree,
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Pc {
    pub phase: Phase,
    pub folio: u8,
    pub mm: u8,
    pub page: u8,
    pub pass: u8,
    /// In seed 000's batch phase (pageouts of collected dirty folios).
    pub batch: bool,
    /// Main-loop folio to resume with after a dirty batch drains.
    pub resume: u8,
}

/// The whole mutable state. Bitmasks: pages in `u8`, CPUs in `u8`, mms in `u8`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct State {
    /// The mm loaded on each CPU (`cpu_tlbstate.loaded_mm`).
    pub cpu_mm: [u8; MAX_CPUS],
    /// CPUs in lazy TLB mode (running a kernel thread with the old mm still loaded).
    pub lazy: u8,
    /// Per CPU, mms whose local `tlb_gen` is behind the mm's (x86).
    pub stale: [u8; MAX_CPUS],
    /// Per CPU and mm, vpages with a cached writable+dirty TLB entry.
    pub tlb: [[u8; MAX_MMS]; MAX_CPUS],
    /// arm64: entries whose broadcast TLBI was issued but not yet completed by a DSB.
    pub doomed: [[u8; MAX_MMS]; MAX_CPUS],
    /// x86 `mm_cpumask`.
    pub cpumask: [u8; MAX_MMS],
    pub pte_present: [u8; MAX_MMS],
    pub pte_dirty: [u8; MAX_MMS],
    /// Present PTEs that are clean and write-protected (a shared file mapping's clean PTE,
    /// writenotify; `page_mkclean`'s result): a store takes a write-protect fault.
    pub pte_ro: [u8; MAX_MMS],
    /// Pages whose newest content is not in their backing copy (swap slot / file).
    pub unsaved: u8,
    /// Frames returned to the allocator.
    pub freed: u8,
    /// Per folio: PG_locked, PG_dirty, in swap cache, removed from its mapping (refcount frozen).
    pub f_locked: u8,
    pub f_dirty: u8,
    pub f_swapcache: u8,
    pub f_removed: u8,
    /// Per folio: PG_writeback (the device is writing it), PG_reclaim (reclaim met it dirty
    /// or under writeback; folio_end_writeback rotates it).
    pub f_writeback: u8,
    pub f_reclaim: u8,
    /// Pages stored to since their folio's writeback was submitted: newer than the snapshot
    /// the device is writing (only for folios under writeback).
    pub wb_newer: u8,
    /// Folios in the `free_folios` batch.
    pub free_batch: u8,
    /// Seed 000: unmapped dirty folios waiting for the batch flush and pageout.
    pub dirty_batch: u8,
    /// `unlock-dirty-after-flush`: activated dirty file folios still locked until the batch's
    /// next `try_to_unmap_flush`.
    pub unlock_at_flush: u8,
    /// `current->tlb_ubc`: the x86 batch cpumask, `flush_required`, `writable`.
    pub ubc_cpus: u8,
    pub ubc_flush_required: bool,
    pub ubc_writable: bool,
    /// Per mm, pages made read-only by a completed `mprotect(PROT_READ)` (optional actor).
    pub wp: [u8; MAX_MMS],
    /// Per mm, `mm->tlb_flush_batched`: a deferred flush was queued and no
    /// `flush_tlb_batched_pending` has run since.
    pub batched_pending: u8,
    pub pc: Pc,
}

/// Bytes in [`State::pack`].
pub(crate) const PACKED: usize = 64;

impl State {
    /// Every field in a fixed byte layout (equal states, equal bytes), for the visited set.
    pub(crate) fn pack(&self) -> [u8; PACKED] {
        let mut b = [0u8; PACKED];
        let mut n = 0;
        let mut put = |x: &[u8]| {
            b[n..n + x.len()].copy_from_slice(x);
            n += x.len();
        };
        put(&self.cpu_mm);
        put(&self.stale);
        for c in 0..MAX_CPUS {
            put(&self.tlb[c]);
            put(&self.doomed[c]);
        }
        put(&self.cpumask);
        put(&self.pte_present);
        put(&self.pte_dirty);
        put(&self.wp);
        put(&self.pte_ro);
        put(&[self.f_writeback, self.f_reclaim, self.wb_newer]);
        put(&[
            self.lazy,
            self.unsaved,
            self.freed,
            self.f_locked,
            self.f_dirty,
            self.f_swapcache,
            self.f_removed,
            self.free_batch,
            self.dirty_batch,
            self.unlock_at_flush,
            self.ubc_cpus,
            self.ubc_flush_required as u8,
            self.ubc_writable as u8,
            self.batched_pending,
        ]);
        let pc = &self.pc;
        put(&[
            pc.phase as u8,
            pc.folio,
            pc.mm,
            pc.page,
            pc.pass,
            pc.batch as u8,
            pc.resume,
        ]);
        b
    }
}

/// One transition chosen by the explorer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Choice {
    /// Reclaim (on CPU 0) takes its next step.
    Reclaim,
    /// A user store by `cpu` to `page` of the mm it runs (TLB hit, page walk, or fault).
    Store { cpu: u8, page: u8 },
    /// The CPU switches to a kernel thread: `enter_lazy_tlb`.
    SwitchToIdle { cpu: u8 },
    /// The CPU switches to a task of `mm`: `switch_mm_irqs_off` (half of a migration).
    SwitchMm { cpu: u8, mm: u8 },
    /// x86: a flush aimed at `mm` finds the CPU running another mm and drops it from
    /// `mm_cpumask` (`flush_tlb_func`, "wrong CPU").
    TrimCpumask { cpu: u8, mm: u8 },
    /// arm64: the broadcast TLBI for (`mm`, `page`) takes effect on `cpu` before the DSB.
    TlbiComplete { cpu: u8, mm: u8, page: u8 },
    /// A thread on `cpu` calls `mprotect(PROT_READ)` on `page` of the mm it runs.
    Mprotect { cpu: u8, page: u8 },
    /// The flusher writes dirty file folio `folio`: `folio_clear_dirty_for_io`
    /// (`page_mkclean`) and `folio_start_writeback`, the device's snapshot taken.
    Flusher { folio: u8 },
    /// The device completes `folio`'s write: `folio_end_writeback`.
    EndWriteback { folio: u8 },
}

/// What a step did, named after the kernel function it mirrors.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Event {
    /// Kernel function (or hardware action) this step mirrors.
    pub function: &'static str,
    /// Human-readable detail.
    pub detail: String,
}

/// The oracle's findings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Violation {
    /// A freed frame held a store that is not in its written-out copy.
    LostWrite { page: u8, folio: u8 },
    /// A store landed on a frame already returned to the allocator.
    UseAfterFreeWrite { cpu: u8, page: u8 },
    /// Reclaim finished with a folio that is clean (no PG_dirty, no dirty PTE) holding data
    /// newer than its copy will be once the writes in flight complete: the next reclaim frees
    /// it without writeout.
    LatentLostWrite { page: u8, folio: u8 },
    /// A store landed after `mprotect(PROT_READ)` of the page had returned.
    WriteAfterMprotect { cpu: u8, mm: u8, page: u8 },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::LostWrite { page, folio } => write!(
                f,
                "LOST WRITE: page {page} (folio {folio}) freed holding a store that its swap/file copy lacks"
            ),
            Violation::UseAfterFreeWrite { cpu, page } => write!(
                f,
                "USE-AFTER-FREE WRITE: cpu{cpu} stored to page {page} after its frame was freed"
            ),
            Violation::WriteAfterMprotect { cpu, mm, page } => write!(
                f,
                "WRITE AFTER MPROTECT: cpu{cpu} stored to mm{mm} page {page} after mprotect(PROT_READ) returned"
            ),
            Violation::LatentLostWrite { page, folio } => write!(
                f,
                "LOST WRITE (latent): page {page} (folio {folio}) is clean (no PG_dirty, no dirty PTE) but newer than what its copy will hold; the next reclaim frees it without writeout"
            ),
        }
    }
}

fn bits(m: u8) -> impl Iterator<Item = u8> {
    (0..8u8).filter(move |i| m & (1 << i) != 0)
}

fn list(m: u8, prefix: &str) -> String {
    let v: Vec<String> = bits(m).map(|i| format!("{prefix}{i}")).collect();
    format!("{{{}}}", v.join(","))
}

impl Model {
    pub fn nfolios(&self) -> u8 {
        self.folios.len() as u8
    }

    /// Whether the folio's refcount shows mapping references (pageout / __remove_mapping).
    fn refs_mapped(&self, s: &State, f: u8) -> bool {
        self.mutation != Some(Mutation::IgnoreRemap) && self.folio_mapped(s, f)
    }

    /// Whether the modelled kernel carries patch `p`: what every decision point asks.
    fn has(&self, p: Patch) -> bool {
        self.patches.has(p)
    }

    fn folio_mapped(&self, s: &State, f: u8) -> bool {
        let mask = self.folios[f as usize].mask();
        (0..self.mms as usize).any(|m| s.pte_present[m] & mask != 0)
    }

    pub fn initial(&self) -> State {
        let mut s = State {
            cpu_mm: [0; MAX_CPUS],
            lazy: 1, // CPU 0 runs kswapd
            stale: [0; MAX_CPUS],
            tlb: [[0; MAX_MMS]; MAX_CPUS],
            doomed: [[0; MAX_MMS]; MAX_CPUS],
            cpumask: [0; MAX_MMS],
            pte_present: [0; MAX_MMS],
            pte_dirty: [0; MAX_MMS],
            pte_ro: [0; MAX_MMS],
            unsaved: 0,
            freed: 0,
            f_locked: 0,
            f_dirty: 0,
            f_swapcache: 0,
            f_removed: 0,
            f_writeback: 0,
            f_reclaim: 0,
            wb_newer: 0,
            free_batch: 0,
            dirty_batch: 0,
            unlock_at_flush: 0,
            ubc_cpus: 0,
            ubc_flush_required: false,
            ubc_writable: false,
            wp: [0; MAX_MMS],
            batched_pending: 0,
            pc: Pc {
                phase: Phase::Lock,
                folio: 0,
                mm: 0,
                page: 0,
                pass: 0,
                batch: false,
                resume: 0,
            },
        };
        for c in 1..self.cpus {
            let m = (c - 1) % self.mms;
            s.cpu_mm[c as usize] = m;
            if self.behaviour_uses_cpumask() {
                s.cpumask[m as usize] |= 1 << c;
            }
        }
        for m in 0..self.mms as usize {
            s.pte_present[m] = self.mapped[m];
            if self.flusher {
                // A shared file mapping with dirty accounting maps a clean folio read-only
                // (vma_wants_writenotify): the first store faults and dirties the folio.
                s.pte_ro[m] = self.mapped[m] & self.file_mask();
            }
        }
        for f in &self.folios {
            if f.kind == FolioKind::Anon {
                // Anon content exists only in memory until swap_writeout.
                s.unsaved |= f.mask();
            }
        }
        s
    }

    fn behaviour_uses_cpumask(&self) -> bool {
        self.arch == Arch::X86
    }

    /// Every choice enabled in `s` (reclaim first, then user CPUs in order, then the flusher
    /// and the device).
    pub fn choices(&self, s: &State, out: &mut Vec<Choice>) {
        out.clear();
        if s.pc.phase != Phase::Done {
            out.push(Choice::Reclaim);
        }
        for c in 1..self.cpus {
            let cu = c as usize;
            let lazy = s.lazy & (1 << c) != 0;
            let cur = s.cpu_mm[cu];
            if !lazy {
                for p in bits(self.mapped[cur as usize]) {
                    if self.store_enabled(s, c, p) {
                        out.push(Choice::Store { cpu: c, page: p });
                    }
                }
                if self.mprotect {
                    for p in bits(self.mapped[cur as usize] & !s.wp[cur as usize]) {
                        out.push(Choice::Mprotect { cpu: c, page: p });
                    }
                }
                out.push(Choice::SwitchToIdle { cpu: c });
            }
            for m in 0..self.mms {
                if lazy || m != cur {
                    out.push(Choice::SwitchMm { cpu: c, mm: m });
                }
            }
            if self.arch == Arch::X86 {
                for m in 0..self.mms {
                    if m != cur && s.cpumask[m as usize] & (1 << c) != 0 {
                        out.push(Choice::TrimCpumask { cpu: c, mm: m });
                    }
                }
            }
            // Broadcast invalidations in flight (arm64 TLBIs; x86 INVLPGBs not yet TLBSYNCed).
            {
                for m in 0..self.mms {
                    for p in bits(s.doomed[cu][m as usize]) {
                        out.push(Choice::TlbiComplete {
                            cpu: c,
                            mm: m,
                            page: p,
                        });
                    }
                }
            }
        }
        if self.flusher {
            self.writeback_choices(s, out);
        }
    }

    fn store_enabled(&self, s: &State, c: u8, p: u8) -> bool {
        let m = s.cpu_mm[c as usize] as usize;
        let bit = 1u8 << p;
        if s.tlb[c as usize][m] & bit != 0 {
            return true;
        }
        if s.wp[m] & bit != 0 {
            // A walk or a fault on a read-only page: SIGSEGV, nothing stored.
            return false;
        }
        let f = self.page_folio[p as usize];
        if s.pte_present[m] & bit != 0 {
            // A write-protect fault (do_wp_page → filemap_page_mkwrite) takes the folio lock.
            return s.pte_ro[m] & bit == 0 || s.f_locked & (1 << f) == 0;
        }
        // Fault on a cleared PTE: do_swap_page / filemap_fault need the folio still in the
        // swap/page cache and its lock; a folio already removed would be read back into a new
        // frame, which this scope does not model (the fault blocks).
        s.f_locked & (1 << f) == 0 && s.f_removed & (1 << f) == 0 && s.freed & bit == 0
    }

    /// Apply `choice` to `s` and run the oracle. Returns the event and the oracle's verdict
    /// on this step. The choice must be enabled (replay checks that first).
    pub fn step(&self, s: &mut State, choice: Choice) -> (Event, Option<Violation>) {
        let (ev, viol) = self.apply(s, choice);
        if viol.is_none() && s.pc.phase == Phase::Done {
            return (ev, self.latent_loss(s));
        }
        (ev, viol)
    }

    fn apply(&self, s: &mut State, choice: Choice) -> (Event, Option<Violation>) {
        match choice {
            Choice::Reclaim => self.reclaim_step(s),
            Choice::Store { cpu, page } => self.store(s, cpu, page),
            Choice::SwitchToIdle { cpu } => {
                s.lazy |= 1 << cpu;
                let m = s.cpu_mm[cpu as usize];
                (
                    Event {
                        function: "enter_lazy_tlb",
                        detail: dets!(
                            self,
                            "cpu{cpu} switches to a kernel thread; mm{m} stays loaded (lazy TLB)"
                        ),
                    },
                    None,
                )
            }
            Choice::SwitchMm { cpu, mm } => self.switch_mm(s, cpu, mm),
            Choice::TrimCpumask { cpu, mm } => {
                s.cpumask[mm as usize] &= !(1 << cpu);
                (
                    Event {
                        function: "flush_tlb_func",
                        detail: dets!(self,
                            "cpu{cpu} runs another mm: leaves mm_cpumask(mm{mm}) (cpumask trim); its mm{mm} entries stay, guarded by tlb_gen"
                        ),
                    },
                    None,
                )
            }
            Choice::Mprotect { cpu, page } => (self.mprotect(s, cpu, page), None),
            Choice::Flusher { folio } => (self.flusher_writeback(s, folio), None),
            Choice::EndWriteback { folio } => (self.folio_end_writeback(s, folio), None),
            Choice::TlbiComplete { cpu, mm, page } => {
                let (c, m) = (cpu as usize, mm as usize);
                s.tlb[c][m] &= !(1 << page);
                s.doomed[c][m] &= !(1 << page);
                let (function, waiter) = match self.arch {
                    Arch::Arm64 => ("tlbi_vale1is (completes)", "the DSB"),
                    Arch::X86 => ("invlpgb (completes)", "a TLBSYNC"),
                };
                (
                    Event {
                        function,
                        detail: dets!(self,
                            "the broadcast invalidation for mm{mm} page {page} takes effect on cpu{cpu} before {waiter}"
                        ),
                    },
                    None,
                )
            }
        }
    }

    /// A user store: through a cached writable+dirty entry (no walk, even if the PTE is gone),
    /// else by a page walk that sets the PTE's dirty bit, else a fault that maps the folio back.
    fn store(&self, s: &mut State, cpu: u8, p: u8) -> (Event, Option<Violation>) {
        let c = cpu as usize;
        let m = s.cpu_mm[c] as usize;
        let bit = 1u8 << p;
        if s.tlb[c][m] & bit != 0 {
            let pte = if s.pte_present[m] & bit != 0 {
                "PTE present"
            } else {
                "PTE already CLEARED"
            };
            let ev = Event {
                function: "store (TLB hit)",
                detail: dets!(self,
                    "cpu{cpu} stores to mm{m} page {p} through its cached writable+dirty TLB entry, no page walk ({pte})"
                ),
            };
            if s.freed & bit != 0 {
                return (ev, Some(Violation::UseAfterFreeWrite { cpu, page: p }));
            }
            if s.wp[m] & bit != 0 {
                return (
                    ev,
                    Some(Violation::WriteAfterMprotect {
                        cpu,
                        mm: m as u8,
                        page: p,
                    }),
                );
            }
            self.land(s, p);
            return (ev, None);
        }
        if s.pte_present[m] & s.pte_ro[m] & bit != 0 {
            return (self.do_wp_page(s, cpu, p), None);
        }
        if s.pte_present[m] & bit != 0 {
            let was = s.pte_dirty[m] & bit != 0;
            s.pte_dirty[m] |= bit;
            s.tlb[c][m] |= bit;
            self.land(s, p);
            return (
                Event {
                    function: "store (page walk, TLB fill)",
                    detail: dets!(self,
                        "cpu{cpu} stores to mm{m} page {p}: walk {} PTE dirty, fills a writable+dirty TLB entry",
                        if was { "finds" } else { "sets" }
                    ),
                },
                None,
            );
        }
        // Fault on the cleared PTE; the folio is still cached and unlocked.
        let f = self.page_folio[p as usize];
        let func = match self.folios[f as usize].kind {
            FolioKind::Anon => "do_swap_page",
            FolioKind::File => "filemap_fault",
        };
        s.pte_present[m] |= bit;
        s.pte_dirty[m] |= bit;
        s.tlb[c][m] |= bit;
        self.land(s, p);
        if self.flusher && func == "filemap_fault" {
            // do_shared_fault → fault_dirty_shared_page: a write fault dirties the folio.
            s.f_dirty |= 1 << f;
        }
        (
            Event {
                function: func,
                detail: dets!(self,
                    "cpu{cpu} faults on mm{m}'s cleared PTE for page {p}; folio {f} found in the {} cache, mapped again writable+dirty, store retried",
                    if func == "do_swap_page" { "swap" } else { "page" }
                ),
            },
            None,
        )
    }

    fn flush_local(&self, s: &mut State, c: usize, m: usize) {
        s.tlb[c][m] = 0;
        s.doomed[c][m] = 0;
        s.stale[c] &= !(1 << m);
    }

    fn switch_mm(&self, s: &mut State, cpu: u8, mm: u8) -> (Event, Option<Violation>) {
        let (c, m) = (cpu as usize, mm as usize);
        let was_lazy = s.lazy & (1 << cpu) != 0;
        let prev = s.cpu_mm[c];
        s.lazy &= !(1 << cpu);
        s.cpu_mm[c] = mm;
        let mut detail = if prev == mm {
            det!(self, "cpu{cpu} leaves lazy mode back to mm{mm}")
        } else {
            det!(self, "cpu{cpu} switches mm{prev} -> mm{mm}")
        };
        if self.arch == Arch::X86 {
            if prev != mm {
                s.cpumask[m] |= 1 << cpu;
            }
            let stale = s.stale[c] & (1 << mm) != 0;
            if stale && self.mutation != Some(Mutation::SwitchIgnoresTlbGen) {
                let had = s.tlb[c][m];
                self.flush_local(s, c, m);
                detail += &det!(self,
                    "; local tlb_gen behind mm{mm}'s: full flush (TLB_FLUSH_ON_TASK_SWITCH), drops entries {}",
                    list(had, "p")
                );
            } else if stale {
                detail += "; MUTATION: stale tlb_gen ignored, no flush";
            } else if was_lazy || prev != mm {
                detail += "; tlb_gen current, no flush (PCID keeps entries)";
            }
        } else {
            detail += "; ASID-tagged TLB, no flush on switch";
        }
        (
            Event {
                function: "switch_mm_irqs_off",
                detail: detail.into_string(),
            },
            None,
        )
    }

    // ---- the deferred-flush machinery (mm/rmap.c, arch/*/tlbflush) ----

    /// `should_defer_flush`: TTU_BATCH_FLUSH and the arch agrees (x86: another CPU in the
    /// mm's cpumask; arm64: always).
    fn should_defer_flush(&self, s: &State, m: usize) -> bool {
        self.has(Patch::TlbBatch)
            && match self.arch {
                Arch::X86 => s.cpumask[m] & !1 != 0,
                Arch::Arm64 => true,
            }
    }

    /// `set_tlb_ubc_flush_pending` → `arch_tlbbatch_add_pending`.
    fn set_tlb_ubc_flush_pending(&self, s: &mut State, m: usize, pages: u8, dirty: bool) -> Detail {
        let d = match self.arch {
            Arch::X86 => {
                // inc_mm_tlb_gen: every CPU's view of this mm is now behind.
                for c in 0..self.cpus as usize {
                    s.stale[c] |= 1 << m;
                }
                s.ubc_cpus |= s.cpumask[m];
                det!(
                    self,
                    "set_tlb_ubc_flush_pending: inc_mm_tlb_gen(mm{m}), batch cpumask |= {}",
                    list(s.cpumask[m], "cpu")
                )
            }
            Arch::Arm64 => {
                let mut hit = Vec::new();
                for c in 1..self.cpus as usize {
                    let x = s.tlb[c][m] & pages;
                    s.doomed[c][m] |= x;
                    if x != 0 && self.describe {
                        hit.push(format!("cpu{c}{}", list(x, "p")));
                    }
                }
                det!(self,
                    "set_tlb_ubc_flush_pending: broadcast TLBI issued without DSB (in flight for {})",
                    if hit.is_empty() {
                        "no cached entry".into()
                    } else {
                        hit.join(" ")
                    }
                )
            }
        };
        s.ubc_flush_required = true;
        s.batched_pending |= 1 << m;
        if dirty && self.mutation != Some(Mutation::IgnoreWritable) {
            s.ubc_writable = true;
            d + ", PTE was dirty: writable = true"
        } else if dirty {
            d + ", PTE was dirty but MUTATION: writable not set"
        } else {
            d
        }
    }

    /// `flush_tlb_range` right away (no batching).
    fn flush_tlb_range(&self, s: &mut State, m: usize, pages: u8) -> Detail {
        match self.arch {
            Arch::X86 => {
                for c in 0..self.cpus as usize {
                    s.stale[c] |= 1 << m;
                }
                let mut done = 0u8;
                for c in bits(s.cpumask[m]) {
                    let cu = c as usize;
                    if s.cpu_mm[cu] as usize == m && s.lazy & (1 << c) == 0 {
                        self.flush_local(s, cu, m);
                        done |= 1 << c;
                    }
                }
                det!(
                    self,
                    "flush_tlb_range now: inc_mm_tlb_gen(mm{m}), IPI flush on {}",
                    list(done, "cpu")
                )
            }
            Arch::Arm64 => {
                for c in 0..self.cpus as usize {
                    s.tlb[c][m] &= !pages;
                    s.doomed[c][m] &= !pages;
                }
                "flush_tlb_range now: TLBI + DSB".into()
            }
        }
    }

    /// LUF's unmap decision: every mapping of folio `f` is read-only (write-protected by a
    /// completed mprotect in each mm that maps it), or the unsafe variant, which defers all.
    fn luf_may_defer(&self, s: &State, f: u8) -> bool {
        if !self.has(Patch::Luf) {
            return false;
        }
        let pages = self.folios[f as usize].mask();
        self.has(Patch::LufWritable)
            || (0..self.mms as usize)
                .all(|m| self.mapped[m] & pages == 0 || s.wp[m] & pages == pages)
    }

    /// LUF: the deferred flush goes to the pending batch flushed at the frame's reallocation
    /// instead of `current->tlb_ubc` (so neither `try_to_unmap_flush_dirty` nor the free
    /// batch's `try_to_unmap_flush` waits for it). The generation bump (x86) or the TLBIs
    /// (arm64) of `arch_tlbbatch_add_pending` still happen.
    fn luf_defer(&self, s: &mut State, m: usize, pages: u8) -> Detail {
        let d: Detail = match self.arch {
            Arch::X86 => {
                for c in 0..self.cpus as usize {
                    s.stale[c] |= 1 << m;
                }
                det!(
                    self,
                    "LUF: inc_mm_tlb_gen(mm{m}), flush deferred to the frame's reallocation"
                )
            }
            Arch::Arm64 => {
                for c in 1..self.cpus as usize {
                    let x = s.tlb[c][m] & pages;
                    s.doomed[c][m] |= x;
                }
                "LUF: broadcast TLBI issued, its DSB deferred to the frame's reallocation".into()
            }
        };
        s.batched_pending |= 1 << m;
        if self.has(Patch::LufWritable) {
            d + " (UNSAFE: writable mappings too)"
        } else {
            d + " (every mapping read-only)"
        }
    }

    /// x86 INVLPGB's `arch_tlbbatch_flush`: invlpgb_flush_all_nonglobals then TLBSYNC; every
    /// CPU's entries of every mm are gone, no IPI (the mutation skips the TLBSYNC).
    fn invlpgb_flush_all(&self, s: &mut State) -> Detail {
        for c in 1..self.cpus as usize {
            for m in 0..self.mms as usize {
                if self.mutation == Some(Mutation::InvlpgbNoTlbsync) {
                    s.doomed[c][m] |= s.tlb[c][m];
                } else {
                    s.tlb[c][m] = 0;
                    s.doomed[c][m] = 0;
                }
            }
        }
        s.ubc_cpus = 0;
        if self.mutation == Some(Mutation::InvlpgbNoTlbsync) {
            "arch_tlbbatch_flush: INVLPGB of every non-global translation, MUTATION: no TLBSYNC (invalidations still in flight)".into()
        } else {
            "arch_tlbbatch_flush: INVLPGB of every non-global translation + TLBSYNC, no IPIs".into()
        }
    }

    /// `arch_tlbbatch_flush`.
    fn arch_tlbbatch_flush(&self, s: &mut State) -> Detail {
        match self.arch {
            Arch::X86 if self.invlpgb => self.invlpgb_flush_all(s),
            Arch::X86 => {
                let mut done = Vec::new();
                for c in bits(s.ubc_cpus) {
                    let cu = c as usize;
                    if c == 0 {
                        continue;
                    }
                    if s.lazy & (1 << c) != 0 {
                        if self.describe {
                            done.push(format!("cpu{c}:lazy-skipped"));
                        }
                        continue;
                    }
                    let lm = s.cpu_mm[cu] as usize;
                    if s.stale[cu] & (1 << lm) != 0 {
                        self.flush_local(s, cu, lm);
                        if self.describe {
                            done.push(format!("cpu{c}:flushed mm{lm}"));
                        }
                    } else {
                        if self.describe {
                            done.push(format!("cpu{c}:mm{lm} current"));
                        }
                    }
                }
                s.ubc_cpus = 0;
                det!(self, "arch_tlbbatch_flush: IPIs [{}]", done.join(", "))
            }
            Arch::Arm64 => {
                for c in 0..self.cpus as usize {
                    for m in 0..self.mms as usize {
                        s.tlb[c][m] &= !s.doomed[c][m];
                        s.doomed[c][m] = 0;
                    }
                }
                "arch_tlbbatch_flush: DSB ISH completes every TLBI in flight".into()
            }
        }
    }

    fn try_to_unmap_flush(&self, s: &mut State) -> Detail {
        let mut d = if s.ubc_flush_required {
            let d = self.arch_tlbbatch_flush(s);
            s.ubc_flush_required = false;
            s.ubc_writable = false;
            d
        } else {
            "nothing pending".into()
        };
        if s.unlock_at_flush != 0 {
            d += &det!(
                self,
                "; folio_unlock of activated folios {:#04b}",
                s.unlock_at_flush
            );
            s.f_locked &= !s.unlock_at_flush;
            s.unlock_at_flush = 0;
        }
        d
    }

    fn try_to_unmap_flush_dirty(&self, s: &mut State) -> Detail {
        if self.has(Patch::UnsafeDeferDirtyFlush) {
            return det!(
                self,
                "UNSAFE policy: skipped (writable={}, flush stays pending)",
                s.ubc_writable
            );
        }
        if s.ubc_writable {
            self.try_to_unmap_flush(s)
        } else if s.ubc_flush_required {
            "writable not set: only clean PTEs pending, no flush".into()
        } else {
            "nothing pending".into()
        }
    }

    /// `flush_tlb_mm`: the whole mm, now (x86: bump tlb_gen, IPI the CPUs running it;
    /// arm64: TLBI by ASID + DSB).
    fn flush_tlb_mm(&self, s: &mut State, m: usize) -> Detail {
        self.flush_tlb_range(s, m, self.mapped[m])
    }

    /// `mprotect(PROT_READ)` of one page → `change_pte_range`: first
    /// `flush_tlb_batched_pending` (a deferred reclaim flush may leave writable entries for
    /// PTEs that are already gone, which this walk cannot see), then write-protect the PTE if
    /// present and flush it.
    fn mprotect(&self, s: &mut State, cpu: u8, p: u8) -> Event {
        let m = s.cpu_mm[cpu as usize] as usize;
        let bit = 1u8 << p;
        let mut d = det!(self, "cpu{cpu}: mprotect(PROT_READ) mm{m} page {p}: ");
        if s.batched_pending & (1 << m) != 0 {
            if self.mutation == Some(Mutation::NoFlushBatchedPending) {
                d += "MUTATION: flush_tlb_batched_pending skipped; ";
            } else {
                s.batched_pending &= !(1 << m);
                let flush = self.flush_tlb_mm(s, m);
                d += &det!(self, "flush_tlb_batched_pending → flush_tlb_mm ({flush}); ");
            }
        }
        s.wp[m] |= bit;
        if s.pte_present[m] & bit != 0 {
            let flush = self.flush_tlb_range(s, m, bit);
            d += &det!(self, "PTE write-protected, {flush}; returns");
        } else {
            d += "PTE already cleared: nothing to write-protect or flush; returns";
        }
        Event {
            function: "change_pte_range",
            detail: d.into_string(),
        }
    }

    // ---- shrink_folio_list ----

    fn next_unmap(&self, s: &State, f: u8, from_mm: u8, from_page: u8) -> Option<(u8, u8)> {
        let fo = self.folios[f as usize];
        for m in from_mm..self.mms {
            let start = if m == from_mm { from_page } else { fo.first };
            for p in start.max(fo.first)..fo.first + fo.nr {
                let bit = 1 << p;
                if self.mapped[m as usize] & bit != 0 && s.pte_present[m as usize] & bit != 0 {
                    return Some((m, p));
                }
            }
        }
        None
    }

    fn goto(&self, s: &mut State, phase: Phase, f: u8) {
        s.pc.phase = phase;
        s.pc.folio = f;
    }

    /// Pick the next folio of the main loop after `f`, or the dirty batch, or the end.
    fn next_folio(&self, s: &mut State, after: Option<u8>) {
        if s.pc.batch {
            if s.dirty_batch != 0 {
                let g = s.dirty_batch.trailing_zeros() as u8;
                self.goto(s, Phase::BatchPageout, g);
                return;
            }
            s.pc.batch = false;
            return self.main_loop_from(s, s.pc.resume);
        }
        let start = after.map(|a| a + 1).unwrap_or(0);
        self.main_loop_from(s, start);
    }

    fn main_loop_from(&self, s: &mut State, start: u8) {
        for g in start..self.nfolios() {
            if s.f_removed & (1 << g) == 0 {
                self.goto(s, Phase::Lock, g);
                return;
            }
        }
        if s.dirty_batch != 0 {
            s.pc.resume = self.nfolios();
            self.goto(s, Phase::BatchFlushDirty, 0);
        } else {
            self.goto(s, Phase::FinalFlush, 0);
        }
    }

    /// After the last `try_to_unmap_one`: the dirty/clean decision of shrink_folio_list.
    fn after_unmap(&self, s: &mut State, f: u8) -> Detail {
        let fo = self.folios[f as usize];
        let fb = 1u8 << f;
        if s.f_dirty & fb != 0 {
            match fo.kind {
                FolioKind::File if !self.file_pageout => {
                    let mut d = det!(self, "dirty file folio: ");
                    if self.has(Patch::FlushDirtyBeforeActivate) {
                        d += "try_to_unmap_flush_dirty (";
                        d += &self.try_to_unmap_flush_dirty(s);
                        d += "), ";
                    }
                    if self.flusher {
                        s.f_reclaim |= fb;
                    }
                    let unlock = if self.has(Patch::UnlockDirtyAfterFlush) && s.ubc_writable {
                        s.unlock_at_flush |= fb;
                        "still locked until try_to_unmap_flush"
                    } else {
                        s.f_locked &= !fb;
                        "folio_unlock"
                    };
                    self.next_folio(s, Some(f));
                    d + "PG_reclaim, activate (the flusher writes it), " + unlock
                }
                _ if self.has(Patch::BatchDirtyFlush) => {
                    s.f_locked &= !fb;
                    s.dirty_batch |= fb;
                    if s.dirty_batch.count_ones() as u8 >= self.dirty_batch {
                        s.pc.resume = f + 1;
                        self.goto(s, Phase::BatchFlushDirty, 0);
                    } else {
                        self.next_folio(s, Some(f));
                    }
                    "dirty: added to the dirty batch, folio_unlock while batched (seed 000)".into()
                }
                _ => {
                    self.goto(s, Phase::FlushDirty, f);
                    "dirty: to pageout".into()
                }
            }
        } else {
            self.goto(s, Phase::RemoveMapping, f);
            "clean: to __remove_mapping".into()
        }
    }

    /// One step of reclaim on CPU 0: the phase `s.pc` names, each a kernel function (or the
    /// part of `shrink_folio_list` between two of them) that runs as one atomic step.
    fn reclaim_step(&self, s: &mut State) -> (Event, Option<Violation>) {
        let pc = s.pc;
        let f = pc.folio;
        let (function, detail, viol): (&'static str, Detail, Option<Violation>) = match pc.phase {
            Phase::Lock => ("folio_trylock", self.folio_trylock(s, f), None),
            Phase::Unmap => ("try_to_unmap_one", self.try_to_unmap_one(s, f), None),
            Phase::FlushDirty => {
                let d = self.try_to_unmap_flush_dirty(s);
                self.goto(s, Phase::Pageout, f);
                let d = det!(self, "before folio {f}'s pageout: {d}");
                ("try_to_unmap_flush_dirty", d, None)
            }
            Phase::Pageout => ("pageout", self.pageout(s, f), None),
            Phase::BatchPageout => {
                // The dirty batch (seed 000) unlocked its folios: lock again before pageout.
                s.dirty_batch &= !(1 << f);
                s.f_locked |= 1 << f;
                let mut d = det!(self, "folio_lock again; ");
                d += &self.pageout(s, f);
                ("pageout", d, None)
            }
            Phase::RemoveMapping => ("__remove_mapping", self.remove_mapping(s, f), None),
            Phase::FreeBatchFlush | Phase::FinalFlush => {
                let d = self.try_to_unmap_flush(s);
                let next = if pc.phase == Phase::FinalFlush {
                    Phase::FinalFree
                } else {
                    Phase::FreeBatchFree
                };
                self.goto(s, next, f);
                ("try_to_unmap_flush", d, None)
            }
            Phase::FreeBatchFree | Phase::FinalFree => {
                let (d, viol) = self.free_unref_folios(s);
                self.after_free(s, pc);
                ("free_unref_folios", d, viol)
            }
            Phase::BatchFlushDirty => ("try_to_unmap_flush_dirty", self.flush_dirty_batch(s), None),
            Phase::Done => unreachable!("reclaim is done"),
        };
        (
            Event {
                function,
                detail: detail.into_string(),
            },
            viol,
        )
    }

    /// shrink_folio_list's head: `folio_trylock`, then for an anon folio `folio_alloc_swap`
    /// (add_to_swap) and `folio_mark_dirty`, then on to `try_to_unmap` if it is mapped.
    fn folio_trylock(&self, s: &mut State, f: u8) -> Detail {
        let fo = self.folios[f as usize];
        let fb = 1u8 << f;
        s.f_locked |= fb;
        let mut d = det!(self, "folio {f} ({:?}, {} page(s)) locked", fo.kind, fo.nr);
        if s.f_writeback & fb != 0 {
            d += &self.keep_under_writeback(s, f);
            return d;
        }
        if fo.kind == FolioKind::Anon && s.f_swapcache & fb == 0 {
            s.f_swapcache |= fb;
            s.f_dirty |= fb;
            d += "; folio_alloc_swap: added to swap cache; folio_mark_dirty";
        }
        self.unmap_next(s, f, (0, 0), "; not mapped; ", &mut d);
        d
    }

    /// try_to_unmap's rmap walk: the next mapping of folio `f` at or after `from` (mm, page)
    /// becomes the next `try_to_unmap_one`; with none left, shrink_folio_list decides.
    fn unmap_next(&self, s: &mut State, f: u8, from: (u8, u8), sep: &str, d: &mut Detail) {
        match self.next_unmap(s, f, from.0, from.1) {
            Some((m, p)) => {
                s.pc.mm = m;
                s.pc.page = p;
                self.goto(s, Phase::Unmap, f);
            }
            None => {
                *d += sep;
                *d += &self.after_unmap(s, f);
            }
        }
    }

    /// The PTEs one `try_to_unmap_one` call clears from page `p` of mm `m`: one PTE, or
    /// (seed 001, file large folio) the run of present PTEs from `p` to the folio's end, as
    /// `folio_pte_batch` finds it.
    fn folio_pte_batch(&self, s: &State, f: u8, m: usize, p: u8) -> u8 {
        let fo = self.folios[f as usize];
        let mut run = 1u8 << p;
        if self.has(Patch::FileLargeFolioUnmap) && fo.kind == FolioKind::File && fo.nr > 1 {
            let mut q = p + 1;
            while q < fo.first + fo.nr && s.pte_present[m] & (1 << q) != 0 {
                run |= 1 << q;
                q += 1;
            }
        }
        run
    }

    /// `try_to_unmap_one` on (s.pc.mm, s.pc.page): get_and_clear_ptes, then a deferred
    /// (batched) or immediate TLB flush, and the PTE's dirty bit moved to the folio.
    fn try_to_unmap_one(&self, s: &mut State, f: u8) -> Detail {
        let pc = s.pc;
        let m = pc.mm as usize;
        let p = pc.page;
        let run = self.folio_pte_batch(s, f, m, p);
        let dirty = if self.mutation == Some(Mutation::BatchDirtyFirstPteOnly) {
            s.pte_dirty[m] & (1 << p) != 0
        } else {
            s.pte_dirty[m] & run != 0
        };
        s.pte_present[m] &= !run;
        s.pte_dirty[m] &= !run;
        s.pte_ro[m] &= !run;
        let mut d = det!(
            self,
            "folio {f}: get_and_clear_ptes mm{m} {} (dirty={dirty}); ",
            list(run, "p")
        );
        if self.should_defer_flush(s, m) && self.luf_may_defer(s, f) {
            d += &self.luf_defer(s, m, run);
        } else if self.should_defer_flush(s, m) {
            d += &self.set_tlb_ubc_flush_pending(s, m, run, dirty);
        } else {
            d += &self.flush_tlb_range(s, m, run);
        }
        if dirty {
            s.f_dirty |= 1 << f;
            d += "; folio_mark_dirty";
        }
        let last = run.ilog2() as u8;
        self.unmap_next(s, f, (pc.mm, last + 1), "; ", &mut d);
        d
    }

    /// `pageout` of a locked dirty folio: PAGE_KEEP if a fault mapped it again
    /// (is_page_cache_freeable), else `folio_clear_dirty_for_io`, the synchronous write
    /// (swap_writeout or ->writepage) and `folio_unlock`, then on to `__remove_mapping`.
    fn pageout(&self, s: &mut State, f: u8) -> Detail {
        let fb = 1u8 << f;
        s.f_locked &= !fb;
        if self.refs_mapped(s, f) {
            // is_page_cache_freeable: the mapping's references make pageout keep it.
            self.next_folio(s, Some(f));
            return det!(
                self,
                "folio {f} was mapped again by a fault: PAGE_KEEP, folio_unlock"
            );
        }
        let fo = self.folios[f as usize];
        s.f_dirty &= !fb;
        s.unsaved &= !fo.mask();
        self.goto(s, Phase::RemoveMapping, f);
        let (writer, target) = match fo.kind {
            FolioKind::Anon => ("swap_writeout", "swap"),
            FolioKind::File => ("->writepage", "the file"),
        };
        det!(self,
            "folio {f}: folio_clear_dirty_for_io; {writer} copies {} to {target} (snapshot), folio_unlock; synchronous write done",
            list(fo.mask(), "p")
        )
    }

    /// Relock and `__remove_mapping`: the refcount freeze fails while the folio is mapped or
    /// dirty again; else it leaves the swap/page cache and joins free_folios, whose batch
    /// being full means `try_to_unmap_flush` + `free_unref_folios` now.
    fn remove_mapping(&self, s: &mut State, f: u8) -> Detail {
        let fb = 1u8 << f;
        s.f_locked |= fb;
        if self.refs_mapped(s, f) || (s.f_dirty | s.f_writeback) & fb != 0 {
            s.f_locked &= !fb;
            self.next_folio(s, Some(f));
            return det!(self,
                "folio {f}: refcount freeze fails (mapped) or folio dirty or under writeback again: keep, folio_unlock"
            );
        }
        s.f_removed |= fb;
        s.free_batch |= fb;
        if s.free_batch.count_ones() as u8 >= self.free_batch {
            self.goto(s, Phase::FreeBatchFlush, f);
        } else {
            self.next_folio(s, Some(f));
        }
        det!(
            self,
            "folio {f}: refcount frozen, deleted from the {} cache; added to free_folios",
            match self.folios[f as usize].kind {
                FolioKind::Anon => "swap",
                FolioKind::File => "page",
            }
        )
    }

    /// `free_unref_folios` of the free batch: a page freed while holding a store its
    /// swap/file copy lacks is a lost write (the first one found is reported).
    fn free_unref_folios(&self, s: &mut State) -> (Detail, Option<Violation>) {
        let mut viol = None;
        for g in bits(s.free_batch) {
            let mask = self.folios[g as usize].mask();
            if viol.is_none() {
                if let Some(p) = bits(s.unsaved & mask).next() {
                    viol = Some(Violation::LostWrite { page: p, folio: g });
                }
            }
            s.freed |= mask;
        }
        let d = det!(self, "frees folios {}", list(s.free_batch, "f"));
        s.free_batch = 0;
        (d, viol)
    }

    /// Where shrink_folio_list goes after freeing: on down the list after a full batch, or at
    /// the list's end another pass (the caller's retry) or done.
    fn after_free(&self, s: &mut State, pc: Pc) {
        if pc.phase == Phase::FreeBatchFree {
            self.next_folio(s, Some(pc.folio));
        } else if pc.pass + 1 < self.passes {
            s.pc.pass += 1;
            self.main_loop_from(s, 0);
        } else {
            self.goto(s, Phase::Done, 0);
        }
    }

    /// Seed 000: one `try_to_unmap_flush_dirty` for the whole dirty batch, then the batch's
    /// pageouts in folio order.
    fn flush_dirty_batch(&self, s: &mut State) -> Detail {
        let d = self.try_to_unmap_flush_dirty(s);
        s.pc.batch = true;
        let g = s.dirty_batch.trailing_zeros() as u8;
        self.goto(s, Phase::BatchPageout, g);
        det!(
            self,
            "once for the dirty batch {}: {d}",
            list(s.dirty_batch, "f")
        )
    }

    /// Consistency of the model itself (not the property): checked on every state by the
    /// tests, so that a modelling slip shows up as a failure rather than a vacuous pass.
    pub fn invariants(&self, s: &State) -> Result<(), String> {
        for m in 0..self.mms as usize {
            if s.pte_dirty[m] & !s.pte_present[m] != 0 {
                return Err(format!("mm{m}: dirty bit on a cleared PTE"));
            }
            if s.pte_present[m] & !self.mapped[m] != 0 {
                return Err(format!("mm{m}: PTE outside its mapping"));
            }
        }
        for (f, fo) in self.folios.iter().enumerate() {
            let mask = fo.mask();
            let removed = s.f_removed & (1 << f) != 0;
            if removed && (0..self.mms as usize).any(|m| s.pte_present[m] & mask != 0) {
                return Err(format!(
                    "folio {f} removed from its mapping but still mapped"
                ));
            }
            if s.freed & mask != 0 && !removed {
                return Err(format!("folio {f} freed without __remove_mapping"));
            }
        }
        self.writeback_invariants(s)?;
        if s.ubc_writable && !s.ubc_flush_required {
            return Err("tlb_ubc.writable without flush_required".into());
        }
        if s.pc.phase == Phase::Done && (s.free_batch != 0 || s.dirty_batch != 0) {
            return Err("reclaim done with folios still batched".into());
        }
        for c in 1..self.cpus as usize {
            for m in 0..self.mms as usize {
                let e = s.tlb[c][m];
                if e & !self.mapped[m] != 0 || s.doomed[c][m] & !e != 0 {
                    return Err(format!("cpu{c} mm{m}: entry outside mapping / stray TLBI"));
                }
                if self.mutation.is_some() {
                    continue;
                }
                // The flush machinery's own invariant: an entry whose PTE is gone, or is now
                // clean (page_mkclean; an entry is writable+dirty only if its PTE was dirty),
                // is either covered by a stale tlb_gen (x86) or has its TLBI in flight (arm64).
                let orphan = e & !(s.pte_present[m] & s.pte_dirty[m]);
                let covered = match self.arch {
                    Arch::X86 => s.stale[c] & (1 << m) != 0,
                    Arch::Arm64 => orphan & !s.doomed[c][m] == 0,
                };
                // Likewise a writable entry for a page mprotect made read-only.
                let ro = e & s.wp[m];
                let ro_covered = match self.arch {
                    Arch::X86 => s.stale[c] & (1 << m) != 0,
                    Arch::Arm64 => false,
                };
                if ro != 0 && !ro_covered {
                    return Err(format!(
                        "cpu{c} mm{m}: writable entries {} for read-only pages with no flush owed",
                        list(ro, "p")
                    ));
                }
                if orphan != 0 && !covered {
                    return Err(format!(
                        "cpu{c} mm{m}: entries {} for cleared PTEs with no flush owed",
                        list(orphan, "p")
                    ));
                }
            }
        }
        Ok(())
    }

    /// At the end of reclaim: a page newer than its copy whose folio is clean and not mapped by
    /// a dirty PTE would be freed without writeout by the next reclaim.
    pub fn latent_loss(&self, s: &State) -> Option<Violation> {
        for p in bits(self.newer_than_written(s) & !s.freed) {
            let f = self.page_folio[p as usize];
            let pte_dirty =
                (0..self.mms as usize).any(|m| s.pte_present[m] & s.pte_dirty[m] & (1 << p) != 0);
            if s.f_dirty & (1 << f) == 0 && !pte_dirty {
                return Some(Violation::LatentLostWrite { page: p, folio: f });
            }
        }
        None
    }

    /// A one-line summary of what is pending, for the trace.
    pub fn pending(&self, s: &State) -> String {
        let mut out = Vec::new();
        if s.ubc_flush_required {
            let mut t = String::from("tlb_ubc: flush_required");
            if s.ubc_writable {
                t += "+writable";
            }
            if self.arch == Arch::X86 {
                t += &format!(" cpumask={}", list(s.ubc_cpus, "cpu"));
            }
            out.push(t);
        }
        let mut stale_entries = Vec::new();
        for c in 1..self.cpus as usize {
            for m in 0..self.mms as usize {
                let e = s.tlb[c][m];
                if e == 0 {
                    continue;
                }
                let stale = e & !s.pte_present[m];
                let mut t = format!("cpu{c}:mm{m}{}", list(e, "p"));
                if stale != 0 {
                    t += &format!(" STALE{}", list(stale, "p"));
                }
                if s.doomed[c][m] != 0 {
                    t += &format!(" tlbi-in-flight{}", list(s.doomed[c][m], "p"));
                }
                if self.arch == Arch::X86 && s.stale[c] & (1 << m) != 0 {
                    t += " gen-behind";
                }
                stale_entries.push(t);
            }
        }
        if !stale_entries.is_empty() {
            out.push(format!("W+D TLB entries: {}", stale_entries.join(" ")));
        }
        if let Some(t) = self.writeback_pending(s) {
            out.push(t);
        }
        if out.is_empty() {
            "-".into()
        } else {
            out.join("; ")
        }
    }
}

/// How a store reached memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StoreVia {
    /// A cached writable+dirty TLB entry, no page walk (works even if the PTE is cleared).
    TlbHit,
    /// A page walk that found the PTE present, set its dirty bit and filled the TLB.
    PageWalk,
    /// A fault on a cleared PTE (`do_swap_page` / `filemap_fault`) that mapped the folio back.
    Fault,
    /// A write-protect fault on a clean read-only file PTE (`do_wp_page`): the folio is
    /// dirtied and the PTE made writable+dirty.
    WpFault,
}

/// A step in kernel terms, structured for replay by another engine (the simulator): every
/// reclaim step names its `shrink_folio_list` stage and operands, every user step its CPU.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum KernelStep {
    FolioTrylock {
        folio: u8,
        /// `folio_alloc_swap` + `folio_mark_dirty` happened in the same step.
        alloc_swap: bool,
    },
    TryToUnmapOne {
        folio: u8,
        mm: u8,
        /// PTEs cleared by this call (one, or a file large folio's run with seed 001).
        pages: Vec<u8>,
        /// Whether any cleared PTE was dirty.
        pte_dirty: bool,
        /// `set_tlb_ubc_flush_pending` (true) or `flush_tlb_range` at once (false).
        deferred: bool,
        /// LUF took the deferred flush (to the frame's reallocation), not `tlb_ubc`.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        luf: bool,
    },
    TryToUnmapFlushDirty {
        flushed: bool,
    },
    Pageout {
        folio: u8,
        /// False when the folio was mapped again and pageout kept it.
        written: bool,
    },
    RemoveMapping {
        folio: u8,
        removed: bool,
    },
    TryToUnmapFlush {
        flushed: bool,
    },
    FreeUnrefFolios {
        folios: Vec<u8>,
    },
    Store {
        cpu: u8,
        mm: u8,
        page: u8,
        via: StoreVia,
    },
    EnterLazyTlb {
        cpu: u8,
    },
    SwitchMm {
        cpu: u8,
        from: u8,
        to: u8,
        was_lazy: bool,
        flushed: bool,
    },
    TrimCpumask {
        cpu: u8,
        mm: u8,
    },
    TlbiComplete {
        cpu: u8,
        mm: u8,
        page: u8,
    },
    Mprotect {
        cpu: u8,
        mm: u8,
        page: u8,
    },
    /// The flusher: `folio_clear_dirty_for_io` (`page_mkclean` write-protected and cleaned
    /// `pages`) and `folio_start_writeback`.
    FolioClearDirtyForIo {
        folio: u8,
        pages: Vec<u8>,
    },
    FolioEndWriteback {
        folio: u8,
        /// PG_reclaim was set: `folio_rotate_reclaimable`.
        rotated: bool,
    },
}

impl Model {
    /// Describe the step `choice` took from `before` to `after` in kernel terms.
    pub fn kernel_step(&self, before: &State, after: &State, choice: Choice) -> KernelStep {
        let f = before.pc.folio;
        let fb = 1u8 << f;
        match choice {
            Choice::Reclaim => match before.pc.phase {
                Phase::Lock => KernelStep::FolioTrylock {
                    folio: f,
                    alloc_swap: after.f_swapcache & fb != before.f_swapcache & fb,
                },
                Phase::Unmap => {
                    let m = before.pc.mm as usize;
                    let cleared = before.pte_present[m] & !after.pte_present[m];
                    KernelStep::TryToUnmapOne {
                        folio: f,
                        mm: m as u8,
                        pages: bits(cleared).collect(),
                        pte_dirty: before.pte_dirty[m] & cleared != 0,
                        deferred: self.should_defer_flush(before, m),
                        luf: self.should_defer_flush(before, m) && self.luf_may_defer(before, f),
                    }
                }
                Phase::FlushDirty | Phase::BatchFlushDirty => KernelStep::TryToUnmapFlushDirty {
                    flushed: before.ubc_flush_required && !after.ubc_flush_required,
                },
                Phase::Pageout | Phase::BatchPageout => KernelStep::Pageout {
                    folio: f,
                    written: after.pc.phase == Phase::RemoveMapping && after.pc.folio == f,
                },
                Phase::RemoveMapping => KernelStep::RemoveMapping {
                    folio: f,
                    removed: after.f_removed & fb != 0,
                },
                Phase::FreeBatchFlush | Phase::FinalFlush => KernelStep::TryToUnmapFlush {
                    flushed: before.ubc_flush_required,
                },
                Phase::FreeBatchFree | Phase::FinalFree => KernelStep::FreeUnrefFolios {
                    folios: bits(before.free_batch).collect(),
                },
                Phase::Done => unreachable!("no reclaim step after Done"),
            },
            Choice::Store { cpu, page } => {
                let c = cpu as usize;
                let m = before.cpu_mm[c] as usize;
                let bit = 1u8 << page;
                let via = if before.tlb[c][m] & bit != 0 {
                    StoreVia::TlbHit
                } else if before.pte_present[m] & before.pte_ro[m] & bit != 0 {
                    StoreVia::WpFault
                } else if before.pte_present[m] & bit != 0 {
                    StoreVia::PageWalk
                } else {
                    StoreVia::Fault
                };
                KernelStep::Store {
                    cpu,
                    mm: m as u8,
                    page,
                    via,
                }
            }
            Choice::SwitchToIdle { cpu } => KernelStep::EnterLazyTlb { cpu },
            Choice::SwitchMm { cpu, mm } => {
                let c = cpu as usize;
                KernelStep::SwitchMm {
                    cpu,
                    from: before.cpu_mm[c],
                    to: mm,
                    was_lazy: before.lazy & (1 << cpu) != 0,
                    flushed: before.stale[c] & (1 << mm) != 0 && after.stale[c] & (1 << mm) == 0,
                }
            }
            Choice::TrimCpumask { cpu, mm } => KernelStep::TrimCpumask { cpu, mm },
            Choice::TlbiComplete { cpu, mm, page } => KernelStep::TlbiComplete { cpu, mm, page },
            Choice::Mprotect { cpu, page } => KernelStep::Mprotect {
                cpu,
                mm: before.cpu_mm[cpu as usize],
                page,
            },
            Choice::Flusher { folio } => KernelStep::FolioClearDirtyForIo {
                folio,
                pages: bits(
                    (0..self.mms as usize)
                        .map(|m| {
                            (after.pte_ro[m] & !before.pte_ro[m])
                                | (before.pte_dirty[m] & !after.pte_dirty[m])
                        })
                        .fold(0, |a, b| a | b),
                )
                .collect(),
            },
            Choice::EndWriteback { folio } => KernelStep::FolioEndWriteback {
                folio,
                rotated: before.f_reclaim & (1 << folio) != 0,
            },
        }
    }
}

// After the macros above, which it uses.
mod page_writeback;
