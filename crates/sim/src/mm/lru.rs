//! The lruvec (include/linux/mmzone.h, mm_inline.h): four lists of folios, plus the reclaim
//! cost and refault bookkeeping that get_scan_count and prepare_scan_control read. One memcg on
//! one node: one lruvec.
//!
//! The kernel threads its lists through the folios (`folio->lru`). Here each list is an array
//! in list order instead (`SlotList`), with the same operations and the same order: a folio
//! keeps its slot's sequence number, and a deletion from the middle leaves a hole that the
//! list's ends drop as they reach it. Isolation takes folios from the tail; with links in the
//! folios each next folio is known only after loading the one before, a chain of cache misses
//! (a fifth of seed 000's run time), while the array names the next folios at once, so
//! isolation starts loading them early (a host-cache hint; no effect on any result).

use super::folio::{pg, FolioTable, Pfn, LRU_NONE, NO_PFN, NR_ALL_LISTS};
use super::lru_gen::LruGen;

/// One list in order, tail first: `slots[start..]`, with `NO_PFN` for a folio deleted from
/// the middle until an end reaches it (neither end is ever a hole). Slot `start + i` has
/// sequence number `base + i` (wrapping), which the folio on it keeps in `Folio::pos`; moving
/// the slots down or making room below `start` keeps every number.
#[derive(Clone, Debug, Default)]
struct SlotList {
    slots: Vec<Pfn>,
    start: usize,
    base: u32,
    /// Folios on the list (slots that are not holes).
    live: usize,
}

impl SlotList {
    fn push_head(&mut self, pfn: Pfn) -> u32 {
        let pos = self
            .base
            .wrapping_add((self.slots.len() - self.start) as u32);
        self.slots.push(pfn);
        self.live += 1;
        pos
    }

    fn push_tail(&mut self, pfn: Pfn) -> u32 {
        if self.start == 0 {
            // Room below the tail, as much as the list holds (amortized O(1) per push).
            let room = (self.slots.len()).max(16);
            self.slots.splice(0..0, std::iter::repeat_n(NO_PFN, room));
            self.start = room;
        }
        self.start -= 1;
        self.slots[self.start] = pfn;
        self.base = self.base.wrapping_sub(1);
        self.live += 1;
        self.base
    }

    /// Take `pfn`, on slot `pos`, off the list; drop the holes this leaves at either end.
    fn remove(&mut self, pos: u32, pfn: Pfn) {
        let i = self.start + pos.wrapping_sub(self.base) as usize;
        assert!(
            self.slots.get(i) == Some(&pfn),
            "folio {pfn} not on its slot"
        );
        if i == self.start {
            self.pop_tail();
            return;
        }
        // Not the tail, so the list keeps a folio.
        self.slots[i] = NO_PFN;
        self.live -= 1;
        if i == self.slots.len() - 1 {
            while self.slots.last() == Some(&NO_PFN) {
                self.slots.pop();
            }
        }
    }

    /// Take the folio at the tail off the list; drop the holes after it.
    #[inline]
    fn pop_tail(&mut self) -> Option<Pfn> {
        let pfn = *self.slots.get(self.start)?;
        self.live -= 1;
        if self.live == 0 {
            self.base = self
                .base
                .wrapping_add((self.slots.len() - self.start) as u32);
            self.slots.clear();
            self.start = 0;
            return Some(pfn);
        }
        let mut j = self.start + 1;
        while self.slots[j] == NO_PFN {
            j += 1;
        }
        self.advance_start(j);
        Some(pfn)
    }

    /// The tail is now slot `j`: renumber nothing, and move the list down when the slots
    /// before it are more than half.
    #[inline]
    fn advance_start(&mut self, j: usize) {
        self.base = self.base.wrapping_add((j - self.start) as u32);
        self.start = j;
        if j >= 4096 && j > self.slots.len() / 2 {
            // Move the list down over the slots isolation emptied (numbers unchanged).
            self.slots.drain(..j);
            self.start = 0;
        }
    }

    /// Whether the holes are worth squeezing out (they outnumber the folios).
    fn sparse(&self) -> bool {
        self.slots.len() - self.start > 2 * self.live + 64
    }

    /// Squeeze out the holes, renumbering the folios' slots (same order).
    fn compact(&mut self, ft: &mut FolioTable) {
        self.slots.drain(..self.start);
        self.start = 0;
        self.slots.retain(|&p| p != NO_PFN);
        for (i, &p) in self.slots.iter().enumerate() {
            ft.get_mut(p).pos = self.base.wrapping_add(i as u32);
        }
    }

    fn tail(&self) -> Option<Pfn> {
        self.slots.get(self.start).copied()
    }

    /// The list, tail first, holes included.
    fn slots(&self) -> &[Pfn] {
        &self.slots[self.start..]
    }
}

pub struct Lruvec {
    /// The classic four lists, then MGLRU's generation lists (folio.rs LRU_GEN_BASE).
    lists: [SlotList; NR_ALL_LISTS],
    pub nr_pages: [u64; NR_ALL_LISTS],
    /// lru_note_cost's running costs (anon, file).
    pub anon_cost: u64,
    pub file_cost: u64,
    /// workingset: nonresident_age, advanced on eviction and activation.
    pub nonresident_age: u64,
    /// snapshot_refaults: WORKINGSET_ACTIVATE_{ANON,FILE} at the end of the last reclaim.
    pub refaults_snapshot: [u64; 2],
    /// lruvec->lrugen (mm/lru_gen.rs); `enabled` routes every add to the generation lists.
    pub lrugen: LruGen,
}

impl Lruvec {
    pub fn new() -> Lruvec {
        Lruvec {
            lists: Default::default(),
            nr_pages: [0; NR_ALL_LISTS],
            anon_cost: 0,
            file_cost: 0,
            nonresident_age: 0,
            refaults_snapshot: [0; 2],
            lrugen: LruGen::default(),
        }
    }

    /// The list a folio belongs on (folio_lru_list).
    pub fn folio_lru_list(f: &super::folio::Folio) -> u8 {
        let base = if f.is_file_lru() { 2 } else { 0 };
        base + f.test(pg::ACTIVE) as u8
    }

    /// lruvec_add_folio: at the head (the young end); with MGLRU, lru_gen_add_folio.
    pub fn add(&mut self, ft: &mut FolioTable, pfn: Pfn) {
        if self.lrugen.enabled {
            self.lru_gen_add_folio(ft, pfn, false);
            return;
        }
        let lru = Self::folio_lru_list(ft.get(pfn));
        self.list_add(ft, pfn, lru);
    }

    /// lruvec_add_folio_tail (folio_rotate_reclaimable's lru_move_tail): the reclaim end of
    /// the folio's list; with MGLRU, lru_gen_add_folio(reclaiming = true): the oldest gen's tail.
    pub fn add_tail(&mut self, ft: &mut FolioTable, pfn: Pfn) {
        if self.lrugen.enabled {
            self.lru_gen_add_folio(ft, pfn, true);
            return;
        }
        let lru = Self::folio_lru_list(ft.get(pfn));
        self.list_add_tail(ft, pfn, lru);
    }

    /// list_add_tail onto list `lru`.
    pub fn list_add_tail(&mut self, ft: &mut FolioTable, pfn: Pfn, lru: u8) {
        let pos = self.lists[lru as usize].push_tail(pfn);
        self.link(ft, pfn, lru, pos);
    }

    /// list_add onto list `lru` (the head).
    pub fn list_add(&mut self, ft: &mut FolioTable, pfn: Pfn, lru: u8) {
        let pos = self.lists[lru as usize].push_head(pfn);
        self.link(ft, pfn, lru, pos);
    }

    fn link(&mut self, ft: &mut FolioTable, pfn: Pfn, lru: u8, pos: u32) {
        let f = ft.get_mut(pfn);
        debug_assert_eq!(f.lru, LRU_NONE);
        f.lru = lru;
        f.pos = pos;
        f.set(pg::LRU);
        self.nr_pages[lru as usize] += f.nr_pages();
    }

    /// lruvec_del_folio.
    pub fn del(&mut self, ft: &mut FolioTable, pfn: Pfn) {
        let f = ft.get_mut(pfn);
        let (lru, pos, n) = (f.lru, f.pos, f.nr_pages());
        assert_ne!(lru, LRU_NONE, "folio {pfn} not on an LRU");
        f.lru = LRU_NONE;
        f.clear(pg::LRU);
        let l = &mut self.lists[lru as usize];
        l.remove(pos, pfn);
        if l.sparse() {
            l.compact(ft);
        }
        self.nr_pages[lru as usize] -= n;
    }

    /// lruvec_del_folio of the tail folio of list `lru` (isolation), which it returns; starts
    /// loading the record of the folio `ahead` places behind it (a hint only).
    pub fn del_tail(&mut self, ft: &mut FolioTable, lru: u8, ahead: usize) -> Option<Pfn> {
        let l = &mut self.lists[lru as usize];
        let pfn = l.pop_tail()?;
        if let Some(&p) = l.slots().get(ahead - 1) {
            if p != NO_PFN {
                crate::prefetch::prefetch(ft.get(p));
            }
        }
        let f = ft.get_mut(pfn);
        debug_assert_eq!(f.lru, lru, "folio {pfn} on list {lru} says {}", f.lru);
        f.lru = LRU_NONE;
        f.clear(pg::LRU);
        self.nr_pages[lru as usize] -= f.nr_pages();
        Some(pfn)
    }

    pub fn tail(&self, lru: u8) -> Option<Pfn> {
        self.lists[lru as usize].tail()
    }

    /// Start loading the records of the folios in the first `n` slots from the tail of list
    /// `lru`, which isolation is about to take (a hint: no effect on any result).
    pub fn prefetch_tail(&self, ft: &FolioTable, lru: u8, n: usize) {
        for &p in self.lists[lru as usize].slots().iter().take(n) {
            if p != NO_PFN {
                crate::prefetch::prefetch(ft.get(p));
            }
        }
    }

    pub fn size(&self, lru: u8) -> u64 {
        self.nr_pages[lru as usize]
    }

    pub fn total(&self) -> u64 {
        self.nr_pages.iter().sum()
    }

    /// Walk one list head to tail (for invariant checks).
    pub fn iter<'a>(&'a self, _ft: &FolioTable, lru: u8) -> impl Iterator<Item = Pfn> + 'a {
        self.lists[lru as usize]
            .slots()
            .iter()
            .rev()
            .copied()
            .filter(|&p| p != NO_PFN)
    }
}

impl Default for Lruvec {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Delete `pfn`; whether that squeezed its list (the head's slot number changed).
    fn del_renumbers(lv: &mut Lruvec, ft: &mut FolioTable, pfn: Pfn) -> bool {
        let lru = ft.get(pfn).lru as usize;
        let head = *lv.lists[lru].slots().last().expect("on a list");
        let before = ft.get(head).pos;
        lv.del(ft, pfn);
        head != pfn && ft.get(head).pos != before
    }

    /// The lists against plain vectors in list order (head first), under random adds at either
    /// end, deletions anywhere and isolation from the tail: the same order, tail and sizes, and
    /// each folio's slot number finds it, also across the squeezes that renumber slots.
    #[test]
    fn slot_lists_keep_list_order() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let mut ft = FolioTable::new();
        let pfns: Vec<Pfn> = (0..600).map(|i| ft.alloc(pg::ANON, 0, i)).collect();
        let mut lv = Lruvec::new();
        let mut model: [Vec<Pfn>; 2] = [Vec::new(), Vec::new()];
        let mut squeezed = 0;
        for round in 0..40_000 {
            let pfn = pfns[rng.gen_range(0..pfns.len())];
            let on = ft.get(pfn).lru;
            if on == LRU_NONE {
                let lru = rng.gen_range(0..2u8);
                if rng.gen_range(0..4) == 0 {
                    lv.list_add_tail(&mut ft, pfn, lru);
                    model[lru as usize].push(pfn);
                } else {
                    lv.list_add(&mut ft, pfn, lru);
                    model[lru as usize].insert(0, pfn);
                }
            } else if rng.gen_range(0..3) == 0 {
                // Isolation: the tail.
                let t = lv.tail(on).expect("a non-empty list has a tail");
                assert_eq!(Some(&t), model[on as usize].last());
                if round % 2 == 0 {
                    squeezed += del_renumbers(&mut lv, &mut ft, t) as u32;
                } else {
                    assert_eq!(lv.del_tail(&mut ft, on, 8), Some(t));
                }
                assert_eq!(ft.get(t).lru, LRU_NONE);
                assert!(!ft.get(t).test(pg::LRU));
                model[on as usize].pop();
            } else {
                squeezed += del_renumbers(&mut lv, &mut ft, pfn) as u32;
                model[on as usize].retain(|&p| p != pfn);
            }
            if round % 97 == 0 {
                for lru in 0..2u8 {
                    let got: Vec<Pfn> = lv.iter(&ft, lru).collect();
                    assert_eq!(got, model[lru as usize], "list {lru} at round {round}");
                    assert_eq!(lv.size(lru), model[lru as usize].len() as u64);
                    assert_eq!(lv.tail(lru), model[lru as usize].last().copied());
                    let l = &lv.lists[lru as usize];
                    for &p in &model[lru as usize] {
                        let i = ft.get(p).pos.wrapping_sub(l.base) as usize;
                        assert_eq!(l.slots()[i], p, "folio {p}'s slot number");
                    }
                }
            }
        }
        assert!(squeezed > 0, "the test never squeezed a list");
    }

    /// A list used as a queue (adds at the head, isolation from the tail) for longer than its
    /// slots: the slots move down under it, and the order and the slot numbers hold.
    #[test]
    fn slot_list_queue_moves_down() {
        let mut ft = FolioTable::new();
        let pfns: Vec<Pfn> = (0..300).map(|i| ft.alloc(pg::ANON, 0, i)).collect();
        let mut lv = Lruvec::new();
        for &p in &pfns {
            lv.list_add(&mut ft, p, 0);
        }
        let mut moved = false;
        for round in 0..20_000 {
            let t = lv.tail(0).expect("non-empty");
            let start = lv.lists[0].start;
            if round % 3 == 0 {
                lv.del(&mut ft, t);
            } else {
                assert_eq!(lv.del_tail(&mut ft, 0, 8), Some(t));
            }
            moved |= lv.lists[0].start < start;
            lv.list_add(&mut ft, t, 0);
            assert_eq!(lv.tail(0), Some(pfns[(round + 1) % pfns.len()]));
        }
        assert!(moved, "the slots never moved down");
        let l = &lv.lists[0];
        assert!(
            l.slots.len() < 8192,
            "{} slots for 300 folios",
            l.slots.len()
        );
        let order: Vec<Pfn> = lv.iter(&ft, 0).collect();
        let want: Vec<Pfn> = (0..300).rev().map(|i| pfns[(20_000 + i) % 300]).collect();
        assert_eq!(order, want);
        for &p in &pfns {
            let i = ft.get(p).pos.wrapping_sub(l.base) as usize;
            assert_eq!(l.slots()[i], p, "folio {p}'s slot number");
        }
    }
}
