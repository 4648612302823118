//! Reads and writes through a file descriptor (mm/filemap.c filemap_read, generic_perform_write):
//! no page tables are involved, the page cache is found by index and every access marks the
//! folio accessed (folio_mark_accessed: PG_referenced / activation on the classic LRU, the refs
//! counter and tiers under MGLRU). A miss allocates the folio outside any fault, so under MGLRU
//! it is not set active and enters an old generation (lru_gen_folio_seq).

use crate::kernel::{Backing, CpuId, Kernel, MmId};
use crate::mm::folio::Pfn;
use crate::mm::memory::Access;
use crate::mm::pgtable::*;

impl Kernel {
    /// pread (write = false) or pwrite of a part of page `idx` of the file behind `mm`'s
    /// mapping (the caller's file). A partial write reads the page first (write_begin).
    pub fn filemap_rw(&mut self, cpu: CpuId, mm: MmId, idx: u64, write: bool) -> Access {
        let Backing::File(file) = self.mms[mm].backing else {
            panic!("filemap_rw on an anonymous mm");
        };
        self.charge(cpu, self.cost.touch_page);
        let slot = self.files[file].cache[idx as usize];
        let (pfn, result) = if slot & PTE_SWPCACHE != 0 {
            (slot & PTE_LOW_MASK, Access::Walk)
        } else {
            match self.filemap_add(cpu, mm, file, idx, slot) {
                Some(pfn) => (pfn, Access::Fault),
                None => return Access::Killed,
            }
        };
        // filemap_read / __filemap_get_folio(FGP_ACCESSED).
        self.folio_mark_accessed(pfn);
        if write {
            self.task_dirty_folio(cpu, pfn);
        }
        result
    }

    /// page_cache_ra_order → filemap_add_folio (refault check) → folio_add_lru, then the read.
    fn filemap_add(
        &mut self,
        cpu: CpuId,
        mm: MmId,
        file: usize,
        idx: u64,
        slot: u32,
    ) -> Option<Pfn> {
        let (start, order) = self.file_folio_extent(file, idx);
        let nr = 1u64 << order;
        let pfn = self.alloc_charged_folio(cpu, mm, 0, file as u32, start as u32, order)?;
        self.charge(cpu, nr * self.cost.file_read_page);
        if slot & PTE_SWP != 0 {
            self.workingset_refault(pfn, slot & PTE_LOW_MASK);
        }
        self.lruvec.add(&mut self.folios, pfn);
        self.page_cache_insert_locked(cpu, file);
        for p in start..start + nr {
            self.files[file].cache[p as usize] = PTE_SWPCACHE | pfn;
        }
        Some(pfn)
    }
}
