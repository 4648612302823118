//! stress-ng's vm stressor with --vm-keep (stress-vm.c, stress-ng 0.15): each worker is a
//! forked process with its own anonymous buffer of `bytes / workers` bytes, mapped once and
//! rewritten method call after method call.
//!
//! Each iteration of the worker loop (stress_vm_child) calls stress_mincore_touch_pages on the
//! whole buffer, then one method. In 0.15 stress_mincore_touch_pages is
//! `madvise(MADV_POPULATE_READ)` (checked with strace on this machine's stress-ng 0.15.06):
//! a kernel pass that faults in what is missing and folio_mark_accessed()s the rest
//! (`Sweep::Populate`), not a user read. `--vm-method all` runs the methods in table order,
//! and a worker restarted after an OOM kill starts again at the first. The model runs the
//! first three, in order, in a loop (per page; the methods' byte order within a page does not
//! matter to reclaim):
//!
//! * cache-lines: a store to every cache line (64 units per page: one per line), a verify
//!   read, stress_mincore_touch_pages;
//! * cache-stripe: stores of every byte in 64-byte stripes (64 units per page: one per
//!   stripe), a verify read, stress_mincore_touch_pages;
//! * checkerboard: a pattern write of every word, a swap pass that loads and stores every
//!   word, stress_mincore_touch_pages, a verify read (64 units per page: one per 8 words,
//!   counted on the verify pass there, on the first write here).
//!
//! One bogo op is 4096 units (VM_BOGO_SHIFT). Later methods (flip, fwdrev, galpat, ...,
//! move-inv: 2048 units per page over six passes) are not modelled.

use super::{AccessModel, Sweep};
use crate::config::SimConfig;

/// Bogo units per page of the three modelled methods.
const UNITS_PER_PAGE: u32 = 64;

pub fn access_model(cfg: &SimConfig) -> AccessModel {
    let _ = cfg;
    let mut sweeps = Vec::new();
    // cache-lines, cache-stripe: each preceded by the loop's populate.
    for _ in 0..2 {
        sweeps.extend([
            Sweep::Populate,
            Sweep::WriteUnits(UNITS_PER_PAGE),
            Sweep::Read,
            Sweep::Populate,
        ]);
    }
    // checkerboard.
    sweeps.extend([
        Sweep::Populate,
        Sweep::WriteUnits(UNITS_PER_PAGE),
        Sweep::WriteUnits(0),
        Sweep::Populate,
        Sweep::Read,
    ]);
    AccessModel {
        sweeps,
        random: false,
        random_write: false,
        bogo_units_per_store: 0,
        one_cycle: false,
        ycsb: None,
    }
}

/// VM_BOGO_SHIFT.
pub const VM_BOGO_SHIFT: u32 = 12;
