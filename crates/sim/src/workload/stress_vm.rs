//! stress-ng's vm stressor with --vm-keep (stress-vm.c): each worker is a forked process with
//! its own anonymous buffer of `bytes / workers` bytes, mapped once and rewritten method call
//! after method call.
//!
//! One method call is modelled as three sequential sweeps: the mincore touch of every page
//! (stress_mincore_touch_pages, a read), the method's write pass, and its verify pass (a
//! read). The methods' own bogo counters differ (words, bytes or chunks per page); we count
//! `sim.bogo_units_per_page` units per page written (512 = 8-byte words per page, as the
//! move-inv and write64 methods count), and one bogo op is 4096 units (VM_BOGO_SHIFT).

use super::{AccessModel, Sweep};
use crate::config::SimConfig;

pub fn access_model(cfg: &SimConfig) -> AccessModel {
    AccessModel {
        sweeps: vec![Sweep::Read, Sweep::Write, Sweep::Read],
        random: false,
        random_write: false,
        bogo_units_per_store: cfg.bogo_units_per_page,
        one_cycle: false,
    }
}

/// VM_BOGO_SHIFT.
pub const VM_BOGO_SHIFT: u32 = 12;
