//! Workloads: page-level access streams run by tasks.

pub mod anon_sweep;
pub mod file_mmap;
pub mod kswapd_mmap_read;
pub mod stress_vm;
pub mod ycsb;

/// One sweep over a task's pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sweep {
    Read,
    Write,
    /// A write pass whose bogo counter counts this many units per page (a stress-ng method's
    /// own unit) instead of `bogo_units_per_store`.
    WriteUnits(u32),
    /// MADV_POPULATE_READ over the range: a kernel pass (fault in what is missing,
    /// folio_mark_accessed the rest), no user access and no TLB fill.
    Populate,
    /// Each access a store with probability p / 2^32 (anon-sweep's `write_ratio`).
    Mixed(u64),
}

impl Sweep {
    /// Read for 0, Write for 1, Mixed in between.
    pub fn with_write_ratio(r: f64) -> Sweep {
        if r <= 0.0 {
            Sweep::Read
        } else if r >= 1.0 {
            Sweep::Write
        } else {
            Sweep::Mixed((r * (1u64 << 32) as f64) as u64)
        }
    }
}

impl Sweep {
    /// Whether the pass stores to every page.
    pub fn writes(self) -> bool {
        matches!(self, Sweep::Write | Sweep::WriteUnits(_))
    }
}

/// How a task walks its pages.
#[derive(Clone, Debug, Default)]
pub struct AccessModel {
    /// Sequential sweeps, cycled (ignored when `random`).
    pub sweeps: Vec<Sweep>,
    /// Uniformly random pages instead of sweeps (each access a store if `random_write`).
    pub random: bool,
    pub random_write: bool,
    /// stress-ng bogo counter units per page store.
    pub bogo_units_per_store: u64,
    /// Stop the task after one full cycle of sweeps (populate).
    pub one_cycle: bool,
    /// YCSB operations instead of sweeps (`ycsb-b`): each access is one operation.
    pub ycsb: Option<ycsb::YcsbGen>,
}
