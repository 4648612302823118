//! Folios (include/linux/mm_types.h, page-flags.h): one entry per allocated folio. Anon folios
//! are order-0; page-cache folios have `sim.file_folio_order`. The folio's number (pfn) is its
//! index in [`FolioTable`]; every PTE of a large folio holds that number (the head page), and
//! the page within the folio is the PTE's offset from the folio's `index`.

pub type Pfn = u32;
pub const NO_PFN: Pfn = u32::MAX;

/// Page flags we model (PG_*).
pub mod pg {
    pub const LRU: u16 = 1 << 0;
    pub const ACTIVE: u16 = 1 << 1;
    pub const REFERENCED: u16 = 1 << 2;
    pub const WORKINGSET: u16 = 1 << 3;
    pub const DIRTY: u16 = 1 << 4;
    pub const WRITEBACK: u16 = 1 << 5;
    pub const SWAPBACKED: u16 = 1 << 6;
    pub const SWAPCACHE: u16 = 1 << 7;
    pub const ANON: u16 = 1 << 8;
    pub const RECLAIM: u16 = 1 << 9;
    /// The folio is mapped by at least one PTE (every folio here has at most one VMA mapping
    /// it; a large folio's PTEs are all cleared together by try_to_unmap).
    pub const MAPPED: u16 = 1 << 10;
    /// The frame is allocated (not on the free list).
    pub const ALLOCATED: u16 = 1 << 11;
    /// PG_locked: reclaim holds the folio lock (seen by faults only with
    /// `sim.interleave = "folio"`; otherwise no fault can run while it is held).
    pub const LOCKED: u16 = 1 << 14;
    /// The owner's mm exited while reclaim held the folio isolated: the exit dropped only the
    /// mapping's reference (zap_pte_range → folio_remove_rmap_ptes), and the isolation
    /// reference (isolate_lru_folios' folio_try_get) keeps the folio until reclaim's last put
    /// frees it. `owner`/`index` name nothing any more (the mm restarts as a fresh process).
    pub const ORPHAN: u16 = 1 << 15;
    /// MGLRU's refs counter (LRU_REFS_WIDTH = 2 bits, include/linux/mm_inline.h): accesses
    /// through file descriptors beyond the first (which sets PG_referenced).
    pub const LRU_REFS_SHIFT: u32 = 12;
    pub const LRU_REFS_MASK: u16 = 3 << LRU_REFS_SHIFT;
    /// LRU_REFS_FLAGS: what folio_inc_gen / folio_update_gen reset.
    pub const LRU_REFS_FLAGS: u16 = LRU_REFS_MASK | REFERENCED;
}

/// Which LRU list a folio is on (enum lru_list), or none (isolated / free).
pub const LRU_INACTIVE_ANON: u8 = 0;
pub const LRU_ACTIVE_ANON: u8 = 1;
pub const LRU_INACTIVE_FILE: u8 = 2;
pub const LRU_ACTIVE_FILE: u8 = 3;
pub const NR_LRU_LISTS: usize = 4;
pub const LRU_NONE: u8 = u8::MAX;
/// Not on a list yet: queued in a CPU's lru_add batch (mm/cpu_fbatches.rs).
pub const LRU_FBATCH: u8 = u8::MAX - 1;
/// MGLRU's lists (`lrugen->folios[gen][type]`, one zone): list LRU_GEN_BASE + gen * 2 + type
/// (type 0 anon, 1 file), gen = seq % MAX_NR_GENS. They share the lruvec's intrusive lists.
pub const LRU_GEN_BASE: u8 = NR_LRU_LISTS as u8;
pub const MAX_NR_GENS: u64 = 4;
pub const NR_ALL_LISTS: usize = NR_LRU_LISTS + 2 * MAX_NR_GENS as usize;

/// 16 bytes per frame.
#[derive(Clone, Copy, Debug)]
pub struct Folio {
    pub flags: u16,
    pub order: u8,
    pub lru: u8,
    /// Owner: mm id (anon) or file id (page cache).
    pub owner: u32,
    /// Page index in the owner (virtual page in the mm, or file page offset).
    pub index: u32,
    /// While on an LRU list: its slot's sequence number there (mm/lru.rs).
    pub pos: u32,
}

impl Folio {
    pub fn test(&self, f: u16) -> bool {
        self.flags & f != 0
    }
    pub fn set(&mut self, f: u16) {
        self.flags |= f;
    }
    pub fn clear(&mut self, f: u16) {
        self.flags &= !f;
    }
    /// folio_test_clear_*.
    pub fn test_clear(&mut self, f: u16) -> bool {
        let was = self.test(f);
        self.flags &= !f;
        was
    }
    pub fn nr_pages(&self) -> u64 {
        1 << self.order
    }
    pub fn is_anon(&self) -> bool {
        self.test(pg::ANON)
    }
    /// folio_is_file_lru: page cache that is not swap-backed.
    pub fn is_file_lru(&self) -> bool {
        !self.test(pg::SWAPBACKED)
    }
}

/// All frames, with a LIFO free list (like the per-CPU page lists: the hottest frame is reused).
pub struct FolioTable {
    pub folios: Vec<Folio>,
    free: Vec<Pfn>,
    /// Pages (not folios) allocated.
    pub nr_allocated: u64,
}

impl FolioTable {
    pub fn new() -> FolioTable {
        FolioTable {
            folios: Vec::new(),
            free: Vec::new(),
            nr_allocated: 0,
        }
    }

    pub fn alloc(&mut self, flags: u16, owner: u32, index: u32) -> Pfn {
        self.alloc_order(flags, owner, index, 0)
    }

    /// Allocate a folio of 2^order pages (one table entry).
    pub fn alloc_order(&mut self, flags: u16, owner: u32, index: u32, order: u8) -> Pfn {
        let f = Folio {
            flags: flags | pg::ALLOCATED,
            order,
            lru: LRU_NONE,
            owner,
            index,
            pos: 0,
        };
        self.nr_allocated += f.nr_pages();
        match self.free.pop() {
            Some(pfn) => {
                self.folios[pfn as usize] = f;
                pfn
            }
            None => {
                self.folios.push(f);
                (self.folios.len() - 1) as Pfn
            }
        }
    }

    pub fn free(&mut self, pfn: Pfn) {
        let f = &mut self.folios[pfn as usize];
        assert!(f.test(pg::ALLOCATED), "double free of pfn {pfn}");
        assert!(
            f.lru == LRU_NONE && !f.test(pg::MAPPED),
            "freeing a folio in use"
        );
        f.flags = 0;
        self.nr_allocated -= f.nr_pages();
        self.free.push(pfn);
    }

    pub fn get(&self, pfn: Pfn) -> &Folio {
        &self.folios[pfn as usize]
    }
    pub fn get_mut(&mut self, pfn: Pfn) -> &mut Folio {
        &mut self.folios[pfn as usize]
    }
}

impl Default for FolioTable {
    fn default() -> Self {
        Self::new()
    }
}
