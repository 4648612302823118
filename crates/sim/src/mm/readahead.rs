//! Page-cache readahead on mmap faults (mm/filemap.c: do_sync_mmap_readahead,
//! do_async_mmap_readahead; mm/readahead.c: page_cache_ra_unbounded, page_cache_async_ra,
//! get_next_ra_size), and the cost of reading a page of a sparse file.
//!
//! Readahead decides the order in which page-cache folios enter the LRU: a window of
//! `ra_pages` folios of one file is added at once, so reclaim later finds runs of one file's
//! (one mm's) folios at the tail, and a deferred flush batch covers fewer mms. Off
//! (`ra_pages = 0`) unless a workload sets it; then every miss reads only its own folio.
//!
//! Folio orders (mm/readahead.c page_cache_ra_order, 6.18): the read-around window of a miss
//! starts at order 0; every asynchronous window (a PG_readahead hit) raises `ra->order` by 2,
//! capped at the filesystem's largest folio order and at ilog2 of the window, so a sequential
//! reader's folios grow 0, 2, 4, 6, 8, 9 (PMD) window by window. Inside a window each folio is
//! as large as that order allows while staying naturally aligned and inside the window and the
//! file; once one cannot be added (a cached page in its range, or its charge fails) the rest
//! of the window is read in order-0 folios (do_page_cache_ra), ra->order kept. `sim.file_folio_order` (non-zero) replaces the ramp with one fixed order.
//!
//! Each folio is charged with readahead_gfp_mask (__GFP_NORETRY): try_charge_memcg still
//! reclaims (twice, draining the per-CPU stocks between) before it fails with -ENOMEM, and
//! that reclaim may sleep in reclaim_throttle (cgroup v1, a batch of dirty folios) and go on
//! after the sleep. The model ends a reclaim call at such a sleep, so the charge is taken up
//! again after it: the fault is retried and resumes its own window (`Readahead::resume`,
//! also used when the page allocator has to wait), as the kernel's task carries on inside
//! page_cache_ra_order. Only a charge whose reclaim found no room without sleeping fails.
//!
//! One file_ra_state per open file (file->f_ra): the threads of a process faulting through
//! one mapping share it, so two sequential streams overwrite each other's window. A marker
//! hit whose fault is not where the state expects its marker takes page_cache_async_ra's
//! interleaved branch (the window starts at the next page missing after it), and ra->order
//! ramps on whichever stream hits a marker; a miss's read-around resets it for both. Every
//! asynchronous window ends on a boundary of its order, so the next one starts aligned.
//!
//! The mmap_miss heuristic (do_sync_mmap_readahead): every miss counts one, a hit in the cache
//! takes one off (do_async_mmap_readahead) and a read fault's fault-around takes off one per
//! cached page it maps (filemap_map_pages, up to 16; PG_workingset pages do not count); past
//! MMAP_LOTSAMISS (100) a miss reads only its own folio. Write faults on a shared mapping do
//! no fault-around (do_shared_fault), so a writer that only stores soon loses read-around
//! while a reader (or a writer that loads first: its first touch is a read fault) keeps it.
//!
//! PG_readahead and PG_reclaim are one bit: a dirty folio that reclaim tagged for immediate
//! reclaim reads as a marker, so fault-around skips it and a fault on it starts an
//! asynchronous window (unless it is under writeback), clearing the tag.
//!
//! Fault-around (`filemap_map_pages`): a read fault first maps the cached pages of its
//! 16-page window; if that maps the faulting page, filemap_fault is not called at all.
//!
//! Not modelled: VM_SEQ_READ / VM_RAND_READ advice, and asynchronous I/O (the reads are
//! charged to the faulting CPU).

use crate::cputime::Spent;
use crate::kernel::{CpuId, Kernel, MmId};
use crate::mm::folio::{pg, Pfn};
use crate::mm::memcontrol::NoretryCharge;
use crate::mm::pgtable::*;
use crate::mm::vmstat::VmEventItem::*;

/// struct file_ra_state: one per open file, so every thread faulting through the one mapping
/// of a file shares it (file->f_ra), and interleaved streams overwrite each other's window.
#[derive(Clone, Copy, Debug, Default)]
pub struct FileRa {
    pub start: u64,
    pub size: u64,
    pub async_size: u64,
    /// ra->order: the folio order of the last window (6.16+ keeps it in file_ra_state).
    pub order: u8,
    /// ra->mmap_miss: page-cache misses of mmap faults not yet offset by hits.
    pub mmap_miss: u32,
}

/// One readahead window being read: page_cache_ra_order's request (ractl and the window it
/// was given) and where its loop stands. A task whose allocation or charge has to wait
/// (global direct reclaim, a reclaim_throttle sleep) keeps it: the kernel's task sleeps
/// inside page_cache_ra_order and carries on with its own window, which the model does by
/// retrying the fault and resuming the window (`Readahead::resume`).
#[derive(Clone, Copy, Debug)]
pub struct RaWindow {
    pub start: u64,
    pub size: u64,
    pub async_size: u64,
    pub order: u8,
    /// Where page_cache_ra_order's loop stands (`index`): the next page to allocate.
    pub next: u64,
    /// The faulting task waits for the reads (a miss's read-around); page_cache_async_ra's
    /// reads are only submitted.
    pub sync: bool,
    /// page_cache_ra_order has fallen back to order-0 folios (do_page_cache_ra).
    pub fallback: bool,
    /// try_charge_memcg's `drained` for the folio whose charge slept.
    pub drained: bool,
}

/// MMAP_LOTSAMISS: past this many unanswered misses, mmap faults stop reading around.
const MMAP_LOTSAMISS: u32 = 100;
/// fault_around_bytes / PAGE_SIZE (64 KiB).
const FAULT_AROUND_PAGES: u64 = 16;

#[derive(Clone, Debug, Default)]
pub struct Readahead {
    /// bdi->ra_pages (read_ahead_kb / 4); 0 = no readahead.
    pub ra_pages: u64,
    /// The files are sparse: a page-cache miss reads a hole, which the filesystem fills with
    /// zeroes (iomap IOMAP_HOLE → folio_zero_range) instead of doing I/O.
    pub sparse: bool,
    /// Per file (one reader per file here: the kernel keeps it per open file).
    pub state: Vec<FileRa>,
    /// Per file, the pages whose blocks are allocated but unwritten (fallocate: an unwritten
    /// extent); empty = every block holds data. Reading an unwritten block is no I/O: the
    /// filesystem zeroes the folio (ext4_mpage_readpages treats a block that ext4_map_blocks
    /// does not report EXT4_MAP_MAPPED as a hole). Writeback makes the block written (ext4
    /// converts the extent when the write completes).
    pub unwritten: Vec<Vec<bool>>,
    /// mapping_max_folio_order of the files (0: no large folios; the default).
    pub max_order: u8,
    /// Page-cache folios readahead created, by order (measurement).
    pub folios_by_order: [u64; 10],
    /// THP_FILE_MAPPED: page-cache folios mapped with one PMD (do_set_pmd).
    pub thp_file_mapped: u64,
    /// Folios carrying PG_readahead: (file, first index) → the folio (a reclaimed and
    /// re-read folio at the same index is a different one, without the flag).
    pub marks: std::collections::BTreeMap<(usize, u64), crate::mm::folio::Pfn>,
    /// Faults (file, page) whose filemap_fault already ran do_sync_mmap_readahead and then
    /// stopped in a reclaim_throttle sleep of the folio's charge: the kernel sleeps inside
    /// __filemap_get_folio's charge and carries on, so the retried fault goes straight to the
    /// allocation (no second mmap_miss count, read-around or PGMAJFAULT).
    pub sync_done: std::collections::BTreeSet<(usize, u64)>,
    /// Windows whose reading stopped at an allocation or charge that had to wait, by the
    /// fault (file, page) that started them: that fault, retried, carries on with its window
    /// instead of starting a new one. Per fault, not per file: the other threads of the
    /// process go on with the file's shared state meanwhile.
    pub resume: std::collections::BTreeMap<(usize, u64), RaWindow>,
    /// Folios whose device read, submitted by asynchronous readahead, completes later:
    /// (file, first index) → (the folio, completion time). Until then the folio is locked
    /// and not uptodate: a fault on it waits (filemap_fault's folio_lock), fault-around
    /// skips it (next_uptodate_folio). Reclaim does not see the lock (an approximation).
    pub reads_in_flight: std::collections::BTreeMap<(usize, u64), (crate::mm::folio::Pfn, u64)>,
    /// The device read request the current fault or readahead pass is building, as (file,
    /// next index, pages): read_pages runs under blk_start_plug, and ext4_mpage_readpages adds
    /// a folio to the open bio while its blocks follow the previous folio's. None between
    /// passes.
    pub read_request: Option<(usize, u64, u64)>,
}

/// The order of the folio page_cache_ra_order allocates at `idx`: `order`, lowered until the
/// folio is naturally aligned and ends at or before `limit` (the window's or the file's end).
pub fn ra_folio_order(idx: u64, order: u8, limit: u64) -> u8 {
    let mut o = order;
    if o > 0 && idx & ((1u64 << o) - 1) != 0 {
        o = o.min(idx.trailing_zeros() as u8);
    }
    while o > 0 && idx + (1u64 << o) - 1 > limit {
        o -= 1;
    }
    o
}

/// page_cache_async_ra's end alignment ("mm/readahead: Terminate async readahead on natural
/// boundary", June 2025, in the 6.18 the test machine runs): the window of `size` pages from `start` is cut back so that it ends on a multiple
/// of 2^min(`order`, log2 of `max_pages`'s lowest set bit), unless that would leave nothing;
/// the next window then starts aligned and its folios can have the full order.
pub fn ra_align_end(start: u64, size: u64, order: u8, max_pages: u64) -> u64 {
    let ffs = max_pages.trailing_zeros().min(63) as u8;
    let align = 1u64 << order.min(ffs);
    let end = start + size;
    let aligned_end = end & !(align - 1);
    if aligned_end > start {
        size - (end - aligned_end)
    } else {
        size
    }
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
    /// The file workloads' readahead: `sim.readahead_pages` (if set) and the filesystem's
    /// largest folio order `sim.file_max_order`.
    pub fn file_readahead_setup(&mut self, cfg: &crate::config::SimConfig) {
        if let Some(n) = cfg.readahead_pages {
            self.ra.ra_pages = n;
        }
        self.ra.max_order = cfg.file_max_order;
    }

    /// do_read_fault's fault-around (do_fault_around → filemap_map_pages) for a read fault at
    /// `vp` of `file` mapped by `mm`: the fault_around_bytes-aligned window of 16 pages around
    /// it is looked up in the page cache and every cached page whose PTE is empty is mapped
    /// read-only and young (x86's vm_page_prot carries _PAGE_ACCESSED; arm64 would map them
    /// old), without a fault of its own. next_uptodate_folio skips locked folios and the folio
    /// carrying PG_readahead (its fault must reach filemap_fault to start the next window). A
    /// PMD-sized folio with an empty PMD is mapped whole (filemap_map_pmd). Every visited page
    /// of a folio without PG_workingset counts as a hit against ra->mmap_miss. Returns
    /// whether the faulting page was mapped (VM_FAULT_NOPAGE: no ->fault call follows).
    /// Mapping the neighbours costs no CPU time of its own in the model (a fault's
    /// `fault_base` covers it).
    pub(crate) fn filemap_map_pages(&mut self, cpu: CpuId, mm: MmId, file: usize, vp: u64) -> bool {
        let len = self.files[file].cache.len() as u64;
        let base = vp & !(FAULT_AROUND_PAGES - 1);
        let end = (base + FAULT_AROUND_PAGES).min(len);
        let mut hits = 0u32;
        let mut mapped_vp = false;
        let mut p = base;
        while p < end {
            let slot = self.files[file].cache[p as usize];
            if slot & PTE_SWPCACHE == 0 {
                p += 1;
                continue;
            }
            let pfn = slot & PTE_LOW_MASK;
            let f = *self.folios.get(pfn);
            let first = f.index as u64;
            let fend = (first + f.nr_pages()).min(end);
            // next_uptodate_folio tests the PG_readahead bit, which is PG_reclaim too.
            if f.test(pg::LOCKED)
                || f.test(pg::RECLAIM)
                || self.ra.marks.get(&(file, first)) == Some(&pfn)
                || self.folio_read_pending(cpu, file, first, pfn).is_some()
            {
                p = fend;
                continue;
            }
            if !self.pmd_mapped(mm, p) && self.do_set_pmd(mm, p, pfn, false) {
                // filemap_map_pmd: the window lies inside the folio.
                return true;
            }
            for q in p..fend {
                if !f.test(pg::WORKINGSET) {
                    hits += 1;
                }
                if self.mms[mm].ptes[q as usize] == PTE_NONE {
                    self.set_pte(mm, q, pfn, false, false);
                    mapped_vp |= q == vp;
                    self.vmstat.count_vm_event(FAULT_AROUND_MAPPED);
                }
            }
            p = fend;
        }
        if self.ra.state.len() <= file {
            self.ra.state.resize(file + 1, FileRa::default());
        }
        let st = &mut self.ra.state[file];
        st.mmap_miss = st.mmap_miss.saturating_sub(hits);
        mapped_vp
    }

    /// The file's blocks are all allocated and unwritten (bench creates its data files with
    /// fallocate and never writes them before the run).
    pub fn file_fallocated(&mut self, file: usize) {
        if self.ra.unwritten.len() <= file {
            self.ra.unwritten.resize(file + 1, Vec::new());
        }
        self.ra.unwritten[file] = vec![true; self.files[file].cache.len()];
    }

    /// Whether the block under page `idx` of `file` is allocated but unwritten.
    pub(crate) fn block_unwritten(&self, file: usize, idx: u64) -> bool {
        self.ra
            .unwritten
            .get(file)
            .and_then(|u| u.get(idx as usize))
            .copied()
            .unwrap_or(false)
    }

    /// The block of page `idx` of `file` now holds data (its writeback completed).
    pub(crate) fn file_block_written(&mut self, file: usize, idx: u64, nr: u64) {
        if let Some(u) = self.ra.unwritten.get_mut(file).filter(|u| !u.is_empty()) {
            for p in idx..idx + nr {
                u[p as usize] = false;
            }
        }
    }

    /// Fill pages `first..first + nr` of `file` on a miss from `cpu`: zeroing a hole or an
    /// unwritten block is CPU time; a device read (`file_read_page` per page, completing
    /// `file_read_latency` after its transfer) is I/O the faulting task sleeps on
    /// (filemap_fault waits for the folio's read: folio_lock). A window's folios are read
    /// one after another, each completing a latency after its own transfer, so a task that
    /// waits for them in turn waits one latency in all, as for the kernel's bio of the
    /// window. The
    /// read goes to the same device as writeback (one request queue: submit_bio of the read
    /// waits behind the writes already queued), so it completes after them.
    pub fn file_fill(&mut self, cpu: CpuId, file: usize, first: u64, nr: u64) {
        // A new folio at `first`: an asynchronous read of an earlier one there is forgotten.
        self.ra.reads_in_flight.remove(&(file, first));
        let (zero, fs, read) = self.file_read_cost(file, first, nr);
        self.charge(cpu, zero, Spent::ZeroPage);
        self.charge(cpu, fs, Spent::PageCache);
        if read > 0 {
            let done = self.file_read_submit(cpu, file, first, nr, read);
            self.io_wait_until(cpu, done);
        }
    }

    /// Submit the device read (`read` ns of transfer) of the folio of `nr` pages at `first`
    /// of `file` from `cpu`, in the request being built or a new one; returns its completion.
    fn file_read_submit(&mut self, cpu: CpuId, file: usize, first: u64, nr: u64, read: u64) -> u64 {
        let fixed = self.read_request_add(cpu, file, first, nr);
        self.blk_submit(
            cpu,
            fixed,
            read,
            self.cost.file_read_latency,
            self.cost.file_read_request,
        )
    }

    /// A new fault or readahead pass reads into a new plug: nothing merges with the
    /// previous pass's request.
    pub fn read_plug_start(&mut self) {
        self.ra.read_request = None;
    }

    /// A device read of the folio of `nr` pages at `first` of `file` by the task on `cpu`:
    /// it joins the request being built if it follows it, within the device's largest request
    /// (`sim.writeback_request_pages`, max_sectors_kb / 4; bio_add_folio, the plug's merge);
    /// otherwise it starts a request, which costs the task `readpages_request` (the bio's
    /// submission and the plug's dispatch to the driver) and the device `file_read_request`.
    /// Returns the device's fixed time for the folio. A folio zeroed in between (a hole) leaves
    /// a gap in the indices, so the next read starts a request, as the kernel's does (its
    /// blocks do not follow the bio's last).
    fn read_request_add(&mut self, cpu: CpuId, file: usize, first: u64, nr: u64) -> u64 {
        let max = self.cfg.writeback_request_pages.max(1);
        match self.ra.read_request.as_mut() {
            Some((f, next, pages)) if *f == file && *next == first && *pages + nr <= max => {
                *next += nr;
                *pages += nr;
                0
            }
            _ => {
                self.ra.read_request = Some((file, first + nr, nr));
                self.vmstat.count_vm_event(FILE_READ_REQUESTS);
                self.charge(cpu, self.cost.readpages_request, Spent::PageCache);
                self.cost.file_read_request
            }
        }
    }

    /// An asynchronous readahead's device read of the folio `pfn` at `first` of `file`:
    /// submitted to the device now, waited for by the first fault that finds the folio before
    /// the read completes.
    fn file_read_async(&mut self, cpu: CpuId, file: usize, first: u64, pfn: Pfn, read: u64) {
        let nr = self.folios.get(pfn).nr_pages();
        let done = self.file_read_submit(cpu, file, first, nr, read);
        let now = self.cpus[cpu].clock;
        let reads = &mut self.ra.reads_in_flight;
        if reads.len() >= 4096 {
            // Forget reads already complete (their folios need no wait).
            reads.retain(|_, &mut (_, d)| d > now);
        }
        reads.insert((file, first), (pfn, done));
    }

    /// Whether the page-cache folio `pfn` at `first` of `file` is still being read at `cpu`'s
    /// time, and until when.
    pub(crate) fn folio_read_pending(
        &self,
        cpu: CpuId,
        file: usize,
        first: u64,
        pfn: Pfn,
    ) -> Option<u64> {
        let now = self.cpus[cpu].clock;
        match self.ra.reads_in_flight.get(&(file, first)) {
            Some(&(p, done)) if p == pfn && done > now => Some(done),
            _ => None,
        }
    }

    /// Cost of filling the folio of pages `first..first + nr` of `file` on a miss: zeroing
    /// for a hole of a sparse file or an unwritten block, with the filesystem's work for it
    /// (ext4_mpage_readpages: ext4_map_blocks for every block that does not map, the folio's
    /// own handling once), and the device read (`file_read_page`) of the others, as (zeroing
    /// ns, filesystem ns, device ns). A folio with no block mapped is zeroed by one
    /// folio_zero_segment, a single memset over the folio: one clear's start (`zero_page`)
    /// and `zero_page_long` for each further page.
    pub fn file_read_cost(&mut self, file: usize, first: u64, nr: u64) -> (u64, u64, u64) {
        let zeroed = if self.ra.sparse {
            nr
        } else {
            match self.ra.unwritten.get(file).filter(|u| !u.is_empty()) {
                Some(u) => (first..first + nr).filter(|&p| u[p as usize]).count() as u64,
                None => 0,
            }
        };
        self.vmstat.count_vm_events(FILE_PAGES_ZEROED, zeroed);
        self.vmstat
            .count_vm_events(FILE_PAGES_READ_FROM_DEVICE, nr - zeroed);
        let zero = if zeroed == nr && nr > 1 {
            self.cost.zero_page + (nr - 1) * self.cost.zero_page_long
        } else {
            // Mapped and unmapped blocks in one folio (ext4 zeroes the tail after its first
            // hole, or reads block by block): each zeroed page its own clear.
            zeroed * self.cost.zero_page
        };
        let fs = if zeroed > 0 {
            self.cost.fs_read_folio + zeroed * self.cost.fs_map_block
        } else {
            0
        };
        (zero, fs, (nr - zeroed) * self.cost.file_read_page)
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
        let window = match self.ra.resume.remove(&(file, vp)) {
            Some(w) => w,
            None => match self.filemap_ra_window(file, vp) {
                Some(w) => w,
                None => return true,
            },
        };
        self.page_cache_ra_order(cpu, mm, file, vp, window)
    }

    /// page_cache_async_ra for a fault at `vp` on the folio (of `nr` pages) carrying
    /// PG_readahead, with the file's shared state `st`. If the fault is where that state
    /// expects its own marker (round_down(start + size - async_size, nr)), the window moves
    /// on and ramps up. Otherwise the state is another stream's (two threads reading one
    /// file through one struct file): the marker's own stream is taken to end at the next
    /// page missing from the cache (page_cache_next_miss, at most ra_pages away) and the new
    /// window starts there, its size that distance plus the request (do_async_mmap_readahead
    /// asks for ra_pages) ramped up. Either way ra->order rises by two and the window's end is
    /// aligned to it. Returns false when there is nothing to read (no miss within reach).
    /// PG_readahead and PG_reclaim are one bit (include/linux/page-flags.h), so a dirty folio
    /// that reclaim tagged for immediate reclaim (shrink_folio_list's folio_set_reclaim)
    /// reads as a readahead marker to do_async_mmap_readahead. page_cache_async_ra gives up
    /// on a folio under writeback (the bit is PG_reclaim there) and otherwise clears the
    /// bit and reads a window: a random writer that faults a tagged folio back in starts an
    /// asynchronous readahead of up to ra_pages. Returns whether the bit reads as a marker
    /// here (and clears it, as folio_clear_readahead does).
    fn folio_reclaim_reads_as_readahead(&mut self, pfn: Pfn) -> bool {
        let f = self.folios.get_mut(pfn);
        if !f.test(pg::RECLAIM) || f.test(pg::WRITEBACK) {
            return false;
        }
        f.clear(pg::RECLAIM);
        self.vmstat.count_vm_event(READAHEAD_ON_RECLAIM_TAG);
        true
    }

    fn page_cache_async_ra(&self, file: usize, vp: u64, nr: u64, st: &mut FileRa) -> bool {
        let ra_pages = self.ra.ra_pages;
        let expected = (st.start + st.size - st.async_size) & !(nr - 1);
        if vp == expected {
            st.start += st.size;
            st.size = st.size.max(get_next_ra_size(st.size, ra_pages));
        } else {
            let cache = &self.files[file].cache;
            let len = cache.len() as u64;
            let mut next = vp + 1;
            while next < len && next - vp <= ra_pages && cache[next as usize] & PTE_SWPCACHE != 0 {
                next += 1;
            }
            if next >= len || next - vp > ra_pages {
                return false;
            }
            st.start = next;
            st.size = get_next_ra_size(next - vp + ra_pages, ra_pages);
        }
        st.order = st.order.saturating_add(2);
        st.size = ra_align_end(st.start, st.size, st.order, ra_pages);
        st.async_size = st.size;
        true
    }

    /// The window filemap_fault's readahead reads for page `vp` of `file`
    /// (do_sync_mmap_readahead on a miss, do_async_mmap_readahead → page_cache_async_ra on
    /// a PG_readahead hit), stored in the file's state; None when there is nothing to read.
    fn filemap_ra_window(&mut self, file: usize, vp: u64) -> Option<RaWindow> {
        let ra_pages = self.ra.ra_pages;
        if self.ra.state.len() <= file {
            self.ra.state.resize(file + 1, FileRa::default());
        }
        let cached = |k: &Kernel, p: u64| k.files[file].cache[p as usize] & PTE_SWPCACHE != 0;
        let mut st = self.ra.state[file];
        let major = !cached(self, vp);
        // PG_readahead is a flag of the folio (any reader may hit it): the folio holding vp.
        let marked = if major {
            false
        } else {
            let pfn = self.files[file].cache[vp as usize] & PTE_LOW_MASK;
            let first = self.folios.get(pfn).index as u64;
            let hit = self.ra.marks.get(&(file, first)) == Some(&pfn);
            if hit {
                self.ra.marks.remove(&(file, first));
            }
            hit || self.folio_reclaim_reads_as_readahead(pfn)
        };
        if major {
            st.mmap_miss = (st.mmap_miss + 1).min(MMAP_LOTSAMISS * 10);
            if st.mmap_miss > MMAP_LOTSAMISS {
                self.ra.state[file].mmap_miss = st.mmap_miss;
                return None;
            }
        } else {
            // do_async_mmap_readahead: a hit that fault-around did not map (a write fault, or
            // the PG_readahead folio, which filemap_map_pages leaves to this path).
            st.mmap_miss = st.mmap_miss.saturating_sub(1);
            self.ra.state[file].mmap_miss = st.mmap_miss;
        }
        if major {
            st.start = vp.saturating_sub(ra_pages / 2);
            st.size = ra_pages;
            st.async_size = ra_pages / 4;
            // do_sync_mmap_readahead's read-around starts again from order 0.
            st.order = 0;
        } else if marked {
            let nr = {
                let pfn = self.files[file].cache[vp as usize] & PTE_LOW_MASK;
                self.folios.get(pfn).nr_pages()
            };
            if !self.page_cache_async_ra(file, vp, nr, &mut st) {
                return None;
            }
            self.vmstat.count_vm_event(READAHEAD_ASYNC_WINDOWS);
        } else {
            return None;
        }
        // page_cache_ra_order: cap at the mapping's largest order and at the window size.
        let ilog2 = 63 - st.size.max(1).leading_zeros() as u8;
        st.order = st.order.min(self.ra.max_order).min(ilog2);
        self.ra.state[file] = st;
        Some(RaWindow {
            start: st.start,
            size: st.size,
            async_size: st.async_size,
            order: st.order,
            next: st.start,
            sync: major,
            fallback: false,
            drained: false,
        })
    }

    /// page_cache_ra_order for the window `w` the fault at `vp` of `file` started: allocate,
    /// read and add to the page cache and the LRU every uncached page of it, in index order;
    /// `w.sync`: the faulting task waits for the device reads. Returns false if an allocation
    /// or charge has to wait (the fault is retried after the wait and resumes the window).
    fn page_cache_ra_order(
        &mut self,
        cpu: CpuId,
        mm: MmId,
        file: usize,
        vp: u64,
        mut w: RaWindow,
    ) -> bool {
        let len = self.files[file].cache.len() as u64;
        let cached = |k: &Kernel, p: u64| k.files[file].cache[p as usize] & PTE_SWPCACHE != 0;
        let mark = w.start + w.size - w.async_size;
        let end = (w.start + w.size).min(len);
        self.read_plug_start();
        // A resumed window carries on where it stopped: its folios read so far are its own,
        // not cached pages that would send it to the order-0 fallback.
        let mut idx = w.next;
        // page_cache_ra_order's fallback: once ra_alloc_folio fails (filemap_add_folio finds a
        // cached page in the folio's range, -EEXIST, or the charge fails, -ENOMEM), the rest
        // of the window is read by do_page_cache_ra → page_cache_ra_unbounded in order-0
        // folios, skipping cached pages, with the same PG_readahead mark; ra->order is kept.
        let ramp = self.cfg.file_folio_order == 0;
        while idx < end {
            if ramp && !w.fallback {
                let o = ra_folio_order(idx, w.order, end - 1);
                w.fallback = (idx..idx + (1 << o)).any(|p| cached(self, p));
            }
            if cached(self, idx) {
                idx += 1;
                continue;
            }
            let (first, order) = if w.fallback {
                (idx, 0)
            } else if !ramp {
                self.file_folio_extent(file, idx)
            } else {
                let o = ra_folio_order(idx, w.order, end - 1);
                self.file_folio_extent_at(file, idx, o)
            };
            let nr = 1u64 << order;
            // readahead_gfp_mask is __GFP_NORETRY: in a memcg whose reclaim frees nothing
            // (dirty pages, writeback) the charge fails and page_cache_ra_unbounded stops at
            // -ENOMEM; the faulting page, if not read yet, is then allocated by filemap_fault
            // with the fault's own gfp.
            if !self.prepare_alloc_pages(cpu, nr) {
                // The fault is retried in the next step and reads the rest of this window.
                w.next = idx;
                self.ra.resume.insert((file, vp), w);
                return false;
            }
            let gen = self.mm_generation(mm);
            match self.try_charge_readahead(cpu, nr, &mut w.drained) {
                NoretryCharge::Ok => w.drained = false,
                NoretryCharge::Throttled => {
                    // Reclaim sleeps in reclaim_throttle: after the sleep the retried fault
                    // takes this charge up again (the kernel's task is still inside it).
                    w.next = idx;
                    self.ra.resume.insert((file, vp), w);
                    return false;
                }
                NoretryCharge::Failed => {
                    w.drained = false;
                    if ramp && !w.fallback {
                        w.fallback = true;
                        continue;
                    }
                    // page_cache_ra_unbounded stops at -ENOMEM.
                    break;
                }
            }
            if self.mm_generation(mm) != gen {
                // OOM-killed while another CPU ran (reclaim preemption points): the task
                // exits and its window with it.
                self.memcg.uncharge(nr);
                return false;
            }
            let pfn = self.folios.alloc_order(0, file as u32, first as u32, order);
            self.luf_flush_on_alloc(cpu, pfn);
            // ractl_alloc_folio → filemap_alloc_folio: the page allocator.
            self.charge(cpu, self.cost.page_cache_alloc, Spent::AllocFolio);
            if w.sync {
                self.file_fill(cpu, file, first, nr);
            } else {
                // page_cache_async_ra: the reads are submitted and the task goes on; the
                // device works in the background, and a fault that reaches a folio before
                // its read completes waits for it (`reads_in_flight`).
                let (zero, fs, read) = self.file_read_cost(file, first, nr);
                self.charge(cpu, zero, Spent::ZeroPage);
                self.charge(cpu, fs, Spent::PageCache);
                if read > 0 {
                    self.file_read_async(cpu, file, first, pfn, read);
                }
            }
            let slot = self.files[file].cache[first as usize];
            if slot & PTE_SWP != 0 {
                self.file_refault(cpu, pfn, slot & PTE_LOW_MASK);
            }
            // filemap_add_folio → folio_add_lru: through this CPU's lru_add batch.
            self.folio_add_lru(cpu, pfn);
            self.page_cache_insert_locked(cpu, file);
            for p in first..first + nr {
                self.files[file].cache[p as usize] = PTE_SWPCACHE | pfn;
            }
            self.vmstat.count_vm_events(READAHEAD_PAGES_READ, nr);
            self.ra.folios_by_order[order as usize] += 1;
            if (first..first + nr).contains(&mark) {
                self.ra.marks.insert((file, first), pfn);
            }
            idx = first + nr;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folio_order_is_aligned_and_inside_the_window() {
        // Aligned and room: the full order.
        assert_eq!(ra_folio_order(512, 9, 4095), 9);
        // Misaligned start: the alignment's order.
        assert_eq!(ra_folio_order(516, 9, 4095), 2);
        // Too close to the limit: shrink.
        assert_eq!(ra_folio_order(512, 9, 600), 6);
        assert_eq!(ra_folio_order(7, 0, 100), 0);
    }
}
