//! File-mapping workloads: `file-mmap-rw` (threads of one process sweep, or randomly access,
//! a shared file mapping larger than the memcg) and `file-reclaim` (threads populate a
//! read-only shared mapping, then memory.reclaim reclaims part of it and is timed).
//! Page-cache folios have `sim.file_folio_order` (default 0), created by filemap_fault.

use super::{AccessModel, Sweep};

pub fn mmap_rw_model(write: bool, random: bool) -> AccessModel {
    AccessModel {
        sweeps: vec![if write { Sweep::Write } else { Sweep::Read }],
        random,
        random_write: write,
        bogo_units_per_store: 0,
        one_cycle: false,
        ycsb: None,
    }
}

pub fn populate_model() -> AccessModel {
    AccessModel {
        sweeps: vec![Sweep::Read],
        random: false,
        random_write: false,
        bogo_units_per_store: 0,
        one_cycle: true,
        ycsb: None,
    }
}
