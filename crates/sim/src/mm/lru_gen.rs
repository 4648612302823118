//! The multi-gen LRU (mm/vmscan.c's lru_gen part, include/linux/mm_inline.h), one memcg on one
//! node, one zone. docs/kernel-facts.md §9; `6.18+mglru` is the code before seed 002, and
//! `+mglru-dirty-reactivate` is patch 7 of Kairui Song's series (dirty/writeback file folios go
//! through shrink_folio_list and are reactivated there; the flusher is woken right after a batch
//! that was all unqueued dirty).
//!
//! Representation: a folio's generation is the list it sits on (folio.rs LRU_GEN_BASE +
//! gen * 2 + type, gen = seq % MAX_NR_GENS), its refs counter two bits of its flags. Anon and
//! file share `max_seq`; each type has its own `min_seq`. NR_HIST_GENS is 1, as in the kernel.
//!
//! Approximations (docs/sim-model.md): the aging walk visits every PTE of every mm (no Bloom
//! filter, no mm skipping); folio_update_gen moves the folio to its new generation at once
//! instead of at the next sort_folio; one zone; no memcg LRU (one memcg).

use crate::config::Patch;
use crate::cputime::Spent;
use crate::kernel::{CpuId, Kernel};
use crate::mm::folio::*;
use crate::mm::lru::Lruvec;
use crate::mm::pgtable::*;
use crate::mm::vmscan::{ScanControl, DEF_PRIORITY};
use crate::mm::vmstat::VmEventItem::*;

pub const MIN_NR_GENS: u64 = 2;
pub const MAX_NR_TIERS: usize = 4;
/// MIN_LRU_BATCH (BITS_PER_LONG) and MAX_LRU_BATCH.
pub const MIN_LRU_BATCH: u64 = 64;
pub const MAX_LRU_BATCH: u64 = 4096;
/// LRU_REFS_WIDTH.
const LRU_REFS_WIDTH: u32 = 2;
/// MAX_SWAPPINESS.
const MAX_SWAPPINESS: u64 = 200;
/// Shadow token bits (the classic shadow's stamp width, workingset.rs).
const TOKEN_MASK: u64 = (1 << 25) - 1;

/// lruvec->lrugen.
#[derive(Clone, Debug, Default)]
pub struct LruGen {
    pub enabled: bool,
    pub max_seq: u64,
    /// [anon, file].
    pub min_seq: [u64; 2],
    /// The PID controller's state per `[type][tier]` (NR_HIST_GENS = 1).
    pub avg_refaulted: [[u64; MAX_NR_TIERS]; 2],
    pub avg_total: [[u64; MAX_NR_TIERS]; 2],
    pub refaulted: [[u64; MAX_NR_TIERS]; 2],
    pub evicted: [[u64; MAX_NR_TIERS]; 2],
    pub protected: [[u64; MAX_NR_TIERS]; 2],
    /// Measurement only (docs/targets-mglru.md): the most dirty pages one reclaim pass
    /// bumped (a maximum, not an event: the counts are MGLRU_*, mm/vm_event_item.rs).
    pub max_dirty_bumped_pass: u64,
}

impl LruGen {
    /// lru_gen_init_lruvec: four generations to start with.
    pub fn init() -> LruGen {
        LruGen {
            enabled: true,
            max_seq: MIN_NR_GENS + 1,
            ..LruGen::default()
        }
    }
}

/// The generation list of (gen, type).
pub fn gen_list(gen: u64, ty: usize) -> u8 {
    LRU_GEN_BASE + (gen as u8) * 2 + ty as u8
}

pub fn lru_gen_from_seq(seq: u64) -> u64 {
    seq % MAX_NR_GENS
}

/// folio_lru_gen: the generation of the list the folio is on.
pub fn folio_lru_gen(f: &Folio) -> Option<u64> {
    (f.lru < LRU_FBATCH && f.lru >= LRU_GEN_BASE).then(|| ((f.lru - LRU_GEN_BASE) / 2) as u64)
}

/// folio_lru_refs: accesses through file descriptors, PG_referenced included.
pub fn folio_lru_refs(f: &Folio) -> u64 {
    if !f.test(pg::REFERENCED) {
        return 0;
    }
    ((f.flags & pg::LRU_REFS_MASK) >> pg::LRU_REFS_SHIFT) as u64 + 1
}

/// lru_tier_from_refs.
pub fn lru_tier_from_refs(refs: u64, workingset: bool) -> usize {
    if workingset {
        return MAX_NR_TIERS - 1;
    }
    // order_base_2
    match refs {
        0 | 1 => 0,
        2 => 1,
        _ => 2,
    }
}

fn ty_of(f: &Folio) -> usize {
    f.is_file_lru() as usize
}

impl Lruvec {
    /// lru_gen_folio_seq: where a folio (re-)enters the generations.
    pub fn lru_gen_folio_seq(&self, f: &Folio, reclaiming: bool) -> u64 {
        let g = &self.lrugen;
        let ws = f.test(pg::WORKINGSET) as u64;
        let gen = if f.test(pg::ACTIVE) {
            MIN_NR_GENS - ws
        } else if reclaiming {
            MAX_NR_GENS
        } else if (!f.is_file_lru() && !f.test(pg::SWAPCACHE))
            || (f.test(pg::RECLAIM) && (f.test(pg::DIRTY) || f.test(pg::WRITEBACK)))
        {
            MIN_NR_GENS
        } else {
            MAX_NR_GENS - ws
        };
        (g.max_seq + 1 - gen).max(g.min_seq[ty_of(f)])
    }

    /// lru_gen_add_folio: PG_active is cleared on the generation lists; a rotated folio goes to
    /// the tail (the reclaim end) of the oldest generation.
    pub fn lru_gen_add_folio(&mut self, ft: &mut FolioTable, pfn: Pfn, reclaiming: bool) {
        let seq = self.lru_gen_folio_seq(ft.get(pfn), reclaiming);
        let ty = ty_of(ft.get(pfn));
        ft.get_mut(pfn).clear(pg::ACTIVE);
        let list = gen_list(lru_gen_from_seq(seq), ty);
        if reclaiming {
            self.list_add_tail(ft, pfn, list);
        } else {
            self.list_add(ft, pfn, list);
        }
    }

    pub fn nr_gens(&self, ty: usize) -> u64 {
        self.lrugen.max_seq - self.lrugen.min_seq[ty] + 1
    }

    /// Pages of type `ty` in generations min_seq..=max_seq.
    pub fn lru_gen_size(&self, ty: usize) -> u64 {
        (0..MAX_NR_GENS).map(|g| self.size(gen_list(g, ty))).sum()
    }
}

/// What the reclaim loop gathers (sc->nr.unqueued_dirty, sc->nr.file_taken).
#[derive(Default)]
struct GenScan {
    unqueued_dirty: u64,
    file_taken: u64,
    /// Pages sort_folio bumped for dirty/writeback in this pass (measurement).
    bumped: u64,
}

/// struct ctrl_pos.
struct CtrlPos {
    refaulted: u64,
    total: u64,
    gain: u64,
}

impl Kernel {
    fn lrugen(&mut self) -> &mut LruGen {
        &mut self.lruvec.lrugen
    }

    /// get_swappiness: file only without swap space (and for may_swap = false).
    fn lru_gen_swappiness(&self, sc: &ScanControl) -> u64 {
        if !sc.may_swap || self.swap.total.saturating_sub(self.swap.used) < MIN_LRU_BATCH {
            return 0;
        }
        self.swappiness
    }

    /// for_each_evictable_type: the types reclaim may take from at this swappiness.
    fn evictable_types(swappiness: u64) -> std::ops::RangeInclusive<usize> {
        let min = (swappiness == 0) as usize;
        let max = (swappiness <= MAX_SWAPPINESS) as usize;
        min..=max
    }

    fn evictable_min_seq(&self, swappiness: u64) -> u64 {
        let g = &self.lruvec.lrugen;
        Self::evictable_types(swappiness)
            .map(|t| g.min_seq[t])
            .min()
            .unwrap_or(g.min_seq[1])
    }

    /// folio_inc_gen: move to min_seq + 1 (at its head), resetting the refs; `reclaiming` sets
    /// PG_reclaim so that folio_end_writeback rotates the folio back to the oldest generation.
    fn folio_inc_gen(&mut self, pfn: Pfn, reclaiming: bool) {
        let ty = ty_of(self.folios.get(pfn));
        let new_gen = lru_gen_from_seq(self.lruvec.lrugen.min_seq[ty] + 1);
        self.lruvec.del(&mut self.folios, pfn);
        let f = self.folios.get_mut(pfn);
        f.clear(pg::LRU_REFS_FLAGS);
        if reclaiming {
            f.set(pg::RECLAIM);
        }
        self.lruvec
            .list_add(&mut self.folios, pfn, gen_list(new_gen, ty));
    }

    /// lru_gen_inc_refs (folio_mark_accessed under MGLRU): PG_referenced, then the counter,
    /// then PG_workingset; no list movement.
    pub fn lru_gen_inc_refs(&mut self, pfn: Pfn) {
        let f = self.folios.get_mut(pfn);
        if !f.test(pg::REFERENCED) {
            f.flags &= !pg::LRU_REFS_MASK;
            f.set(pg::REFERENCED);
            return;
        }
        if f.flags & pg::LRU_REFS_MASK == pg::LRU_REFS_MASK {
            f.set(pg::WORKINGSET);
            return;
        }
        f.flags += 1 << pg::LRU_REFS_SHIFT;
    }

    /// lru_gen_set_refs: the first reference through a PTE sets PG_referenced (a second
    /// chance); a later one sets PG_workingset and asks for activation.
    fn lru_gen_set_refs(&mut self, pfn: Pfn) -> bool {
        let f = self.folios.get_mut(pfn);
        if !f.test(pg::REFERENCED) && !f.test(pg::WORKINGSET) {
            f.flags &= !pg::LRU_REFS_MASK;
            f.set(pg::REFERENCED);
            return false;
        }
        f.clear(pg::LRU_REFS_FLAGS);
        f.set(pg::WORKINGSET);
        true
    }

    /// folio_activate (mm/swap.c) under MGLRU: re-add as active, i.e. to a young generation.
    fn lru_gen_folio_activate(&mut self, pfn: Pfn) {
        let f = self.folios.get(pfn);
        if !f.test(pg::LRU) {
            return;
        }
        let n = f.nr_pages();
        self.lruvec.del(&mut self.folios, pfn);
        self.folios.get_mut(pfn).set(pg::ACTIVE);
        self.lruvec.add(&mut self.folios, pfn);
        self.vmstat.count_vm_events(PGACTIVATE, n);
    }

    /// folio_update_gen (the aging walk): the first young PTE only sets PG_referenced; after
    /// that the folio moves to `gen` and gets PG_workingset.
    fn folio_update_gen(&mut self, pfn: Pfn, gen: u64) {
        let f = self.folios.get_mut(pfn);
        if !f.test(pg::REFERENCED) && !f.test(pg::WORKINGSET) {
            f.set(pg::REFERENCED);
            return;
        }
        if !f.test(pg::LRU) {
            return;
        }
        f.clear(pg::LRU_REFS_FLAGS);
        f.set(pg::WORKINGSET);
        let ty = ty_of(f);
        if folio_lru_gen(f) != Some(gen) {
            self.lruvec.del(&mut self.folios, pfn);
            self.lruvec
                .list_add(&mut self.folios, pfn, gen_list(gen, ty));
        }
    }

    /// walk_update_folio's dirty propagation: a dirty PTE makes the folio dirty (not for anon
    /// folios outside the swap cache).
    fn walk_mark_dirty(&mut self, pfn: Pfn) {
        let f = *self.folios.get(pfn);
        if f.test(pg::DIRTY) || (f.is_anon() && f.test(pg::SWAPBACKED) && !f.test(pg::SWAPCACHE)) {
            return;
        }
        self.folio_mark_dirty(pfn);
    }

    /// walk_mm over every mm (walk_pte_range): clear young PTEs without a flush, propagate
    /// dirty bits, promote the folios to max_seq's generation. A run of PTEs of one large
    /// folio updates it once (folio_pte_batch).
    fn lru_gen_walk_mms(&mut self, cpu: CpuId) {
        let new_gen = lru_gen_from_seq(self.lruvec.lrugen.max_seq);
        let mut scanned = 0u64;
        let mut young = 0u64;
        for mm in 0..self.mms.len() {
            if self.mms[mm].rss == 0 {
                continue;
            }
            let mut last = NO_PFN;
            for vp in 0..self.mms[mm].ptes.len() {
                let pte = self.mms[mm].ptes[vp];
                scanned += 1;
                if !pte_present(pte) || pte & PTE_YOUNG == 0 || pte_pfn(pte) == ZERO_PFN {
                    continue;
                }
                self.mms[mm].ptes[vp] = pte & !PTE_YOUNG;
                young += 1;
                let pfn = pte_pfn(pte);
                if pte & PTE_DIRTY != 0 {
                    self.walk_mark_dirty(pfn);
                }
                if pfn != last {
                    self.folio_update_gen(pfn, new_gen);
                    last = pfn;
                }
            }
        }
        self.charge(
            cpu,
            scanned * self.cost.walk_pte + young * self.cost.pte_clear,
            Spent::Mglru,
        );
    }

    /// lru_gen_look_around: after a young PTE was found by the rmap walk, scan up to
    /// MIN_LRU_BATCH PTEs around it (inside its PMD), clear their young bits without a flush
    /// and, with no mm_walk (direct reclaim), lru_gen_set_refs + folio_activate each folio.
    fn lru_gen_look_around(&mut self, cpu: CpuId, mm: usize, addr: u64) {
        let len = self.mms[mm].ptes.len() as u64;
        let pmd_start = addr & !511;
        let pmd_end = (pmd_start + 512).min(len);
        let (mut start, mut end) = (pmd_start, pmd_end);
        if end - start == 1 {
            return;
        }
        if end - start > MIN_LRU_BATCH {
            if addr - start < MIN_LRU_BATCH / 2 {
                end = start + MIN_LRU_BATCH;
            } else if end - addr < MIN_LRU_BATCH / 2 {
                start = end - MIN_LRU_BATCH;
            } else {
                start = addr - MIN_LRU_BATCH / 2;
                end = addr + MIN_LRU_BATCH / 2;
            }
        }
        let new_gen = lru_gen_from_seq(self.lruvec.lrugen.max_seq);
        let mut young = 0;
        let mut last = NO_PFN;
        for vp in start..end {
            let pte = self.mms[mm].ptes[vp as usize];
            if !pte_present(pte) || pte & PTE_YOUNG == 0 || pte_pfn(pte) == ZERO_PFN {
                continue;
            }
            self.mms[mm].ptes[vp as usize] = pte & !PTE_YOUNG;
            young += 1;
            let pfn = pte_pfn(pte);
            if pte & PTE_DIRTY != 0 {
                self.walk_mark_dirty(pfn);
            }
            if pfn == last {
                continue;
            }
            last = pfn;
            if self.lru_gen_set_refs(pfn) {
                let old = folio_lru_gen(self.folios.get(pfn));
                if old.is_some() && old != Some(new_gen) {
                    self.lru_gen_folio_activate(pfn);
                }
            }
        }
        self.charge(
            cpu,
            (end - start) * self.cost.walk_pte + young * self.cost.pte_clear,
            Spent::Mglru,
        );
    }

    /// folio_check_references under MGLRU: folio_referenced (with the look-around on a young
    /// PTE), then lru_gen_set_refs: true = activate, false = keep; not referenced = reclaim.
    /// Returns None for reclaim, Some(activate) otherwise.
    pub(crate) fn lru_gen_check_references(&mut self, cpu: CpuId, pfn: Pfn) -> Option<bool> {
        let mapping = self.folio_mapping_of(pfn);
        let referenced = self.folio_referenced(cpu, pfn);
        if referenced == 0 {
            return None;
        }
        if let Some((mm, vp)) = mapping {
            self.lru_gen_look_around(cpu, mm, vp);
        }
        Some(self.lru_gen_set_refs(pfn))
    }

    /// inc_min_seq: move what is left in the oldest generation to min_seq + 1 (preventing
    /// cold/hot inversion), counting it as protected; a type reclaim cannot evict just moves
    /// min_seq on.
    fn inc_min_seq(&mut self, ty: usize, swappiness: u64) {
        let evictable = Self::evictable_types(swappiness).contains(&ty);
        if evictable {
            let old = gen_list(lru_gen_from_seq(self.lruvec.lrugen.min_seq[ty]), ty);
            let new = gen_list(lru_gen_from_seq(self.lruvec.lrugen.min_seq[ty] + 1), ty);
            while let Some(pfn) = self.lruvec.tail(old) {
                let f = *self.folios.get(pfn);
                let refs = folio_lru_refs(&f);
                let ws = f.test(pg::WORKINGSET);
                self.lruvec.del(&mut self.folios, pfn);
                self.folios.get_mut(pfn).clear(pg::LRU_REFS_FLAGS);
                self.lruvec.list_add_tail(&mut self.folios, pfn, new);
                if refs + ws as u64 != (1 << LRU_REFS_WIDTH) + 1 {
                    self.lrugen().protected[ty][lru_tier_from_refs(refs, ws)] += f.nr_pages();
                }
            }
        }
        self.reset_ctrl_pos(ty);
        self.lrugen().min_seq[ty] += 1;
    }

    /// reset_ctrl_pos(carryover = true) with NR_HIST_GENS = 1: halve into the averages, clear.
    fn reset_ctrl_pos(&mut self, ty: usize) {
        let g = self.lrugen();
        for t in 0..MAX_NR_TIERS {
            g.avg_refaulted[ty][t] = (g.avg_refaulted[ty][t] + g.refaulted[ty][t]) / 2;
            g.avg_total[ty][t] = (g.avg_total[ty][t] + g.protected[ty][t] + g.evicted[ty][t]) / 2;
            g.refaulted[ty][t] = 0;
            g.evicted[ty][t] = 0;
            g.protected[ty][t] = 0;
        }
    }

    /// try_to_inc_min_seq: drop empty oldest generations.
    fn try_to_inc_min_seq(&mut self, swappiness: u64) -> bool {
        let mut min_seq = self.lruvec.lrugen.min_seq;
        let max_seq = self.lruvec.lrugen.max_seq;
        for ty in Self::evictable_types(swappiness) {
            while min_seq[ty] + MIN_NR_GENS <= max_seq {
                let list = gen_list(lru_gen_from_seq(min_seq[ty]), ty);
                if self.lruvec.size(list) > 0 {
                    break;
                }
                min_seq[ty] += 1;
            }
        }
        if swappiness > 0 && swappiness <= MAX_SWAPPINESS {
            let seq = max_seq - MIN_NR_GENS;
            if min_seq[0] > seq && min_seq[1] < seq {
                min_seq[0] = seq;
            } else if min_seq[1] > seq && min_seq[0] < seq {
                min_seq[1] = seq;
            }
        }
        let mut success = false;
        for ty in Self::evictable_types(swappiness) {
            if min_seq[ty] <= self.lruvec.lrugen.min_seq[ty] {
                continue;
            }
            self.reset_ctrl_pos(ty);
            self.lrugen().min_seq[ty] = min_seq[ty];
            success = true;
        }
        success
    }

    /// try_to_inc_max_seq → walk_mm for every mm, then inc_max_seq (a type already at
    /// MAX_NR_GENS first loses its oldest generation).
    pub fn try_to_inc_max_seq(&mut self, cpu: CpuId, swappiness: u64) {
        self.lru_gen_walk_mms(cpu);
        for ty in 0..2 {
            if self.lruvec.nr_gens(ty) == MAX_NR_GENS {
                self.inc_min_seq(ty, swappiness);
            }
        }
        let g = self.lrugen();
        g.max_seq += 1;
        self.vmstat.count_vm_event(MGLRU_AGING);
        self.count_hot_in_oldest();
    }

    /// Measurement: pages of the two oldest file generations that were recently referenced.
    fn count_hot_in_oldest(&mut self) {
        let min_seq = self.lruvec.lrugen.min_seq[1];
        let (mut hot, mut all) = (0, 0);
        for seq in min_seq..min_seq + MIN_NR_GENS {
            let list = gen_list(lru_gen_from_seq(seq), 1);
            for pfn in self.lruvec.iter(&self.folios, list) {
                let f = self.folios.get(pfn);
                all += f.nr_pages();
                if f.test(pg::WORKINGSET) || f.test(pg::REFERENCED) {
                    hot += f.nr_pages();
                }
            }
        }
        self.vmstat.count_vm_events(MGLRU_AGING_HOT_IN_OLDEST, hot);
        self.vmstat
            .count_vm_events(MGLRU_AGING_PAGES_IN_OLDEST, all);
    }

    /// should_run_aging: required with two generations left, preferred with three; also the
    /// evictable size.
    fn should_run_aging(&self, swappiness: u64) -> (bool, u64) {
        let max_seq = self.lruvec.lrugen.max_seq;
        if self.evictable_min_seq(swappiness) + MIN_NR_GENS > max_seq {
            return (true, 0);
        }
        let size: u64 = Self::evictable_types(swappiness)
            .map(|t| self.lruvec.lru_gen_size(t))
            .sum();
        (
            self.evictable_min_seq(swappiness) + MIN_NR_GENS == max_seq,
            size,
        )
    }

    /// get_nr_to_scan: size >> priority, aging instead (and -1: stop) when it is due and the
    /// priority is past DEF_PRIORITY.
    fn get_nr_to_scan(&mut self, cpu: CpuId, sc: &ScanControl, swappiness: u64) -> i64 {
        let (age, nr) = self.should_run_aging(swappiness);
        if !age || sc.priority == DEF_PRIORITY {
            return (nr >> sc.priority) as i64;
        }
        self.try_to_inc_max_seq(cpu, swappiness);
        -1
    }

    fn read_ctrl_pos(&self, ty: usize, tier: usize, gain: u64) -> CtrlPos {
        let g = &self.lruvec.lrugen;
        CtrlPos {
            refaulted: g.avg_refaulted[ty][tier] + g.refaulted[ty][tier],
            total: g.avg_total[ty][tier] + g.protected[ty][tier] + g.evicted[ty][tier],
            gain,
        }
    }

    /// positive_ctrl_err: the PV refaults less (per page) than the SP.
    fn positive_ctrl_err(sp: &CtrlPos, pv: &CtrlPos) -> bool {
        pv.refaulted < MIN_LRU_BATCH
            || pv.refaulted * (sp.total + MIN_LRU_BATCH) * sp.gain
                <= (sp.refaulted + 1) * pv.total * pv.gain
    }

    /// get_tier_idx: tiers above the returned one are protected from eviction.
    fn get_tier_idx(&self, ty: usize) -> usize {
        let sp = self.read_ctrl_pos(ty, 0, 2);
        let mut tier = 1;
        while tier < MAX_NR_TIERS {
            let pv = self.read_ctrl_pos(ty, tier, 3);
            if !Self::positive_ctrl_err(&sp, &pv) {
                break;
            }
            tier += 1;
        }
        tier - 1
    }

    /// get_type_to_scan: compare the refault rates of all tiers of anon (gain swappiness)
    /// and file (gain 200 - swappiness).
    fn get_type_to_scan(&self, swappiness: u64) -> usize {
        if swappiness <= 1 {
            return 1;
        }
        if swappiness >= MAX_SWAPPINESS {
            return 0;
        }
        let sum = |ty: usize, gain: u64| {
            let mut p = CtrlPos {
                refaulted: 0,
                total: 0,
                gain,
            };
            for t in 0..MAX_NR_TIERS {
                let c = self.read_ctrl_pos(ty, t, gain);
                p.refaulted += c.refaulted;
                p.total += c.total;
            }
            p
        };
        let sp = sum(0, swappiness);
        let pv = sum(1, MAX_SWAPPINESS - swappiness);
        Self::positive_ctrl_err(&sp, &pv) as usize
    }

    /// sort_folio: true if the folio stays on the LRU (promoted, protected, or, before seed
    /// 002, dirty or under writeback).
    fn sort_folio(&mut self, pfn: Pfn, tier_idx: usize, gs: &mut GenScan) -> bool {
        let f = *self.folios.get(pfn);
        let ty = ty_of(&f);
        let gen = folio_lru_gen(&f).expect("on a generation list");
        let n = f.nr_pages();
        let refs = folio_lru_refs(&f);
        let ws = f.test(pg::WORKINGSET);
        let tier = lru_tier_from_refs(refs, ws);
        let min_seq = self.lruvec.lrugen.min_seq[ty];
        // promoted (folio_update_gen moves at once here, so this does not happen)
        if gen != lru_gen_from_seq(min_seq) {
            self.lruvec.del(&mut self.folios, pfn);
            self.lruvec
                .list_add(&mut self.folios, pfn, gen_list(gen, ty));
            return true;
        }
        // protected
        if tier > tier_idx || refs + ws as u64 == (1 << LRU_REFS_WIDTH) + 1 {
            self.folio_inc_gen(pfn, false);
            if refs + ws as u64 != (1 << LRU_REFS_WIDTH) + 1 {
                self.lrugen().protected[ty][tier] += n;
            }
            return true;
        }
        if self.has(Patch::MglruDirtyReactivate) {
            return false;
        }
        let dirty = f.test(pg::DIRTY);
        let writeback = f.test(pg::WRITEBACK);
        if ty == 1 && dirty {
            gs.file_taken += n;
            if !writeback {
                gs.unqueued_dirty += n;
            }
        }
        // waiting for writeback
        if writeback || (ty == 1 && dirty) {
            if f.test(pg::RECLAIM) {
                self.vmstat.count_vm_events(MGLRU_DIRTY_REBUMPED, n);
            }
            self.folio_inc_gen(pfn, true);
            self.vmstat.count_vm_events(MGLRU_DIRTY_BUMPED, n);
            gs.bumped += n;
            return true;
        }
        false
    }

    /// isolate_folio: off the LRU; refs kept only with PG_referenced; PG_reclaim cleared for
    /// shrink_folio_list.
    fn lru_gen_isolate_folio(&mut self, pfn: Pfn) {
        self.lruvec.del(&mut self.folios, pfn);
        let f = self.folios.get_mut(pfn);
        if !f.test(pg::REFERENCED) {
            f.flags &= !pg::LRU_REFS_MASK;
        }
        f.clear(pg::RECLAIM);
    }

    /// scan_folios: sort or isolate from the oldest generation's tail, at most MAX_LRU_BATCH
    /// folios, until MIN_LRU_BATCH pages are isolated. Returns (scanned, isolated).
    fn scan_folios(
        &mut self,
        cpu: CpuId,
        nr_to_scan: u64,
        ty: usize,
        tier: usize,
        list: &mut Vec<Pfn>,
        gs: &mut GenScan,
    ) -> (u64, u64) {
        if self.lruvec.nr_gens(ty) == MIN_NR_GENS {
            return (0, 0);
        }
        let mut remaining = nr_to_scan.min(MAX_LRU_BATCH);
        let head = gen_list(lru_gen_from_seq(self.lruvec.lrugen.min_seq[ty]), ty);
        let (mut scanned, mut sorted, mut isolated) = (0, 0, 0);
        let mut nr_folios = 0;
        while let Some(pfn) = self.lruvec.tail(head) {
            let n = self.folios.get(pfn).nr_pages();
            scanned += n;
            nr_folios += 1;
            if self.sort_folio(pfn, tier, gs) {
                sorted += n;
            } else {
                self.lru_gen_isolate_folio(pfn);
                list.push(pfn);
                isolated += n;
            }
            remaining -= 1;
            if remaining == 0 || isolated >= MIN_LRU_BATCH {
                break;
            }
        }
        // scan_folios runs under spin_lock_irq(&lruvec->lru_lock) (locking.rs).
        self.lru_lock_irq_section(cpu, nr_folios * self.cost.isolate_folio, Spent::LruIsolate);
        self.vmstat.count_vm_events(PGREFILL, sorted);
        if ty == 1 {
            self.vmstat.count_vm_events(PGSCAN_FILE, isolated);
            if !self.has(Patch::MglruDirtyReactivate) {
                gs.file_taken += isolated;
            }
        } else {
            self.vmstat.count_vm_events(PGSCAN_ANON, isolated);
        }
        let scanned = if isolated > 0 || remaining == 0 {
            scanned
        } else {
            0
        };
        (scanned, isolated)
    }

    /// isolate_folios: the type by get_type_to_scan, the other if nothing was isolated.
    fn isolate_folios(
        &mut self,
        cpu: CpuId,
        nr_to_scan: u64,
        swappiness: u64,
        list: &mut Vec<Pfn>,
        gs: &mut GenScan,
    ) -> (u64, u64, usize) {
        let mut ty = self.get_type_to_scan(swappiness);
        let mut scanned = 0;
        for _ in Self::evictable_types(swappiness) {
            let tier = self.get_tier_idx(ty);
            let (s, isolated) = self.scan_folios(cpu, nr_to_scan, ty, tier, list, gs);
            scanned += s;
            if isolated > 0 {
                return (scanned, isolated, ty);
            }
            ty = 1 - ty;
        }
        (scanned, 0, ty)
    }

    /// evict_folios: isolate, shrink_folio_list, put the rest back (not into the oldest
    /// generation), retrying once the clean unmapped folios that may have missed
    /// folio_rotate_reclaimable.
    fn evict_folios(
        &mut self,
        cpu: CpuId,
        nr_to_scan: u64,
        sc: &mut ScanControl,
        swappiness: u64,
        gs: &mut GenScan,
    ) -> u64 {
        let mut list = Vec::new();
        let (mut scanned, isolated, ty) =
            self.isolate_folios(cpu, nr_to_scan, swappiness, &mut list, gs);
        scanned += self.try_to_inc_min_seq(swappiness) as u64;
        if self.evictable_min_seq(swappiness) + MIN_NR_GENS > self.lruvec.lrugen.max_seq {
            scanned = 0;
        }
        if list.is_empty() {
            return scanned;
        }
        sc.nr_scanned += isolated;
        let mut skip_retry = false;
        loop {
            let (reclaimed, stat, ret) = self.shrink_folio_list(cpu, std::mem::take(&mut list));
            gs.unqueued_dirty += stat.nr_unqueued_dirty;
            sc.nr_reclaimed += reclaimed;
            if ty == 1 {
                self.vmstat.count_vm_events(PGSTEAL_FILE, reclaimed);
            } else {
                self.vmstat.count_vm_events(PGSTEAL_ANON, reclaimed);
            }
            if self.has(Patch::MglruDirtyReactivate)
                && !skip_retry
                && stat.nr_unqueued_dirty == isolated
            {
                // Seed 002: the whole batch was dirty and not queued: wake the flusher now.
                self.vmstat.count_vm_event(MGLRU_FLUSHER_WAKEUPS);
                self.wakeup_flusher_threads(cpu);
            }
            let mut clean = Vec::new();
            let mut back = Vec::new();
            for pfn in ret.into_iter().rev() {
                if self.put_orphan(pfn) {
                    continue;
                }
                let f = *self.folios.get(pfn);
                if !skip_retry
                    && !f.test(pg::ACTIVE)
                    && !f.test(pg::MAPPED)
                    && !f.test(pg::DIRTY)
                    && !f.test(pg::WRITEBACK)
                {
                    clean.push(pfn);
                    continue;
                }
                let t = ty_of(&f);
                if self.lruvec.lru_gen_folio_seq(&f, false) == self.lruvec.lrugen.min_seq[t] {
                    let f = self.folios.get_mut(pfn);
                    f.clear(pg::LRU_REFS_FLAGS);
                    f.set(pg::ACTIVE);
                }
                back.push(pfn);
            }
            back.reverse();
            self.lru_putback_locked(cpu, back.len() as u64);
            for pfn in back {
                self.lruvec.add(&mut self.folios, pfn);
            }
            if clean.is_empty() {
                break;
            }
            clean.reverse();
            list = clean;
            skip_retry = true;
        }
        scanned
    }

    /// lru_gen_shrink_lruvec → try_to_shrink_lruvec for memcg (non-root) reclaim: evict
    /// until nr_to_scan is scanned (memcg reclaim never aborts early), age when due.
    pub fn lru_gen_shrink_lruvec(&mut self, cpu: CpuId, sc: &mut ScanControl) {
        let swappiness = self.lru_gen_swappiness(sc);
        let mut gs = GenScan::default();
        let mut scanned = 0;
        self.vmstat.count_vm_event(MGLRU_PASSES);
        self.lru_add_drain(cpu);
        loop {
            let nr_to_scan = self.get_nr_to_scan(cpu, sc, swappiness);
            if nr_to_scan <= 0 {
                break;
            }
            let delta = self.evict_folios(cpu, nr_to_scan as u64, sc, swappiness, &mut gs);
            if delta == 0 {
                break;
            }
            scanned += delta;
            if scanned >= nr_to_scan as u64 {
                break;
            }
        }
        // blk_finish_plug: the loop ran under the task's plug.
        self.swap_plug_finish(cpu);
        let g = self.lrugen();
        g.max_dirty_bumped_pass = g.max_dirty_bumped_pass.max(gs.bumped);
        // Before seed 002: wake the flusher only when every file folio taken was dirty.
        if !self.has(Patch::MglruDirtyReactivate)
            && gs.unqueued_dirty > 0
            && gs.unqueued_dirty == gs.file_taken
        {
            self.vmstat.count_vm_event(MGLRU_FLUSHER_WAKEUPS);
            self.wakeup_flusher_threads(cpu);
        }
    }

    /// lru_gen_eviction: the shadow token is min_seq and the refs; count the eviction.
    pub(crate) fn lru_gen_eviction(&mut self, pfn: Pfn) -> u32 {
        let f = *self.folios.get(pfn);
        let ty = ty_of(&f);
        let refs = folio_lru_refs(&f);
        let ws = f.test(pg::WORKINGSET);
        let tier = lru_tier_from_refs(refs, ws);
        let min_seq = self.lruvec.lrugen.min_seq[ty];
        let token = ((min_seq << LRU_REFS_WIDTH) | refs.saturating_sub(1)) & TOKEN_MASK;
        self.lrugen().evicted[ty][tier] += f.nr_pages();
        (token as u32) << 1 | ws as u32
    }

    /// lru_gen_refault: always counted; recent (within MAX_NR_GENS of max_seq) refaults feed
    /// the controller and restore refs / workingset. In fault context folio_add_lru sets
    /// PG_active (see lru_add_fault), which counts workingset_activate.
    pub(crate) fn lru_gen_refault(&mut self, pfn: Pfn, shadow: u32) {
        let f = *self.folios.get(pfn);
        let ty = ty_of(&f);
        let n = f.nr_pages();
        if ty == 1 {
            self.vmstat.count_vm_events(WORKINGSET_REFAULT_FILE, n);
        } else {
            self.vmstat.count_vm_events(WORKINGSET_REFAULT_ANON, n);
        }
        let token = (shadow >> 1) as u64;
        let ws = shadow & 1 != 0;
        let max_seq = self.lruvec.lrugen.max_seq & (TOKEN_MASK >> LRU_REFS_WIDTH);
        let seq = token >> LRU_REFS_WIDTH;
        if max_seq.abs_diff(seq) >= MAX_NR_GENS {
            return;
        }
        let refs = (token & ((1 << LRU_REFS_WIDTH) - 1)) + 1;
        let tier = lru_tier_from_refs(refs, ws);
        self.lrugen().refaulted[ty][tier] += n;
        if ty == 1 {
            self.vmstat.count_vm_events(WORKINGSET_ACTIVATE_FILE, n);
        } else {
            self.vmstat.count_vm_events(WORKINGSET_ACTIVATE_ANON, n);
        }
        let fm = self.folios.get_mut(pfn);
        if ws {
            fm.set(pg::WORKINGSET);
            if ty == 1 {
                self.vmstat.count_vm_events(WORKINGSET_RESTORE_FILE, n);
            } else {
                self.vmstat.count_vm_events(WORKINGSET_RESTORE_ANON, n);
            }
        } else {
            fm.flags =
                (fm.flags & !pg::LRU_REFS_MASK) | (((refs - 1) as u16) << pg::LRU_REFS_SHIFT);
        }
    }

    /// folio_add_lru from a page fault on `cpu`: under MGLRU (lru_gen_in_fault) the folio is
    /// set active, so it enters a young generation when its batch reaches the lists.
    pub fn lru_add_fault(&mut self, cpu: CpuId, pfn: Pfn) {
        if self.lruvec.lrugen.enabled {
            self.folios.get_mut(pfn).set(pg::ACTIVE);
        }
        self.folio_add_lru(cpu, pfn);
    }
}
