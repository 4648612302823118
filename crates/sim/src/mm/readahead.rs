//! Page-cache readahead on mmap faults (mm/filemap.c: do_sync_mmap_readahead,
//! do_async_mmap_readahead; mm/readahead.c: page_cache_ra_unbounded, page_cache_async_ra,
//! get_next_ra_size), and the cost of reading a page of a sparse file.
//!
//! Readahead decides the order in which page-cache folios enter the LRU: a window of
//! `ra_pages` folios of one file is added at once, so reclaim later finds runs of one file's
//! (one mm's) folios at the tail, and a deferred flush batch covers fewer mms. Off
//! (`ra_pages = 0`) unless a workload sets it; then every miss reads only its own folio.
//!
//! Not modelled: fault-around (filemap_map_pages mapping up to 16 cached pages per fault;
//! here every page takes its own minor fault), the mmap_miss heuristic, VM_SEQ_READ /
//! VM_RAND_READ advice, and asynchronous I/O (the reads are charged to the faulting CPU).

use crate::kernel::{CpuId, Kernel, MmId};
use crate::mm::pgtable::*;

/// struct file_ra_state, plus the index of the folio carrying PG_readahead.
#[derive(Clone, Copy, Debug, Default)]
pub struct FileRa {
    pub start: u64,
    pub size: u64,
    pub async_size: u64,
    pub mark: Option<u64>,
}

#[derive(Clone, Debug, Default)]
pub struct Readahead {
    /// bdi->ra_pages (read_ahead_kb / 4); 0 = no readahead.
    pub ra_pages: u64,
    /// The files are sparse: a page-cache miss reads a hole, which the filesystem fills with
    /// zeroes (iomap IOMAP_HOLE → folio_zero_range) instead of doing I/O.
    pub sparse: bool,
    /// Per file (one reader per file here: the kernel keeps it per open file).
    pub state: Vec<FileRa>,
    /// Pages brought in by readahead (including the faulting pages).
    pub pages_read: u64,
}

/// get_next_ra_size.
fn get_next_ra_size(cur: u64, max: u64) -> u64 {
    if cur < max / 16 {
        4 * cur
    } else if cur <= max / 2 {
        2 * cur
    } else {
        max
    }
}

impl Kernel {
    /// CPU cost of filling one page-cache page on a miss: zeroing for a hole of a sparse
    /// file, else the device read (`file_read_page`).
    pub fn file_read_cost(&self) -> u64 {
        if self.ra.sparse {
            self.cost.zero_page
        } else {
            self.cost.file_read_page
        }
    }

    /// The readahead part of filemap_fault for page `vp` of `file` (mapped by `mm`), run
    /// before the page is looked up: a miss starts the mmap read-around window centred on
    /// `vp` (do_sync_mmap_readahead: start = vp - ra_pages/2, size = ra_pages, async_size =
    /// ra_pages/4); a cached folio carrying PG_readahead starts the next window
    /// (do_async_mmap_readahead → page_cache_async_ra: a sequential hit ramps the window up
    /// and moves it past the current one, async_size = size). The window's uncached pages are
    /// allocated, read and added to the page cache and the LRU in index order; cached ones are
    /// skipped. PG_readahead goes on the folio at start + size - async_size.
    /// Returns false if an allocation has to wait (direct reclaim in progress): the fault is
    /// retried, and the window's remaining pages are read then.
    pub(crate) fn filemap_readahead(&mut self, cpu: CpuId, mm: MmId, file: usize, vp: u64) -> bool {
        let ra_pages = self.ra.ra_pages;
        if self.ra.state.len() <= file {
            self.ra.state.resize(file + 1, FileRa::default());
        }
        let len = self.files[file].cache.len() as u64;
        let cached = |k: &Kernel, p: u64| k.files[file].cache[p as usize] & PTE_SWPCACHE != 0;
        let old = self.ra.state[file];
        let mut st = old;
        let major = !cached(self, vp);
        if major {
            st.start = vp.saturating_sub(ra_pages / 2);
            st.size = ra_pages;
            st.async_size = ra_pages / 4;
        } else if st.mark == Some(vp) {
            if vp == st.start + st.size - st.async_size {
                st.start += st.size;
                st.size = get_next_ra_size(st.size, ra_pages);
            } else {
                // A marked folio without matching state: restart at the next missing page.
                let mut next = vp + 1;
                while next < len && cached(self, next) {
                    next += 1;
                }
                st.start = next;
                st.size = ra_pages;
            }
            st.async_size = st.size;
        } else {
            return true;
        }
        st.mark = None;
        self.ra.state[file] = st;
        let mark = st.start + st.size - st.async_size;
        let end = (st.start + st.size).min(len);
        let mut idx = st.start;
        while idx < end {
            if cached(self, idx) {
                idx += 1;
                continue;
            }
            let (first, order) = self.file_folio_extent(file, idx);
            let nr = 1u64 << order;
            let Some(pfn) = self.alloc_charged_folio(cpu, mm, 0, file as u32, first as u32, order)
            else {
                // Retried in the next step from the same state (mark included).
                self.ra.state[file] = old;
                return false;
            };
            self.charge(cpu, nr * self.file_read_cost());
            let slot = self.files[file].cache[first as usize];
            if slot & PTE_SWP != 0 {
                self.workingset_refault(pfn, slot & PTE_LOW_MASK);
            }
            self.lruvec.add(&mut self.folios, pfn);
            for p in first..first + nr {
                self.files[file].cache[p as usize] = PTE_SWPCACHE | pfn;
            }
            self.ra.pages_read += nr;
            if (first..first + nr).contains(&mark) {
                self.ra.state[file].mark = Some(mark);
            }
            idx = first + nr;
        }
        if major {
            self.vmstat.pgmajfault += 1;
        }
        true
    }
}
