//! Workloads: page-level access streams run by tasks, and the [`Workload`] trait every
//! scenario's workload implements for the simulator. Adding a workload means one module
//! implementing the trait and one arm in [`of`] (as the host backend's `HostWorkload`).

pub mod anon_sweep;
pub mod bench_start;
pub mod file_mmap;
pub mod file_reclaim;
pub mod kswapd_mmap_read;
pub mod limit_reclaim;
pub mod stress_ng;
pub mod stress_vm;
pub mod stress_vm_data;
pub mod ycsb;

use crate::config::SimConfig;
use crate::engine::Engine;
use crate::kernel::Kernel;
use reclaimlab_core::result::Throughput;
use reclaimlab_core::Scenario;
use std::collections::BTreeMap;

/// A workload as the simulator runs it. `simulate` calls the methods in this order: `prepare`
/// on the booted kernel, `access_model` for the engine, `fork` to create the tasks, then
/// places them, calls `kthreads` and finally `run`.
pub trait Workload {
    /// Kernel state the workload needs before any of its tasks exist.
    fn prepare(&self, _scn: &Scenario, _k: &mut Kernel) {}
    /// How its tasks walk their pages: the engine steps every task with this model.
    fn access_model(&self, k: &Kernel) -> anyhow::Result<AccessModel>;
    /// Create its files, mms and tasks (placed on CPUs afterwards by `Engine::place_tasks`).
    fn fork(&self, scn: &Scenario, cfg: &SimConfig, e: &mut Engine) -> anyhow::Result<()>;
    /// Kernel threads it starts once its tasks are placed (they sleep until first woken).
    fn kthreads(&self, _k: &mut Kernel) {}
    /// Whether `sim.start_placement` (each process's first CPUs) applies to it.
    fn takes_start_placement(&self) -> bool {
        false
    }
    /// Run the measured part and report on it. By default: `run.duration` of simulated time,
    /// throughput the pages its tasks touched per second.
    fn run(&self, e: &mut Engine, duration_ns: u64) -> Outcome {
        e.run_until(duration_ns, duration_ns);
        Outcome::per_sec(duration_ns, pages_touched(&e.k) as f64, "pages_per_sec")
    }
}

/// What a run measured besides the kernel's counters.
pub struct Outcome {
    /// Simulated seconds the result covers (`wall_seconds`).
    pub secs: f64,
    pub throughput: Throughput,
    pub notes: Vec<String>,
    /// Workload-specific result fields (`runs[].extra`).
    pub extra: BTreeMap<String, serde_json::Value>,
}

impl Outcome {
    /// `count` events over the whole `duration_ns` run, as a rate in `unit`.
    pub fn per_sec(duration_ns: u64, count: f64, unit: &str) -> Outcome {
        let secs = duration_ns as f64 / 1e9;
        Outcome::new(secs, count / secs, unit)
    }

    pub fn new(secs: f64, value: f64, unit: &str) -> Outcome {
        Outcome {
            secs,
            throughput: Throughput {
                value,
                unit: unit.into(),
            },
            notes: Vec::new(),
            extra: BTreeMap::new(),
        }
    }
}

/// The simulator's implementation of the scenario's workload.
pub fn of(w: &reclaimlab_core::Workload) -> &dyn Workload {
    use reclaimlab_core::Workload as W;
    match w {
        W::StressVm(w) => w,
        W::FileReclaim(w) => w,
        W::FileMmapRw(w) => w,
        W::AnonSweep(w) => w,
        W::YcsbB(w) => w,
        W::KswapdMmapRead(w) => w,
        W::LimitReclaim(w) => w,
    }
}

/// Tasks' pages touched, summed.
pub fn pages_touched(k: &Kernel) -> u64 {
    k.tasks.iter().map(|t| t.pages_touched).sum()
}

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
    /// One pass of a stress-ng vm method (stress_vm.rs): its own page order, CPU time per
    /// page visit and bogo units per visit.
    Pass(Pass),
}

/// The order in which a [`Sweep::Pass`] visits a task's n pages. A visit is one TLB/PTE
/// interaction: the several loads and stores a method makes to the page while it stays on it
/// are CPU time only (`Pass::ns`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Pages 0, 1, ..., n-1.
    Fwd,
    /// Pages n-1, ..., 0.
    Rev,
    /// Two pointers, one up from the start, one down from the end, alternating: 0, n-1, 1,
    /// n-2, ... (2n visits; stress-ng's fwdrev).
    FwdRev,
    /// `k` visits per page to uniformly random pages (k n visits; galpat's stray bits).
    Random(u32),
    /// For each page in turn (ascending, or descending if `rev`), a visit to it and then 64 to
    /// random pages (65 n visits; stress-ng's swap: 64 chunks of 64 bytes per page, each
    /// swapped with a random chunk).
    Swap { rev: bool },
    /// `k` forward sweeps (k n visits; prime-incdec's stride of just over one page wraps
    /// round the buffer about 4096 times).
    Wraps(u32),
    /// walk-1a (`zero` false) or walk-0a (`zero` true): for each page p, [`walk_addr_page`]
    /// slots.
    WalkAddr { zero: bool },
    /// Two visits to random pages (rowhammer's two hammered rows).
    Hammer,
}

/// One pass of a method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pass {
    pub order: Order,
    pub write: bool,
    /// Bogo counter units added per visit.
    pub units: u32,
    /// CPU time of one visit (ns), instead of `touch_page`.
    pub ns: u32,
}

/// Slots per page of a WalkAddr pass over n pages: the page itself, its mirror, and one per
/// bit of the next power of two ≥ n.
pub fn walk_addr_slots(n: u64) -> u64 {
    2 + u64::from(n.next_power_of_two().trailing_zeros())
}

/// The page slot `s` of page `p` of a walk-0a/1a pass visits (stress_vm_walking_{one,zero}_addr):
/// the pointer steps through the buffer 256 bytes at a time and stores to `ptr ^ mask`
/// (walk-1a) or `ptr ^ (~mask & sz_mask)` (walk-0a) for mask = 1, 2, 4, ...; an address outside
/// the buffer is skipped *without* shifting the mask, so every later one is skipped too. In page
/// numbers (the buffer taken as aligned to the power of two ≥ its size), masks below 4096 stay
/// on page p (walk-1a) or its mirror p ^ (N-1) (walk-0a); mask 4096 << j goes to p ^ (1 << j)
/// or p ^ ((N-1) ^ (1 << j)). Slot 0 is p itself (`*ptr = d1`); a skipped slot costs CPU on p.
pub fn walk_addr_page(p: u64, s: u64, n: u64, zero: bool) -> u64 {
    let big = n.next_power_of_two();
    let target = |s: u64| -> u64 {
        match (s, zero) {
            (0, _) => p,
            (1, false) => p,
            (1, true) => p ^ (big - 1),
            (s, false) => p ^ (1 << (s - 2)),
            (s, true) => p ^ ((big - 1) ^ (1 << (s - 2))),
        }
    };
    // The first slot that leaves the buffer sticks the mask there: it and all later ones stay
    // on p.
    if (1..=s).any(|t| target(t) >= n) {
        p
    } else {
        target(s)
    }
}

impl Pass {
    /// Visits in one pass over n pages.
    pub fn len(&self, n: u64) -> u64 {
        match self.order {
            Order::Fwd | Order::Rev => n,
            Order::FwdRev => 2 * n,
            Order::Random(k) | Order::Wraps(k) => u64::from(k) * n,
            Order::Swap { .. } => 65 * n,
            Order::WalkAddr { .. } => walk_addr_slots(n) * n,
            Order::Hammer => 2,
        }
    }

    /// Page (0-based in the task's range) of visit i; `rnd` draws a uniform page < n.
    pub fn page(&self, i: u64, n: u64, rnd: &mut dyn FnMut(u64) -> u64) -> u64 {
        match self.order {
            Order::Fwd => i,
            Order::Rev => n - 1 - i,
            Order::FwdRev => {
                if i.is_multiple_of(2) {
                    i / 2
                } else {
                    n - 1 - i / 2
                }
            }
            Order::Random(_) | Order::Hammer => rnd(n),
            Order::Swap { rev } => {
                let home = if rev { n - 1 - i / 65 } else { i / 65 };
                if i.is_multiple_of(65) {
                    home
                } else {
                    rnd(n)
                }
            }
            Order::Wraps(_) => i % n,
            Order::WalkAddr { zero } => {
                let slots = walk_addr_slots(n);
                walk_addr_page(i / slots, i % slots, n, zero)
            }
        }
    }

    /// Units this pass adds per visit when it is the home visit (Swap and WalkAddr count
    /// per home page, not per stray visit).
    pub fn units_at(&self, i: u64, n: u64) -> u32 {
        match self.order {
            Order::Swap { .. } if !i.is_multiple_of(65) => 0,
            Order::WalkAddr { .. } if !i.is_multiple_of(walk_addr_slots(n)) => 0,
            _ => self.units,
        }
    }
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
        match self {
            Sweep::Write | Sweep::WriteUnits(_) => true,
            Sweep::Pass(p) => p.write,
            _ => false,
        }
    }

    /// Accesses in one sweep over n pages.
    pub fn len(self, n: u64) -> u64 {
        match self {
            Sweep::Pass(p) => p.len(n),
            _ => n,
        }
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
    /// Each access is a one-byte load or store (`touch_line`), not a pass over the page
    /// (`touch_page`): the host worker's Mapping::touch.
    pub byte_touch: bool,
}
