//! Reads and writes through a file descriptor (mm/filemap.c filemap_read, generic_perform_write):
//! no page tables are involved, the page cache is found by index and every access marks the
//! folio accessed (folio_mark_accessed: PG_referenced / activation on the classic LRU, the refs
//! counter and tiers under MGLRU). A miss allocates the folio outside any fault, so under MGLRU
//! it is not set active and enters an old generation (lru_gen_folio_seq).

use crate::cputime::Spent;
use crate::kernel::{Backing, CpuId, Kernel, MmId};
use crate::locking::LockId;
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
        self.charge(cpu, self.cost.touch_page, Spent::User);
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
        self.charge(cpu, self.cost.page_cache_alloc, Spent::AllocFolio);
        self.charge(cpu, nr * self.cost.file_read_page, Spent::PageCache);
        if slot & PTE_SWP != 0 {
            self.file_refault(cpu, pfn, slot & PTE_LOW_MASK);
        }
        // filemap_add_folio → folio_add_lru: through this CPU's lru_add batch.
        self.folio_add_lru(cpu, pfn);
        self.page_cache_insert_locked(cpu, file);
        for p in start..start + nr {
            self.files[file].cache[p as usize] = PTE_SWPCACHE | pfn;
        }
        Some(pfn)
    }

    /// filemap_release_folio for a folio reclaim is about to remove (shrink_folio_list calls
    /// it before __remove_mapping when folio_needs_release): a folio with buffer heads has
    /// them freed by try_to_free_buffers, drop_buffers under the mapping's i_private_lock and
    /// free_buffer_head after it. A clean folio's buffers are always free to drop here.
    pub(crate) fn filemap_release_folio(&mut self, cpu: CpuId, pfn: Pfn) {
        let f = *self.folios.get(pfn);
        let (file, index, n) = (f.owner as usize, f.index as usize, f.nr_pages());
        if !self.files[file].has_buffers(index) {
            return;
        }
        let total = n * self.cost.release_buffers;
        let locked = (n * self.cost.release_buffers_locked).min(total);
        self.lock_section(
            cpu,
            LockId::PrivateLock(file),
            (locked, Spent::PageCache),
            1,
        );
        self.charge(cpu, total - locked, Spent::PageCache);
        self.files[file].set_buffers(index, n as usize, false);
        self.vmstat
            .count_vm_events(crate::mm::vmstat::VmEventItem::BUFFERS_RELEASED, n);
    }
}
