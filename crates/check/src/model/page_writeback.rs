//! The dirty page cache as the flusher writes it (mm/page-writeback.c, mm/rmap.c,
//! mm/filemap.c), for a [`Model`] with `flusher` on: writenotify's read-only clean file PTEs
//! and the write-protect fault that dirties the folio (`do_wp_page`), the flusher's
//! `folio_clear_dirty_for_io` → `page_mkclean` (each dirty or writable PTE write-protected and
//! cleaned by `ptep_clear_flush`: the TLB flush is immediate) → `folio_start_writeback` with the
//! device's snapshot of the content at submission, the device's `folio_end_writeback`, and
//! shrink_folio_list keeping a folio under writeback (memcg reclaim on cgroup v2: case 2).
//!
//! The flusher is a kernel thread with no user mm: it holds no TLB entry, so which CPU runs it
//! does not matter here (a user CPU giving way to it is `enter_lazy_tlb`). Each flusher step
//! is atomic: folio lock, the whole rmap walk of `page_mkclean`, PG_dirty → PG_writeback,
//! unlock (an abstraction: the kernel cleans one mapping at a time under its PTE lock).

use super::*;

impl Model {
    /// Pages of the file folio (0 with none).
    pub fn file_mask(&self) -> u8 {
        self.folios
            .iter()
            .filter(|f| f.kind == FolioKind::File)
            .fold(0, |a, f| a | f.mask())
    }

    /// The flusher may write a dirty file folio that is not under writeback, not locked and
    /// still in the page cache (write_cache_pages skips the others: WB_SYNC_NONE); the device
    /// may complete any folio under writeback.
    pub(super) fn writeback_choices(&self, s: &State, out: &mut Vec<Choice>) {
        for (f, fo) in self.folios.iter().enumerate() {
            let fb = 1u8 << f;
            if fo.kind == FolioKind::File
                && s.f_dirty & fb != 0
                && (s.f_writeback | s.f_locked | s.f_removed) & fb == 0
            {
                out.push(Choice::Flusher { folio: f as u8 });
            }
        }
        for f in bits(s.f_writeback) {
            out.push(Choice::EndWriteback { folio: f });
        }
    }

    /// A store's content lands in page `p`: newer than its backing copy, and newer than the
    /// snapshot an in-flight writeback of its folio is writing.
    pub(super) fn land(&self, s: &mut State, p: u8) {
        let bit = 1u8 << p;
        s.unsaved |= bit;
        if s.f_writeback & (1 << self.page_folio[p as usize]) != 0 {
            s.wb_newer |= bit;
        }
    }

    /// A store on a clean write-protected file PTE: `do_wp_page` → `wp_page_shared`
    /// (`filemap_page_mkwrite` under the folio lock, `folio_mark_dirty`), the PTE made
    /// writable+dirty, the store retried through a new writable+dirty TLB entry.
    pub(super) fn do_wp_page(&self, s: &mut State, cpu: u8, p: u8) -> Event {
        let c = cpu as usize;
        let m = s.cpu_mm[c] as usize;
        let bit = 1u8 << p;
        let f = self.page_folio[p as usize];
        s.pte_ro[m] &= !bit;
        s.pte_dirty[m] |= bit;
        s.tlb[c][m] |= bit;
        s.f_dirty |= 1 << f;
        self.land(s, p);
        Event {
            function: "do_wp_page",
            detail: dets!(self,
                "cpu{cpu} stores to mm{m} page {p}: write-protect fault on the clean PTE; folio {f} marked dirty, PTE writable+dirty, store retried{}",
                if s.f_writeback & (1 << f) != 0 { " (folio still under writeback)" } else { "" }
            ),
        }
    }

    /// `page_mkclean` (folio_mkclean → page_vma_mkclean_one): every present PTE of folio `f`
    /// that is dirty or writable is cleared with `ptep_clear_flush` and set back clean and
    /// write-protected. Returns whether a PTE was dirty, and the detail.
    fn page_mkclean(&self, s: &mut State, f: u8) -> (bool, Detail) {
        let mask = self.folios[f as usize].mask();
        let mut dirty = false;
        let mut d = Detail::from("page_mkclean:");
        if !self.describe {
            d = Detail::Off;
        }
        for m in 0..self.mms as usize {
            let writable = s.pte_present[m] & !(s.pte_ro[m] | s.wp[m]);
            let targets = mask & s.pte_present[m] & (s.pte_dirty[m] | writable);
            if targets == 0 {
                continue;
            }
            dirty |= s.pte_dirty[m] & targets != 0;
            s.pte_ro[m] |= targets;
            s.pte_dirty[m] &= !targets;
            let flush = if self.mutation == Some(Mutation::MkcleanNoFlush) {
                Detail::from("MUTATION: no flush")
            } else {
                self.flush_tlb_range(s, m, targets)
            };
            d += &det!(
                self,
                " mm{m} {} write-protected and cleaned, {flush};",
                list(targets, "p")
            );
        }
        if self.describe && d.as_str() == "page_mkclean:" {
            d = "page_mkclean: no dirty or writable PTE;".into();
        }
        (dirty, d)
    }

    /// The flusher writes folio `f` (writeback_get_folio → folio_prepare_writeback →
    /// `folio_clear_dirty_for_io`, ->writepages): under the folio lock, `page_mkclean` moves
    /// the PTEs' dirty bits to the folio, PG_dirty is cleared, PG_writeback set, and the device
    /// takes its snapshot of the content; folio_unlock.
    pub(super) fn flusher_writeback(&self, s: &mut State, f: u8) -> Event {
        let fb = 1u8 << f;
        let (pte_dirty, mk) = self.page_mkclean(s, f);
        s.f_dirty &= !fb;
        s.f_writeback |= fb;
        s.wb_newer &= !self.folios[f as usize].mask();
        Event {
            function: "folio_clear_dirty_for_io",
            detail: dets!(self,
                "flusher: folio {f} locked; {mk} {}PG_dirty cleared; folio_start_writeback: the device writes {} as they are now (snapshot); folio_unlock",
                if pte_dirty { "folio_mark_dirty from the PTEs' dirty bits, " } else { "" },
                list(self.folios[f as usize].mask(), "p")
            ),
        }
    }

    /// The device completes folio `f`: `folio_end_writeback` clears PG_writeback (the file
    /// now holds the snapshot) and, with PG_reclaim set, `folio_rotate_reclaimable` moves it
    /// to the inactive tail (reclaim's list order is fixed here: no further effect).
    pub(super) fn folio_end_writeback(&self, s: &mut State, f: u8) -> Event {
        let fb = 1u8 << f;
        let mask = self.folios[f as usize].mask();
        s.f_writeback &= !fb;
        s.unsaved = (s.unsaved & !mask) | (s.wb_newer & mask);
        s.wb_newer &= !mask;
        let rotated = s.f_reclaim & fb != 0;
        s.f_reclaim &= !fb;
        Event {
            function: "folio_end_writeback",
            detail: dets!(
                self,
                "the device has written folio {f}'s snapshot to the file; PG_writeback cleared{}",
                if rotated {
                    "; PG_reclaim: folio_rotate_reclaimable"
                } else {
                    ""
                }
            ),
        }
    }

    /// shrink_folio_list meets a folio under writeback (memcg reclaim, cgroup v2:
    /// writeback_throttling_sane, case 2): folio_set_reclaim, activate, folio_unlock. It is
    /// neither unmapped nor freed.
    pub(super) fn keep_under_writeback(&self, s: &mut State, f: u8) -> Detail {
        let fb = 1u8 << f;
        s.f_reclaim |= fb;
        s.f_locked &= !fb;
        self.next_folio(s, Some(f));
        "; PG_writeback: folio_set_reclaim, activate (kept, not unmapped), folio_unlock".into()
    }

    /// Pages whose newest content will not be in the file once the writes in flight
    /// complete: stored after their folio's writeback snapshot, or newer than the file and
    /// not under writeback.
    pub fn newer_than_written(&self, s: &State) -> u8 {
        let wb: u8 = bits(s.f_writeback).fold(0, |a, f| a | self.folios[f as usize].mask());
        (s.unsaved & !wb) | s.wb_newer
    }

    /// The writeback states' own consistency.
    pub(super) fn writeback_invariants(&self, s: &State) -> Result<(), String> {
        for m in 0..self.mms as usize {
            if s.pte_ro[m] & !(s.pte_present[m] & !s.pte_dirty[m]) != 0 {
                return Err(format!("mm{m}: write-protected PTE not present and clean"));
            }
        }
        let wb: u8 = bits(s.f_writeback).fold(0, |a, f| a | self.folios[f as usize].mask());
        if s.wb_newer & !wb != 0 {
            return Err("a page newer than a snapshot with no writeback in flight".into());
        }
        if s.f_writeback & s.f_removed != 0 || s.freed & wb != 0 {
            return Err("a folio under writeback removed from the page cache or freed".into());
        }
        Ok(())
    }

    /// PG_writeback and PG_reclaim folios for the trace's `pending:` line.
    pub(super) fn writeback_pending(&self, s: &State) -> Option<String> {
        if s.f_writeback | s.f_reclaim == 0 {
            return None;
        }
        let mut t = Vec::new();
        for f in bits(s.f_writeback) {
            let newer = s.wb_newer & self.folios[f as usize].mask();
            t.push(if newer != 0 {
                format!(
                    "f{f} PG_writeback ({} newer than its snapshot)",
                    list(newer, "p")
                )
            } else {
                format!("f{f} PG_writeback")
            });
        }
        if s.f_reclaim != 0 {
            t.push(format!("PG_reclaim {}", list(s.f_reclaim, "f")));
        }
        Some(t.join(" "))
    }
}
