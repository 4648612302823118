//! The lruvec (include/linux/mmzone.h, mm_inline.h): four intrusive doubly linked lists
//! threaded through the folios, plus the reclaim cost and refault bookkeeping that
//! get_scan_count and prepare_scan_control read. One memcg on one node: one lruvec.

use super::folio::{pg, FolioTable, Pfn, LRU_NONE, NO_PFN, NR_ALL_LISTS};
use super::lru_gen::LruGen;

#[derive(Clone, Copy, Debug)]
struct ListHead {
    head: Pfn,
    tail: Pfn,
}

pub struct Lruvec {
    /// The classic four lists, then MGLRU's generation lists (folio.rs LRU_GEN_BASE).
    lists: [ListHead; NR_ALL_LISTS],
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
            lists: [ListHead {
                head: NO_PFN,
                tail: NO_PFN,
            }; NR_ALL_LISTS],
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
        let l = &mut self.lists[lru as usize];
        let old_tail = l.tail;
        {
            let f = ft.get_mut(pfn);
            debug_assert_eq!(f.lru, LRU_NONE);
            f.lru = lru;
            f.prev = old_tail;
            f.next = NO_PFN;
            f.set(pg::LRU);
        }
        if old_tail != NO_PFN {
            ft.get_mut(old_tail).next = pfn;
        } else {
            l.head = pfn;
        }
        l.tail = pfn;
        self.nr_pages[lru as usize] += ft.get(pfn).nr_pages();
    }

    /// list_add onto list `lru` (the head).
    pub fn list_add(&mut self, ft: &mut FolioTable, pfn: Pfn, lru: u8) {
        let l = &mut self.lists[lru as usize];
        let old_head = l.head;
        {
            let f = ft.get_mut(pfn);
            debug_assert_eq!(f.lru, LRU_NONE);
            f.lru = lru;
            f.prev = NO_PFN;
            f.next = old_head;
            f.set(pg::LRU);
        }
        if old_head != NO_PFN {
            ft.get_mut(old_head).prev = pfn;
        } else {
            l.tail = pfn;
        }
        l.head = pfn;
        self.nr_pages[lru as usize] += ft.get(pfn).nr_pages();
    }

    /// lruvec_del_folio.
    pub fn del(&mut self, ft: &mut FolioTable, pfn: Pfn) {
        let (lru, prev, next, n) = {
            let f = ft.get(pfn);
            (f.lru, f.prev, f.next, f.nr_pages())
        };
        assert_ne!(lru, LRU_NONE, "folio {pfn} not on an LRU");
        let l = &mut self.lists[lru as usize];
        if prev != NO_PFN {
            ft.get_mut(prev).next = next;
        } else {
            l.head = next;
        }
        if next != NO_PFN {
            ft.get_mut(next).prev = prev;
        } else {
            l.tail = prev;
        }
        let f = ft.get_mut(pfn);
        f.lru = LRU_NONE;
        f.prev = NO_PFN;
        f.next = NO_PFN;
        f.clear(pg::LRU);
        self.nr_pages[lru as usize] -= n;
    }

    pub fn tail(&self, lru: u8) -> Option<Pfn> {
        let t = self.lists[lru as usize].tail;
        (t != NO_PFN).then_some(t)
    }

    pub fn size(&self, lru: u8) -> u64 {
        self.nr_pages[lru as usize]
    }

    pub fn total(&self) -> u64 {
        self.nr_pages.iter().sum()
    }

    /// Walk one list head to tail (for invariant checks).
    pub fn iter<'a>(&self, ft: &'a FolioTable, lru: u8) -> impl Iterator<Item = Pfn> + 'a {
        let mut cur = self.lists[lru as usize].head;
        std::iter::from_fn(move || {
            if cur == NO_PFN {
                return None;
            }
            let p = cur;
            cur = ft.get(p).next;
            Some(p)
        })
    }
}

impl Default for Lruvec {
    fn default() -> Self {
        Self::new()
    }
}
