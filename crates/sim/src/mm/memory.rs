//! Page faults (mm/memory.c): do_anonymous_page, do_swap_page, the file fault path, and the
//! hardware side of a user access (TLB lookup, page walk setting accessed/dirty bits).

use crate::arch::x86::tlb::{TLB_DIRTY, TLB_WRITABLE};
use crate::cputime::Spent;
use crate::kernel::{Backing, CpuId, Kernel, MmId};
use crate::mm::folio::{pg, Pfn};
use crate::mm::huge_memory::HPAGE_PMD_ORDER;
use crate::mm::memcontrol::Charge;
use crate::mm::pgtable::*;
use crate::mm::vmstat::VmEventItem::*;

/// What one user access cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Through a usable TLB entry.
    TlbHit,
    /// TLB miss, resolved by a page walk.
    Walk,
    /// A page fault was taken (and handled).
    Fault,
    /// The task was OOM-killed while faulting.
    Killed,
    /// The fault found its folio locked by reclaim running on another CPU: retry later.
    Blocked,
}

impl Kernel {
    /// One user load or store by the task running on `cpu` to page `vp` of `mm`.
    pub fn user_access(&mut self, cpu: CpuId, mm: MmId, vp: u64, write: bool) -> Access {
        self.user_access_ns(cpu, mm, vp, write, self.cost.touch_page)
    }

    /// `user_access` whose work on the page, once translated, takes `touch_ns` of CPU time
    /// (a stress-ng method pass: docs/cost-model.md) instead of `touch_page`.
    pub fn user_access_ns(
        &mut self,
        cpu: CpuId,
        mm: MmId,
        vp: u64,
        write: bool,
        touch_ns: u64,
    ) -> Access {
        let need = if write { TLB_WRITABLE | TLB_DIRTY } else { 0 };
        if let Some((pfn, flags)) = self.cpus[cpu].tlb.lookup(mm, vp) {
            if flags & need == need {
                let stale = pfn != ZERO_PFN && !self.pte_maps(mm, vp, pfn);
                if stale {
                    // A store (or load) through a stale translation: the race the dirty flush
                    // rule exists for. Counted; a store into a freed frame is a bug.
                    self.vmstat.count_vm_events(STALE_TLB_WRITES, write as u64);
                    // LUF leaves read-only entries of freed frames until their reallocation.
                    let luf = !write && self.luf.owed(pfn);
                    if !self.folios.get(pfn).test(pg::ALLOCATED) && !luf {
                        self.invariant_fail(format!(
                            "CPU {cpu} accessed freed pfn {pfn} through a stale TLB entry (mm {mm} page {vp})"
                        ));
                    }
                }
                if write {
                    self.oracle_store(cpu, mm, vp, pfn, stale);
                }
                self.charge(cpu, touch_ns, Spent::User);
                return Access::TlbHit;
            }
        }
        let mut result = Access::Walk;
        let mut pte = self.mms[mm].ptes[vp as usize];
        if !pte_present(pte) || (write && pte & PTE_WRITE == 0) {
            if self.fault_folio_locked(mm, vp) {
                return Access::Blocked;
            }
            if !self.handle_mm_fault(cpu, mm, vp, write) {
                return Access::Killed;
            }
            result = Access::Fault;
            pte = self.mms[mm].ptes[vp as usize];
            if !pte_present(pte) || (write && pte & PTE_WRITE == 0) {
                // The fault lost a race with another thread (see release_raced_folio): the
                // access is retried.
                return Access::Blocked;
            }
        }
        // The page walk sets the accessed (and for a store, dirty) bit.
        pte |= PTE_YOUNG;
        if write {
            pte |= PTE_DIRTY;
        }
        self.mms[mm].ptes[vp as usize] = pte;
        let flags = if pte & PTE_WRITE != 0 {
            TLB_WRITABLE
        } else {
            0
        } | if pte & PTE_DIRTY != 0 { TLB_DIRTY } else { 0 };
        self.cpus[cpu].tlb.fill(mm, vp, pte_pfn(pte), flags);
        if write {
            self.oracle_store(cpu, mm, vp, pte_pfn(pte), false);
        }
        self.charge_parts(
            cpu,
            &[
                (self.cost.tlb_walk, Spent::TlbWalk),
                (touch_ns, Spent::User),
            ],
        );
        result
    }

    /// MADV_POPULATE_READ on one page (madvise_populate → faultin_page_range: GUP with
    /// FOLL_TOUCH, in the kernel, no user access): a page that is not present is faulted in as
    /// by a read (the new PTE is young: x86's vm_page_prot carries _PAGE_ACCESSED). Either way
    /// the page then goes through follow_page_pte, whose FOLL_TOUCH folio_mark_accessed()s it:
    /// __get_user_pages retries follow_page_mask after a successful faultin_page, so a folio
    /// the populate faulted in leaves it with PG_referenced set, and reclaim's first trip over
    /// it (young PTE + PG_referenced) activates it. No TLB entry is filled.
    pub fn populate_read(&mut self, cpu: CpuId, mm: MmId, vp: u64) -> Access {
        self.charge(cpu, self.cost.gup_page, Spent::Gup);
        let mut result = Access::Walk;
        if !pte_present(self.mms[mm].ptes[vp as usize]) {
            if self.fault_folio_locked(mm, vp) {
                return Access::Blocked;
            }
            if !self.handle_mm_fault(cpu, mm, vp, false) {
                return Access::Killed;
            }
            if !pte_present(self.mms[mm].ptes[vp as usize]) {
                return Access::Blocked;
            }
            self.mms[mm].ptes[vp as usize] |= PTE_YOUNG;
            result = Access::Fault;
        }
        let pfn = pte_pfn(self.mms[mm].ptes[vp as usize]);
        if pfn != ZERO_PFN {
            self.folio_mark_accessed(pfn);
        }
        result
    }

    /// folio_mark_accessed (mm/swap.c, classic LRU): the first call sets PG_referenced; a
    /// second on an inactive folio activates it (folio_activate), clears PG_referenced and
    /// counts a workingset activation (nonresident age).
    pub fn folio_mark_accessed(&mut self, pfn: Pfn) {
        if self.lruvec.lrugen.enabled {
            self.lru_gen_inc_refs(pfn);
            return;
        }
        let f = self.folios.get_mut(pfn);
        if !f.test(pg::REFERENCED) {
            f.set(pg::REFERENCED);
            return;
        }
        if f.test(pg::ACTIVE) {
            return;
        }
        let n = f.nr_pages();
        if self.folio_in_lru_add_batch(pfn) {
            // __lru_cache_activate_folio: still in the lru_add batch, so it is only marked
            // active and goes on the active list when the batch moves.
            let f = self.folios.get_mut(pfn);
            f.set(pg::ACTIVE);
            f.clear(pg::REFERENCED);
            self.workingset_age_nonresident(n);
            return;
        }
        if !self.folios.get(pfn).test(pg::LRU) {
            return;
        }
        self.lruvec.del(&mut self.folios, pfn);
        let f = self.folios.get_mut(pfn);
        f.set(pg::ACTIVE);
        f.clear(pg::REFERENCED);
        self.lruvec.add(&mut self.folios, pfn);
        self.vmstat.count_vm_events(PGACTIVATE, n);
        self.workingset_age_nonresident(n);
    }

    /// Allocate and charge a new folio of 2^order pages; None if the task (mm) was OOM-killed
    /// meanwhile.
    pub(crate) fn alloc_charged_folio(
        &mut self,
        cpu: CpuId,
        mm: MmId,
        flags: u16,
        owner: u32,
        index: u32,
        order: u8,
    ) -> Option<Pfn> {
        let nr = 1u64 << order;
        // The page allocator's watermarks (a no-op unless the node model is on); false: the
        // task is in direct reclaim and retries the fault in its next step.
        if !self.prepare_alloc_pages(cpu, nr) {
            return None;
        }
        loop {
            let gen = self.mm_generation(mm);
            match self.try_charge(cpu, nr) {
                Charge::Ok => {
                    if self.mm_generation(mm) != gen {
                        self.memcg.uncharge(nr);
                        return None;
                    }
                    let pfn = self.folios.alloc_order(flags, owner, index, order);
                    self.luf_flush_on_alloc(cpu, pfn);
                    return Some(pfn);
                }
                Charge::Throttled => return None,
                Charge::Oom => {
                    if self.mm_generation(mm) != gen {
                        return None;
                    }
                }
            }
        }
    }

    /// Would a fault on (mm, vp) wait for a folio lock reclaim holds? do_swap_page's
    /// folio_lock_or_retry on a swap-cache folio, filemap_fault's lock_folio_maybe_drop_mmap
    /// on a cached one (and do_wp_page's lock on a mapped one). Only reclaim preemption
    /// points (`sim.interleave = "folio"`) let a fault run while reclaim holds a lock.
    fn fault_folio_locked(&self, mm: MmId, vp: u64) -> bool {
        let pte = self.mms[mm].ptes[vp as usize];
        let pfn = if pte_present(pte) || (is_swap_pte(pte) && pte & PTE_SWPCACHE != 0) {
            pte_pfn(pte)
        } else if let Backing::File(file) = self.mms[mm].backing {
            let slot = self.files[file].cache[vp as usize];
            if slot & PTE_SWPCACHE == 0 {
                return false;
            }
            slot & PTE_LOW_MASK
        } else {
            return false;
        };
        pfn != ZERO_PFN && self.folios.get(pfn).test(pg::LOCKED)
    }

    /// handle_mm_fault. Returns false if the faulting task was OOM-killed.
    pub fn handle_mm_fault(&mut self, cpu: CpuId, mm: MmId, vp: u64, write: bool) -> bool {
        self.vmstat.count_vm_event(PGFAULT);
        self.charge(cpu, self.cost.fault_base, Spent::Fault);
        let pte = self.mms[mm].ptes[vp as usize];
        if is_zero_pte(pte) {
            // do_wp_page → wp_page_copy on the zero page: a new zeroed folio replaces it, and
            // ptep_clear_flush flushes the old translation (flush_tlb_page: IPIs to CPUs
            // running the mm, and the once-a-second cpumask trim).
            self.mms[mm].ptes[vp as usize] = PTE_NONE;
            self.flush_tlb_mm_range(cpu, mm, vp, vp + 1, false);
            return self.do_anon_fault(cpu, mm, vp, true, PTE_NONE);
        }
        if pte_present(pte) && self.pmd_mapped(mm, vp) {
            // A store to a write-protected PMD-mapped page-cache folio (mm/huge_memory.rs).
            let pfn = pte_pfn(pte);
            self.do_huge_pmd_wp_page(cpu, mm, vp, pfn);
            self.task_dirty_folio(cpu, pfn);
            return true;
        }
        if pte_present(pte) {
            // do_wp_page on an exclusive anon folio: reuse it, dropping its swap copy.
            // (For a shared file folio: wp_page_shared makes it writable and dirty again.)
            let pfn = pte_pfn(pte);
            self.folio_free_swap_clean(pfn);
            self.mms[mm].ptes[vp as usize] = pte | PTE_WRITE | PTE_DIRTY;
            self.task_dirty_folio(cpu, pfn);
            return true;
        }
        match self.mms[mm].backing {
            Backing::Anon => self.do_anon_fault(cpu, mm, vp, write, pte),
            Backing::File(file) => self.filemap_fault(cpu, mm, file, vp, write),
        }
    }

    /// Drop a swap-cache folio's slot (the page is about to differ from its swap copy).
    /// folio_free_swap refuses a folio under writeback (a block device's write in flight).
    fn folio_free_swap_clean(&mut self, pfn: Pfn) {
        let f = self.folios.get_mut(pfn);
        if !f.test(pg::WRITEBACK) && f.test_clear(pg::SWAPCACHE) {
            let (mm, vp) = (f.owner as MmId, u64::from(f.index));
            self.swap.free_slot(mm, vp);
        }
    }

    fn do_anon_fault(&mut self, cpu: CpuId, mm: MmId, vp: u64, write: bool, pte: Pte) -> bool {
        let flags = pg::ANON | pg::SWAPBACKED;
        if is_swap_pte(pte) && pte & PTE_SWPCACHE != 0 {
            // Minor fault on a folio still in the swap cache.
            let pfn = pte_pfn(pte);
            if self.swap.block.is_some() {
                // Its read may still be in flight (mm/swap_state.rs).
                self.swap_cache_hit(cpu, mm, vp, pfn);
            }
            self.map_swapped_in(mm, vp, pfn, write);
            return true;
        }
        if pte == PTE_NONE && !write {
            // do_anonymous_page, read: map the shared zero page read-only.
            self.mms[mm].ptes[vp as usize] = PTE_PRESENT | PTE_YOUNG | ZERO_PFN;
            return true;
        }
        let Some(pfn) = self.alloc_charged_folio(cpu, mm, flags, mm as u32, vp as u32, 0) else {
            return false;
        };
        if self.mms[mm].ptes[vp as usize] != pte {
            // Reclaim during the charge let another thread fault the page in first: the PTE
            // lock's pte_same / pte_none recheck fails and the new folio is dropped.
            self.release_raced_folio(pfn);
            return true;
        }
        if is_swap_pte(pte) && self.swap.block.is_some() {
            // do_swap_page on a block device: readahead into the swap cache, and a sleep
            // until the read completes (mm/swap_state.rs).
            self.vmstat.count_vm_event(PGMAJFAULT);
            self.swapin_readahead(cpu, mm, vp, write, pfn, pte);
        } else if is_swap_pte(pte) {
            // do_swap_page: synchronous zram read, workingset refault check.
            self.vmstat.count_vm_event(PGMAJFAULT);
            self.vmstat.count_vm_event(PSWPIN);
            let read = self.zram_page_ns(mm).1;
            self.charge_parts(
                cpu,
                &[
                    (self.cost.alloc_anon_folio, Spent::AllocFolio),
                    (self.cost.do_swap_page, Spent::DoSwapPage),
                    (read, Spent::ZramDecompress),
                ],
            );
            self.workingset_refault(pfn, pte & PTE_LOW_MASK);
            self.lru_add_fault(cpu, pfn);
            if self.swap.synchronous_io {
                // SWP_SYNCHRONOUS_IO (zram) and __swap_count(entry) == 1 (an unshared anon
                // page): "skip swapcache". The page is read straight into a new folio that is
                // never added to the swap cache, and the slot is released (swap_free_nr), so
                // the next reclaim of this page needs a new slot and a new pageout, read
                // fault or not (add_to_swap marks it dirty).
                self.swap.free_slot(mm, vp);
                self.mms[mm].swapents -= 1;
                if write {
                    self.folios.get_mut(pfn).set(pg::DIRTY);
                }
                self.set_pte(mm, vp, pfn, true, write);
            } else {
                self.folios.get_mut(pfn).set(pg::SWAPCACHE);
                self.map_swapped_in(mm, vp, pfn, write);
            }
        } else {
            // do_anonymous_page: zeroed folio on the inactive anon list.
            self.charge_parts(
                cpu,
                &[
                    (self.cost.alloc_anon_folio, Spent::AllocFolio),
                    (self.cost.zero_page, Spent::ZeroPage),
                ],
            );
            self.lru_add_fault(cpu, pfn);
            self.set_pte(mm, vp, pfn, true, write);
        }
        true
    }

    /// Map a swap-cache folio. A write fault on the exclusive folio frees the swap copy
    /// (should_try_to_free_swap); a read fault keeps it, mapping the PTE writable but clean,
    /// unless swap is over half full (mem_cgroup_swap_full; on a block device only, the zram
    /// model keeping the slot as it always has).
    pub(crate) fn map_swapped_in(&mut self, mm: MmId, vp: u64, pfn: Pfn, write: bool) {
        if write {
            self.folio_free_swap_clean(pfn);
            self.folios.get_mut(pfn).set(pg::DIRTY);
        } else if self.swap.block.is_some()
            && self.swap.vm_swap_full()
            && !self.folios.get(pfn).test(pg::WRITEBACK)
        {
            self.folio_free_swap(pfn);
        }
        self.mms[mm].swapents -= 1;
        self.set_pte(mm, vp, pfn, true, write);
    }

    /// Drop a folio allocated for a fault another thread resolved first (never mapped, never
    /// on an LRU). Only reclaim preemption points (`sim.interleave = "folio"`) open the window.
    fn release_raced_folio(&mut self, pfn: Pfn) {
        let nr = self.folios.get(pfn).nr_pages();
        self.memcg.uncharge(nr);
        self.oracle_discard(pfn);
        self.folios.free(pfn);
    }

    /// Install a present PTE and account the mapping (rss, MAPPED).
    pub fn set_pte(&mut self, mm: MmId, vp: u64, pfn: Pfn, writable: bool, dirty: bool) {
        self.mms[mm].ptes[vp as usize] = mk_pte(pfn, writable, dirty);
        self.mms[mm].pte_tables[(vp >> HPAGE_PMD_ORDER) as usize] = true;
        self.mms[mm].rss += 1;
        self.folios.get_mut(pfn).set(pg::MAPPED);
        self.contpte_try_fold(mm, vp);
    }

    /// do_read_fault / do_shared_fault: filemap_fault + finish_fault for a shared file
    /// mapping. A read fault first tries fault-around. A page-cache miss allocates a folio of
    /// `sim.file_folio_order` aligned in the file (the largest aligned order that fits below
    /// the end of the file and in empty cache slots) or lets readahead read it, then maps the
    /// faulting page (a read fault: through its retry's fault-around; a write fault: by
    /// finish_fault, the folio's other pages by their own faults).
    fn filemap_fault(&mut self, cpu: CpuId, mm: MmId, file: usize, vp: u64, write: bool) -> bool {
        // The same fault resumed after a reclaim_throttle sleep in its charge: filemap_fault
        // counted PGMAJFAULT and ran do_sync_mmap_readahead before it (the kernel sleeps
        // inside __filemap_get_folio's charge and carries on). A window whose allocation or
        // charge had to wait (`Readahead::resume`) was counted too, and its fault goes on
        // inside page_cache_ra_order, not through fault-around again.
        let ra_resume = self.ra.resume.contains_key(&(file, vp));
        // do_read_fault: ->map_pages first, ->fault only if that did not map the page;
        // do_shared_fault (a store) does no fault-around.
        if !write && !ra_resume && self.filemap_map_pages(cpu, mm, file, vp) {
            return true;
        }
        let major = self.files[file].cache[vp as usize] & PTE_SWPCACHE == 0;
        let after_throttle = self.ra.sync_done.remove(&(file, vp));
        if major && !after_throttle && !ra_resume {
            self.vmstat.count_vm_event(PGMAJFAULT);
        }
        if self.ra.ra_pages > 0 && !after_throttle {
            // do_sync_mmap_readahead / do_async_mmap_readahead (mm/readahead.rs).
            if !self.filemap_readahead(cpu, mm, file, vp) {
                return false;
            }
        }
        let slot = self.files[file].cache[vp as usize];
        if slot & PTE_SWPCACHE != 0 {
            let pfn = slot & PTE_LOW_MASK;
            // folio_lock: a folio asynchronous readahead is still reading is waited for.
            let first = self.folios.get(pfn).index as u64;
            if let Some(done) = self.folio_read_pending(cpu, file, first, pfn) {
                self.io_wait_until(cpu, done);
            }
            if major && !write && self.filemap_fault_retry(cpu, mm, file, vp) {
                return true;
            }
            if self.pte_changed(mm, vp) {
                return true;
            }
            self.finish_fault(mm, vp, pfn, write);
            if write {
                self.task_dirty_folio(cpu, pfn);
            }
            return true;
        }
        let (start, order) = self.file_folio_extent(file, vp);
        let nr = 1u64 << order;
        let Some(pfn) = self.alloc_charged_folio(cpu, mm, 0, file as u32, start as u32, order)
        else {
            if self.sleep_pending(cpu) {
                self.ra.sync_done.insert((file, vp));
            }
            return false;
        };
        if self.files[file].cache[start as usize..(start + nr) as usize]
            .iter()
            .any(|&c| c & PTE_SWPCACHE != 0)
        {
            // Another thread added (part of) the range to the page cache while this one
            // reclaimed for its charge: filemap_add_folio fails with -EEXIST; retry.
            self.release_raced_folio(pfn);
            return true;
        }
        // __filemap_get_folio(FGP_CREAT) → filemap_alloc_folio: the page allocator.
        self.charge(cpu, self.cost.page_cache_alloc, Spent::AllocFolio);
        self.read_plug_start();
        self.file_fill(cpu, file, start, nr);
        if slot & PTE_SWP != 0 {
            self.file_refault(cpu, pfn, slot & PTE_LOW_MASK);
        }
        self.lru_add_fault(cpu, pfn);
        self.page_cache_insert_locked(cpu, file);
        for p in start..start + nr {
            self.files[file].cache[p as usize] = PTE_SWPCACHE | pfn;
        }
        if !write && self.filemap_fault_retry(cpu, mm, file, vp) {
            return true;
        }
        if self.pte_changed(mm, vp) {
            return true;
        }
        self.finish_fault(mm, vp, pfn, write);
        if write {
            self.task_dirty_folio(cpu, pfn);
        }
        true
    }

    /// finish_fault for a page-cache folio `pfn` holding `vp`: a PMD-sized folio under a
    /// pmd_none PMD is mapped with one PMD (do_set_pmd); otherwise the whole folio is mapped
    /// with PTEs in one go when `sim.file_fault_whole_folio` is set and none of its PTEs is
    /// (set_pte_range over folio_nr_pages: a write fault makes them all writable and dirty),
    /// else only `vp`'s. Mapping the whole folio is mm/memory.c as of "mm/fault: Try to map
    /// the entire file folio in finish_fault()" (linux-mm, September 2025); before it only
    /// shmem did so. This machine's 6.18 build shows it: its sequential writer took about
    /// 0.04 faults per page touched, where its PTE-mapped large folios alone would take one
    /// a page. Folios are naturally aligned, so one never crosses a page table or the mapping.
    fn finish_fault(&mut self, mm: MmId, vp: u64, pfn: Pfn, write: bool) {
        if self.do_set_pmd(mm, vp, pfn, write) {
            return;
        }
        // A shared writable mapping with dirty accounting (vma_wants_writenotify): a read
        // fault maps the pages read-only, so the first store takes a write fault that marks
        // the folio dirty (do_shared_fault / wp_page_shared).
        let writable = self.mms[mm].writable && write;
        let f = *self.folios.get(pfn);
        let (first, nr) = (f.index as u64, f.nr_pages());
        let range = first as usize..(first + nr) as usize;
        if nr > 1
            && self.cfg.file_fault_whole_folio
            && self.mms[mm].ptes[range].iter().all(|&p| p == PTE_NONE)
        {
            for p in first..first + nr {
                self.set_pte(mm, p, pfn, writable, write);
            }
        } else {
            self.set_pte(mm, vp, pfn, writable, write);
        }
    }

    /// finish_fault's pte_none recheck under the PTL: another thread of the mm mapped the
    /// page while this fault slept or reclaimed for its charge (a reclaim preemption point,
    /// `sim.interleave = "folio"`); VM_FAULT_NOPAGE, and the access retries.
    fn pte_changed(&self, mm: MmId, vp: u64) -> bool {
        crate::mm::pgtable::pte_present(self.mms[mm].ptes[vp as usize])
    }

    /// A read fault that missed the page cache read its folio with the mmap lock dropped
    /// (maybe_unlock_mmap_for_io) and returns VM_FAULT_RETRY; the retried fault is another
    /// handle_mm_fault whose do_read_fault maps the page (and its cached neighbours) by
    /// fault-around, counting them as hits against mmap_miss. Returns whether it mapped the
    /// page (not if its folio carries PG_readahead: then the retry's filemap_fault maps it).
    fn filemap_fault_retry(&mut self, cpu: CpuId, mm: MmId, file: usize, vp: u64) -> bool {
        self.vmstat.count_vm_event(PGFAULT);
        self.filemap_map_pages(cpu, mm, file, vp)
    }

    /// The aligned extent (first page, order) of the page-cache folio a miss at `vp` creates:
    /// `sim.file_folio_order`, reduced until it fits inside the file and covers only pages
    /// that are not cached (a neighbour may still be cached from a smaller folio).
    pub(crate) fn file_folio_extent(&self, file: usize, vp: u64) -> (u64, u8) {
        self.file_folio_extent_at(file, vp, self.cfg.file_folio_order)
    }

    /// [`Self::file_folio_extent`] for a wanted `order` (readahead's, mm/readahead.rs).
    pub(crate) fn file_folio_extent_at(&self, file: usize, vp: u64, order: u8) -> (u64, u8) {
        let cache = &self.files[file].cache;
        let mut order = order;
        loop {
            let nr = 1u64 << order;
            let start = vp & !(nr - 1);
            let fits = start + nr <= cache.len() as u64
                && (start..start + nr).all(|p| cache[p as usize] & PTE_SWPCACHE == 0);
            if order == 0 || fits {
                return (start, order);
            }
            order -= 1;
        }
    }
}
