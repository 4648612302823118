//! End-of-run invariant checks: LRU membership, charge, counters, TLB coherence,
//! and the accounting that ties PTEs, folios, swap slots and the memcg together.

use crate::kernel::{Backing, Kernel};
use crate::mm::folio::{pg, LRU_FBATCH, LRU_NONE, MAX_NR_GENS, NR_ALL_LISTS};
use crate::mm::pgtable::*;
use crate::mm::vmstat::VmEventItem::*;

impl Kernel {
    /// Check everything; returns the list of violations (empty = all good).
    pub fn check_invariants(&mut self) -> Vec<String> {
        let mut errs = std::mem::take(&mut self.invariant_errors);
        self.check_lru_lists(&mut errs);
        // NR_FILE_DIRTY agrees with the dirty page-cache folios.
        let dirty: u64 = self
            .folios
            .folios
            .iter()
            .filter(|f| f.test(pg::ALLOCATED) && f.is_file_lru() && f.test(pg::DIRTY))
            .map(|f| f.nr_pages())
            .sum();
        if dirty != self.wb.nr_dirty {
            errs.push(format!(
                "{dirty} dirty page-cache pages but NR_FILE_DIRTY {}",
                self.wb.nr_dirty
            ));
        }
        // Charge: never above the limit; pages charged = pages allocated.
        if self.memcg.usage > self.memcg.limit {
            errs.push(format!(
                "memcg usage {} above limit {}",
                self.memcg.usage, self.memcg.limit
            ));
        }
        if self.memcg.charged_pages() != self.folios.nr_allocated {
            errs.push(format!(
                "memcg charges {} pages to folios but {} pages are allocated",
                self.memcg.charged_pages(),
                self.folios.nr_allocated
            ));
        }
        let v = &self.vmstat;
        if v[PGSTEAL_ANON] > v[PGSCAN_ANON] || v[PGSTEAL_FILE] > v[PGSCAN_FILE] {
            errs.push("pgsteal > pgscan".into());
        }
        self.check_ptes(&mut errs);
        self.check_tlb_coherent("end of run");
        errs.append(&mut self.invariant_errors);
        errs
    }

    /// Every allocated folio is on exactly one LRU list or in one CPU's lru_add batch (nothing
    /// is isolated between steps), the list sizes add up, and MGLRU's folios lie in live
    /// generations.
    fn check_lru_lists(&self, errs: &mut Vec<String>) {
        let mut on_list = vec![false; self.folios.folios.len()];
        for lru in 0..NR_ALL_LISTS as u8 {
            let mut n = 0;
            for pfn in self.lruvec.iter(&self.folios, lru) {
                if on_list[pfn as usize] {
                    errs.push(format!("folio {pfn} is on two LRU lists"));
                }
                on_list[pfn as usize] = true;
                n += self.folios.get(pfn).nr_pages();
                if self.folios.get(pfn).lru != lru {
                    errs.push(format!(
                        "folio {pfn} is on list {lru} but says {}",
                        self.folios.get(pfn).lru
                    ));
                }
            }
            if n != self.lruvec.size(lru) {
                errs.push(format!(
                    "LRU {lru} holds {n} pages but counts {}",
                    self.lruvec.size(lru)
                ));
            }
        }
        for &pfn in self.cpu_fbatches.iter().flatten() {
            if on_list[pfn as usize] || self.folios.get(pfn).lru != LRU_FBATCH {
                errs.push(format!("batched folio {pfn} is on a list or another batch"));
            }
            on_list[pfn as usize] = true;
        }
        for (pfn, f) in self.folios.folios.iter().enumerate() {
            if f.test(pg::ALLOCATED) && (!on_list[pfn] || f.lru == LRU_NONE) {
                errs.push(format!("allocated folio {pfn} is on no LRU list"));
            }
        }
        // MGLRU: only the generations min_seq..=max_seq of a type hold folios.
        let g = &self.lruvec.lrugen;
        if g.enabled {
            use crate::mm::lru_gen::{gen_list, lru_gen_from_seq};
            for ty in 0..2 {
                let live: Vec<u64> = (g.min_seq[ty]..=g.max_seq).map(lru_gen_from_seq).collect();
                if live.len() > MAX_NR_GENS as usize {
                    errs.push(format!("type {ty}: {} generations", live.len()));
                }
                for gen in (0..MAX_NR_GENS).filter(|x| !live.contains(x)) {
                    if self.lruvec.size(gen_list(gen, ty)) > 0 {
                        errs.push(format!("type {ty}: folios in dead generation {gen}"));
                    }
                }
            }
        }
    }

    /// PTEs agree with folios; rss and swap slots add up.
    fn check_ptes(&self, errs: &mut Vec<String>) {
        let mut slots = 0;
        for (mm, m) in self.mms.iter().enumerate() {
            let mut rss = 0;
            for (vp, &pte) in m.ptes.iter().enumerate() {
                if is_zero_pte(pte) {
                    continue;
                }
                if pte_present(pte) {
                    rss += 1;
                    let f = self.folios.get(pte_pfn(pte));
                    let owner_ok = match m.backing {
                        Backing::Anon => f.owner as usize == mm,
                        Backing::File(file) => f.owner as usize == file,
                    };
                    if !f.test(pg::ALLOCATED)
                        || !f.test(pg::MAPPED)
                        || !owner_ok
                        || vp < f.index as usize
                        || vp >= f.index as usize + f.nr_pages() as usize
                    {
                        errs.push(format!(
                            "mm {mm} page {vp} maps pfn {} that is not its folio",
                            pte_pfn(pte)
                        ));
                    }
                    if f.test(pg::SWAPCACHE) {
                        slots += 1;
                    }
                } else if is_swap_pte(pte) {
                    slots += 1;
                }
            }
            if rss != m.rss {
                errs.push(format!("mm {mm} rss {} but {rss} present PTEs", m.rss));
            }
        }
        if slots != self.swap.used {
            errs.push(format!(
                "{slots} swap entries but {} slots used",
                self.swap.used
            ));
        }
    }
}

impl Kernel {
    /// Only the TLB coherence invariant (for tests that leave folios isolated or unfreed).
    pub fn check_invariants_tlb_only(&mut self) -> Vec<String> {
        self.check_tlb_coherent("check");
        std::mem::take(&mut self.invariant_errors)
    }
}
