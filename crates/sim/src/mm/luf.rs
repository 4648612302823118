//! LUF, lazy unmap flush (policies `luf` and the unsafe `luf-writable`): Byungchul Park's
//! (SK hynix) RFC series, 2024-2025, not merged ("LUF(Lazy Unmap Flush) reducing tlb numbers
//! over 90%", linux-mm, e.g. <20240531092001.30428-1-byungchul@sk.com>; LPC 2024 talk "LUF").
//!
//! Its decision points, as the cover letter states them:
//! * unmap (try_to_unmap_one): a folio whose every mapping was read-only needs no flush
//!   before it is freed, since no CPU can change its content through a stale entry; its flush
//!   goes into a global pending batch, tagged with a generation (the RFC's luf_ugen), instead
//!   of the reclaimer's tlb_ubc;
//! * free (free_unref_folios): such a folio is freed without waiting for that flush; the
//!   frame keeps its generation;
//! * allocation: before a frame whose generation is not yet flushed is handed out again,
//!   the pending batch is flushed from the allocating CPU (arch_tlbbatch_flush).
//!
//! `luf-writable` applies the same to writable mappings, which is unsafe: a store through a
//! stale writable entry after pageout's copy is lost (`check` and the oracle catch it).

use crate::arch::ArchTlbBatch;
use crate::config::Patch;
use crate::kernel::{CpuId, Kernel, MmId};
use crate::mm::folio::Pfn;
use crate::mm::vmstat::VmEventItem::*;

/// The global pending batch and the frames waiting for it.
#[derive(Clone, Debug, Default)]
pub struct Luf {
    batch: Option<ArchTlbBatch>,
    /// Generation of the latest deferred unmap, and the one the latest flush covered.
    ugen: u64,
    flushed: u64,
    /// Per frame (folio table entry): the generation of its deferred unmap, 0 for none.
    stamp: Vec<u64>,
}

impl Luf {
    /// A flush is still owed for `pfn`'s deferred unmap: read-only stale entries may exist.
    pub fn owed(&self, pfn: Pfn) -> bool {
        self.stamp
            .get(pfn as usize)
            .is_some_and(|&g| g > self.flushed)
    }
}

impl Kernel {
    /// Whether try_to_unmap_one may defer this folio's flush past its free: LUF is on and
    /// every present PTE mapping `pfn` in pages [first, end) of `mm` is read-only (or the
    /// unsafe variant, which does not ask).
    pub fn luf_may_defer(&self, mm: MmId, pfn: Pfn, first: u64, end: u64) -> bool {
        use crate::mm::pgtable::{pte_pfn, pte_present, PTE_WRITE};
        if !self.has(Patch::Luf) {
            return false;
        }
        self.has(Patch::LufWritable)
            || self.mms[mm].ptes[first as usize..end as usize]
                .iter()
                .all(|&p| !(pte_present(p) && pte_pfn(p) == pfn) || p & PTE_WRITE == 0)
    }

    /// The deferred unmap of pages [start, end) of `mm` mapping `pfn`: into the pending batch.
    pub fn luf_defer(&mut self, cpu: CpuId, mm: MmId, pfn: Pfn, start: u64, end: u64) {
        let mut batch = self
            .luf
            .batch
            .take()
            .unwrap_or_else(|| ArchTlbBatch::new(self.arch, self.nr_cpus()));
        self.arch_tlbbatch_add_pending(cpu, &mut batch, mm, start, end);
        let l = &mut self.luf;
        l.batch = Some(batch);
        l.ugen += 1;
        if l.stamp.len() <= pfn as usize {
            l.stamp.resize(pfn as usize + 1, 0);
        }
        l.stamp[pfn as usize] = l.ugen;
        self.vmstat.count_vm_events(LUF_DEFERRED_PAGES, end - start);
    }

    /// The allocator hands out `pfn`: flush first if its deferred unmap is still owed.
    pub fn luf_flush_on_alloc(&mut self, cpu: CpuId, pfn: Pfn) {
        if !self.luf.owed(pfn) {
            return;
        }
        let mut batch = self.luf.batch.take().expect("an owed flush has a batch");
        self.oracle_flush(cpu, "LUF: the deferred flush, at the frame's reallocation");
        self.arch_tlbbatch_flush(cpu, &mut batch);
        let l = &mut self.luf;
        l.batch = Some(batch);
        l.flushed = l.ugen;
        self.vmstat.count_vm_event(LUF_FLUSHES);
    }
}
