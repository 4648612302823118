//! include/linux/mm_types_task.h: the per-task deferred unmap flush state.

use crate::arch::{Arch, ArchTlbBatch};
use crate::mm::folio::Pfn;

/// struct tlbflush_unmap_batch (current->tlb_ubc): the arch's batch plus the two generic
/// flags try_to_unmap_flush and try_to_unmap_flush_dirty (mm/rmap.rs) look at.
#[derive(Clone, Debug)]
pub struct TlbUbc {
    pub arch: ArchTlbBatch,
    /// A PTE was cleared and its flush deferred: a CPU may still hold its translation.
    pub flush_required: bool,
    /// A dirty PTE was deferred: a CPU may hold a writable, dirty translation.
    pub writable: bool,
    /// `unlock-dirty-after-flush`: activated dirty file folios reclaim keeps locked until the
    /// next try_to_unmap_flush (not a kernel field: the hypothetical patch's list).
    pub unlock_at_flush: Vec<Pfn>,
}

impl TlbUbc {
    pub fn new(arch: Arch, nr_cpus: usize) -> TlbUbc {
        TlbUbc {
            arch: ArchTlbBatch::new(arch, nr_cpus),
            flush_required: false,
            writable: false,
            unlock_at_flush: Vec::new(),
        }
    }
}
