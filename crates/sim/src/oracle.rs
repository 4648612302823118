//! The lost-write oracle, on in every run unless `sim.oracle = false`.
//!
//! Each frame (folio) carries a content version, bumped by every store that lands in it, and
//! the version its backing copy (swap slot or file) was last written from. `pageout`
//! (swap_writeout) and the flusher's writeback take that snapshot; a folio read in from its
//! copy starts equal to it. When reclaim frees a folio whose version is newer than its
//! snapshot, a store landed after the copy was written and the data is gone: a **lost write**,
//! the race seed 003's cover letter warns of. A store through a TLB entry whose frame was freed
//! (or now holds another page) is a **use-after-free write**. Findings do not stop the run;
//! [`crate::run`] fails at the end and re-runs the scenario (it is deterministic) watching the
//! first finding's page to print the events that led to it.

use crate::kernel::{Backing, CpuId, Kernel, MmId};
use crate::mm::folio::{pg, Pfn};
use crate::mm::pgtable::{pte_pfn, pte_present};
use serde::Serialize;

/// Whose page: an anonymous mm's virtual page or a file's page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Owner {
    Anon { mm: usize },
    File { file: usize },
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Owner::Anon { mm } => write!(f, "mm {mm}"),
            Owner::File { file } => write!(f, "file {file}"),
        }
    }
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Finding {
    /// Reclaim freed a frame holding a store that its swap/file copy lacks.
    LostWrite {
        owner: Owner,
        /// The folio's first page and its size in pages.
        page: u64,
        pages: u64,
        pfn: Pfn,
        cpu: CpuId,
        time_ns: u64,
    },
    /// A store landed on a frame that was freed (or freed and given to another page).
    UseAfterFreeWrite {
        owner: Owner,
        page: u64,
        pfn: Pfn,
        cpu: CpuId,
        time_ns: u64,
    },
}

impl Finding {
    pub fn page(&self) -> (Owner, u64) {
        match *self {
            Finding::LostWrite { owner, page, .. }
            | Finding::UseAfterFreeWrite { owner, page, .. } => (owner, page),
        }
    }
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Finding::LostWrite {
                owner,
                page,
                pages,
                pfn,
                cpu,
                time_ns,
            } => write!(
                f,
                "LOST WRITE: {owner} page {page}{}: reclaim on cpu{cpu} freed pfn {pfn} at {time_ns} ns holding a store its swap/file copy lacks",
                if *pages > 1 { format!(" (folio of {pages} pages)") } else { String::new() }
            ),
            Finding::UseAfterFreeWrite {
                owner,
                page,
                pfn,
                cpu,
                time_ns,
            } => write!(
                f,
                "USE-AFTER-FREE WRITE: cpu{cpu} stored to {owner} page {page} at {time_ns} ns through a stale TLB entry for pfn {pfn}, which was freed"
            ),
        }
    }
}

#[derive(Default)]
pub struct Oracle {
    pub enabled: bool,
    /// Per frame: stores landed in it (wrapping), and that count when its copy was written,
    /// side by side (reclaim reads and writes both for each folio it frees: one cache line).
    frames: Vec<Frame>,
    /// Findings, in order (at most `MAX_FINDINGS` kept; `count` has them all).
    pub findings: Vec<Finding>,
    pub lost_writes: u64,
    pub use_after_free_writes: u64,
    /// A folio's pages to trace (owner, first page, pages), and the events seen for them
    /// (the re-run after a finding).
    pub watch: Option<(Owner, u64, u64)>,
    pub trace: Vec<String>,
    /// The watched page was unmapped and not yet freed: its flushes belong in the trace.
    pub watch_live: bool,
}

/// One frame's content version and the version its copy holds.
#[derive(Clone, Copy, Debug, Default)]
struct Frame {
    version: u32,
    snapshot: u32,
}

const MAX_FINDINGS: usize = 16;
const MAX_TRACE: usize = 200;

impl Oracle {
    pub fn new(enabled: bool) -> Oracle {
        Oracle {
            enabled,
            ..Oracle::default()
        }
    }

    fn frame(&mut self, pfn: Pfn) -> &mut Frame {
        let i = pfn as usize;
        if self.frames.len() <= i {
            self.frames.resize(i + 1, Frame::default());
        }
        &mut self.frames[i]
    }

    /// A frame goes back to the allocator: the next folio there starts equal to its copy.
    fn reset(&mut self, pfn: Pfn) {
        *self.frame(pfn) = Frame::default();
    }

    fn record(&mut self, f: Finding) {
        let (o, p) = f.page();
        if self.watching(o, p) {
            // The watched page's story ends here.
            let t = match f {
                Finding::LostWrite { time_ns, .. } | Finding::UseAfterFreeWrite { time_ns, .. } => {
                    time_ns
                }
            };
            self.note(t, format!("==> {f}"));
            self.watch = None;
            self.watch_live = false;
        }
        match f {
            Finding::LostWrite { .. } => self.lost_writes += 1,
            Finding::UseAfterFreeWrite { .. } => self.use_after_free_writes += 1,
        }
        if self.findings.len() < MAX_FINDINGS {
            self.findings.push(f);
        }
    }

    /// Is (owner, page) the watched page, or in the watched folio?
    pub fn watching(&self, owner: Owner, page: u64) -> bool {
        self.watch
            .is_some_and(|(o, first, nr)| o == owner && (first..first + nr).contains(&page))
    }

    /// Add a line to the watched page's trace.
    /// Keeps the last `MAX_TRACE` lines: the events right before the finding matter. Every
    /// reclaimer's flushes are noted, so with two reclaiming at once the page's own unmap can
    /// be a couple of hundred lines back.
    pub fn note(&mut self, time_ns: u64, what: String) {
        if self.trace.len() == MAX_TRACE {
            self.trace.remove(0);
        }
        self.trace.push(format!("{time_ns:>14} ns  {what}"));
    }
}

impl Kernel {
    /// The owner of the pages `mm` maps.
    pub fn oracle_owner_of_mm(&self, mm: MmId) -> Owner {
        match self.mms[mm].backing {
            Backing::Anon => Owner::Anon { mm },
            Backing::File(file) => Owner::File { file },
        }
    }

    /// The owner of a folio's pages and its first page.
    fn oracle_owner_of_folio(&self, pfn: Pfn) -> (Owner, u64) {
        let f = self.folios.get(pfn);
        let owner = if f.is_anon() {
            Owner::Anon {
                mm: f.owner as usize,
            }
        } else {
            Owner::File {
                file: f.owner as usize,
            }
        };
        (owner, f.index as u64)
    }

    /// A store by `cpu` to page `vp` of `mm` landed in frame `pfn` (via the TLB or a walk).
    /// `stale`: the translation it used no longer matches the PTE.
    pub fn oracle_store(&mut self, cpu: CpuId, mm: MmId, vp: u64, pfn: Pfn, stale: bool) {
        if !self.oracle.enabled {
            return;
        }
        if !stale && self.oracle.watch.is_none() {
            // The hot path: one counter bump.
            if let Some(f) = self.oracle.frames.get_mut(pfn as usize) {
                f.version = f.version.wrapping_add(1);
                return;
            }
        }
        let owner = self.oracle_owner_of_mm(mm);
        let now = self.cpus[cpu].clock;
        if stale {
            let f = *self.folios.get(pfn);
            let (fo, first) = self.oracle_owner_of_folio(pfn);
            let same =
                f.test(pg::ALLOCATED) && fo == owner && (first..first + f.nr_pages()).contains(&vp);
            if !same {
                // The frame went back to the allocator: the store is lost, and if the frame
                // was reused it corrupts another page.
                self.oracle.record(Finding::UseAfterFreeWrite {
                    owner,
                    page: vp,
                    pfn,
                    cpu,
                    time_ns: now,
                });
                if self.oracle.watching(owner, vp) {
                    self.oracle.note(
                        now,
                        format!("cpu{cpu}: store through a stale TLB entry to freed pfn {pfn}"),
                    );
                }
                return;
            }
        }
        let f = self.oracle.frame(pfn);
        f.version = f.version.wrapping_add(1);
        if self.oracle.watching(owner, vp) {
            let how = if stale {
                let pending = self.mms[mm].tlb_gen > self.cpus[cpu].tlb.local_gen[mm];
                format!(
                    "cpu{cpu}: store through a STALE TLB entry (PTE already cleared; this CPU's flush {}), lands in pfn {pfn}",
                    if pending { "still pending" } else { "not pending" }
                )
            } else {
                format!("cpu{cpu}: store to pfn {pfn}")
            };
            self.oracle.note(now, how);
        }
    }

    /// A folio's owner, first page, pages and the CPU's clock.
    fn oracle_folio(&self, cpu: CpuId, pfn: Pfn) -> (Owner, u64, u64, u64) {
        let (owner, first) = self.oracle_owner_of_folio(pfn);
        let nr = self.folios.get(pfn).nr_pages();
        (owner, first, nr, self.cpus[cpu].clock)
    }

    /// Start loading `pfn`'s frame record: reclaim reads and writes it at pageout, after the
    /// rmap walk, and with many CPUs it is far from every cache by then (a hint only).
    #[inline]
    pub fn oracle_prefetch(&self, pfn: Pfn) {
        if let Some(f) = self.oracle.frames.get(pfn as usize) {
            crate::prefetch::prefetch(f);
        }
    }

    /// pageout / writeback: the copy now holds what the folio's pages hold.
    pub fn oracle_writeout(&mut self, cpu: CpuId, pfn: Pfn, what: &str) {
        if !self.oracle.enabled {
            return;
        }
        let f = self.oracle.frame(pfn);
        f.snapshot = f.version;
        if self.oracle.watch.is_none() {
            // The hot path: nothing to trace.
            return;
        }
        let (owner, first, nr, now) = self.oracle_folio(cpu, pfn);
        if self.oracle.watching(owner, first) {
            self.oracle.note(
                now,
                format!("cpu{cpu}: {what} writes pfn {pfn} ({nr} page(s)) to its copy (snapshot)"),
            );
        }
    }

    /// free_unref_folios: every page of the folio must be in its copy.
    pub fn oracle_free(&mut self, cpu: CpuId, pfn: Pfn) {
        if !self.oracle.enabled {
            return;
        }
        let f = *self.oracle.frame(pfn);
        if f.version == f.snapshot && self.oracle.watch.is_none() {
            // The hot path: nothing lost, nothing to trace.
            self.oracle.reset(pfn);
            return;
        }
        let (owner, first, nr, now) = self.oracle_folio(cpu, pfn);
        if f.version != f.snapshot {
            self.oracle.record(Finding::LostWrite {
                owner,
                page: first,
                pages: nr,
                pfn,
                cpu,
                time_ns: now,
            });
        }
        self.oracle.reset(pfn);
        if self.oracle.watching(owner, first) {
            self.oracle
                .note(now, format!("cpu{cpu}: free_unref_folios frees pfn {pfn}"));
            self.oracle.watch_live = false;
        }
    }

    /// A folio freed without reclaim (exit_mmap of an OOM-killed mm): its content is gone,
    /// legitimately.
    pub fn oracle_discard(&mut self, pfn: Pfn) {
        if self.oracle.enabled {
            self.oracle.reset(pfn);
        }
    }

    /// Trace hook for try_to_unmap: a PTE of the watched page was cleared.
    pub fn oracle_unmapped(&mut self, cpu: CpuId, mm: MmId, vp: u64, deferred: bool, luf: bool) {
        let owner = self.oracle_owner_of_mm(mm);
        if !self.oracle.watching(owner, vp) {
            return;
        }
        let now = self.cpus[cpu].clock;
        let holders: Vec<String> = (0..self.nr_cpus())
            .filter(|&c| {
                self.cpus[c]
                    .tlb
                    .lookup(mm, vp)
                    .is_some_and(|(_, fl)| fl & crate::arch::x86::tlb::TLB_WRITABLE != 0)
            })
            .map(|c| format!("cpu{c}"))
            .collect();
        self.oracle.watch_live = true;
        let how = if deferred && luf {
            "LUF: flush deferred to the frame's reallocation"
        } else if deferred {
            "set_tlb_ubc_flush_pending (flush deferred)"
        } else {
            "flushed at once"
        };
        self.oracle.note(
            now,
            format!(
                "cpu{cpu}: try_to_unmap clears the PTE, {how}; writable TLB entries on: {}",
                if holders.is_empty() {
                    "none".to_string()
                } else {
                    holders.join(", ")
                }
            ),
        );
    }

    /// Is the PTE for (mm, vp) still the translation `pfn`?
    pub fn pte_maps(&self, mm: MmId, vp: u64, pfn: Pfn) -> bool {
        let pte = self.mms[mm].ptes[vp as usize];
        pte_present(pte) && pte_pfn(pte) == pfn
    }
}

impl Kernel {
    /// Trace hook for the flushes that follow an unmap of the watched page.
    pub fn oracle_flush(&mut self, cpu: CpuId, what: &str) {
        if self.oracle.watch_live {
            let now = self.cpus[cpu].clock;
            self.oracle.note(now, format!("cpu{cpu}: {what}"));
        }
    }
}

/// The failure text of a run with findings: counts, the first finding, its page's events.
pub fn report(o: &Oracle, first: &Finding, trace: &[String]) -> String {
    let mut s = format!(
        "the lost-write oracle fired: {} lost write(s), {} use-after-free write(s)\nfirst: {first}\n",
        o.lost_writes, o.use_after_free_writes
    );
    for f in o.findings.iter().skip(1) {
        s += &format!("  also: {f}\n");
    }
    let (owner, page) = first.page();
    s += &format!("events for {owner} page {page} (simulated time):\n");
    for line in trace {
        s += &format!("  {line}\n");
    }
    s
}
