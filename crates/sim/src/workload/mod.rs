//! Workloads: page-level access streams run by tasks.

pub mod file_mmap;
pub mod stress_vm;

/// One sweep over a task's pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sweep {
    Read,
    Write,
}

/// How a task walks its pages.
#[derive(Clone, Debug)]
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
}
