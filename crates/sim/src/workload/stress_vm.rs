//! stress-ng's vm stressor with --vm-keep (stress-vm.c, stress-ng 0.15): each worker is a
//! forked process with its own anonymous buffer of `bytes / workers` bytes, mapped once and
//! rewritten method call after method call.
//!
//! Each iteration of the worker loop (stress_vm_child) calls stress_mincore_touch_pages on the
//! whole buffer, then one method. In 0.15 stress_mincore_touch_pages is
//! `madvise(MADV_POPULATE_READ)` (checked with strace on stress-ng 0.15.06): a kernel pass that
//! faults in what is missing and folio_mark_accessed()s the rest (`Sweep::Populate`), not a
//! user read. With `--vm-method all`, stress_vm_all calls one method per loop iteration,
//! stepping a static index through the method table (`vm_methods[]`, 35 methods after "all"
//! in 0.15.06, the order `stress-ng --vm-method which` prints) and wrapping round to the first.
//! The index lives in the worker process, which starts at 1 (cache-lines): a worker restarted
//! after an OOM kill (stress_oomable_child forks a new one) starts the cycle again, which
//! `oom_kill.rs` does by resetting the task's phase.
//!
//! Every method is a list of passes ([`Pass`]) over the buffer: page order, read or write,
//! bogo units added per page visit, CPU time per visit. A visit is one TLB/PTE interaction;
//! the many loads and stores a method makes to a page while it stays there are CPU time only.
//! The units per pass are derived from the source (ColinIanKing/stress-ng stress-vm.c, 2023
//! revision with 0.15.06's method table; one bogo op = 4096 units, VM_BOGO_SHIFT). The CPU
//! time per page per call was measured on this machine from each method's bogo ops/s per CPU
//! second with a resident buffer (docs/cost-model.md, "stress-ng vm methods"); a method's
//! user share of it is split over its passes in proportion to the loads and stores per page
//! each pass makes (`w`, an estimate read off the source).

use super::{AccessModel, Order, Outcome, Pass, Sweep};
use crate::config::SimConfig;
use crate::cost::CostTable;
use crate::engine::Engine;
use crate::kernel::{Backing, Kernel};
use reclaimlab_core::scenario::StressVm;
use reclaimlab_core::Scenario;

/// VM_BOGO_SHIFT.
pub const VM_BOGO_SHIFT: u32 = 12;

impl super::Workload for StressVm {
    fn access_model(&self, k: &Kernel) -> anyhow::Result<AccessModel> {
        access_model(&k.cfg, &k.cost, &self.method)
    }

    /// One process per worker, each with its own buffer; with `sim.stress_ng_fork` forked as
    /// stress-ng forks them (stress_ng.rs).
    fn fork(&self, _scn: &Scenario, cfg: &SimConfig, e: &mut Engine) -> anyhow::Result<()> {
        let pages = self.bytes_per_worker() / 4096;
        let workers: Vec<_> = (0..self.workers)
            .map(|i| {
                let mm = e.k.mm_alloc(pages, Backing::Anon, true);
                e.k.task_new(mm, self.cpus.for_worker(i), 0, pages)
            })
            .collect();
        if cfg.stress_ng_fork {
            super::stress_ng::fork_tree(&mut e.k, &workers, cfg.stress_ng_launch_cpu);
        }
        Ok(())
    }

    /// Throughput: stress-ng's bogo ops per second.
    fn run(&self, e: &mut Engine, duration_ns: u64) -> Outcome {
        e.run_until(duration_ns, duration_ns);
        let units: u64 = e.k.tasks.iter().map(|t| t.bogo_units).sum();
        let ops = (units >> VM_BOGO_SHIFT) as f64;
        let mut r = Outcome::per_sec(duration_ns, ops, "bogo_ops_per_sec");
        let names = names_by_phase(&self.method);
        let at: Vec<String> =
            e.k.tasks
                .iter()
                .filter(|t| t.is_worker())
                .map(|t| format!("{}+{}", t.passes, names[t.phase]))
                .collect();
        r.notes.push(format!(
            "stress-vm method each worker ends in (full cycles done + method): {}",
            at.join(" ")
        ));
        report_rates(&e.k, &self.method, r.secs, &mut r.extra);
        r.notes.push(
            "bogo ops: stress-ng 0.15.06's vm method table (35 methods for \"all\", one per loop iteration), units per pass from stress-vm.c (see docs/sim-model.md)"
                .to_string(),
        );
        r
    }
}

/// A pass in the method table: order, write, units per visit, loads+stores per visit (the
/// weight by which the method's measured CPU time is shared out). `P` is the populate.
#[derive(Clone, Copy, Debug)]
pub enum Step {
    P,
    U {
        order: Order,
        write: bool,
        units: u32,
        w: u32,
    },
    /// rowhammer's hammer loop: two random pages, `units` per visit, `ns` per visit (fixed
    /// cost, measured separately).
    Hammer {
        units: u32,
        ns: u32,
    },
}

/// The measurement of one method (`stress-ng --vm 1 --vm-bytes 64M --vm-keep --vm-method M
/// --timeout 3 --metrics`, stress-ng 0.15.06, 2026-11-22): bogo ops/s per CPU second, usr and
/// sys seconds. The user share usr/(usr+sys) is the methods' own work; sys is the populates.
#[derive(Clone, Copy, Debug)]
pub struct Measured {
    pub ops_per_cpu_sec: f64,
    pub usr: f64,
    pub sys: f64,
}

pub struct Method {
    pub name: &'static str,
    pub steps: Vec<Step>,
    /// None: no usable measurement (cache-lines counts no bogo ops in 0.15.06); its passes
    /// cost `touch_page` per visit.
    pub measured: Option<Measured>,
}

const fn u(order: Order, write: bool, units: u32, w: u32) -> Step {
    Step::U {
        order,
        write,
        units,
        w,
    }
}

fn m(name: &'static str, steps: Vec<Step>, r: f64, usr: f64, sys: f64) -> Method {
    Method {
        name,
        steps,
        measured: Some(Measured {
            ops_per_cpu_sec: r,
            usr,
            sys,
        }),
    }
}

use Order::*;
use Step::P;

/// Bytes per page / 61-byte prime stride of prime-0/1/gray-0/gray-1 (4096 / 61 = 67.1).
const PRIME61: u32 = 67;

/// The method table of stress-ng 0.15.06's vm stressor, in `vm_methods[]` order (without
/// "all"). Per method, in source order, its passes (comments: what the source does per page).
pub fn methods() -> Vec<Method> {
    let wrd = 512; // 8-byte words per page
    let b = 4096; // bytes per page
    let memset = 64; // a memset of a page: 64 vector stores (estimate)
    let mut v = vec![
        // c += sz / 64 in the source, but 0.15.06 reports 0 bogo ops for cache-lines
        // (measured: `--vm-method cache-lines --vm-bytes 4M --timeout 2` gives 0 while
        // taking CPU). One byte stored per cache line, a verify read, a populate.
        Method {
            name: "cache-lines",
            steps: vec![u(Fwd, true, 0, 64), u(Fwd, false, 0, 64), P],
            measured: None,
        },
        // Every byte stored in 64-byte stripes (c++ per stripe: 64 per page), verify, populate.
        m(
            "cache-stripe",
            vec![u(Fwd, true, 64, b), u(Fwd, false, 0, b), P],
            2505.74,
            1.20,
            0.22,
        ),
        // Pattern write (2 stores per word), swap of word pairs (load+store per word),
        // populate, verify (c++ per 8 words).
        m(
            "checkerboard",
            vec![
                u(Fwd, true, 0, 2 * wrd),
                u(Fwd, true, 0, 2 * wrd),
                P,
                u(Fwd, false, 64, wrd),
            ],
            7794.98,
            0.83,
            0.42,
        ),
        // Random bytes (c++ per 8 bytes), populate, then 8 passes flipping one bit of every
        // byte (c++ per 8 bytes) each followed by a populate, verify.
        m(
            "flip",
            {
                let mut s = vec![u(Fwd, true, 512, b), P];
                for _ in 0..8 {
                    s.extend([u(Fwd, true, 512, 2 * b), P]);
                }
                s.push(u(Fwd, false, 0, b));
                s
            },
            60907.52,
            0.98,
            0.23,
        ),
        // Even bytes stored going up, odd bytes going down from the end, 16 bytes per
        // iteration (c++); then the same order verifying (c++): 256 + 256 per page, each page
        // visited twice per pass.
        m(
            "fwdrev",
            vec![u(FwdRev, true, 128, b / 2), u(FwdRev, false, 128, b / 2)],
            24928.50,
            1.03,
            0.13,
        ),
        // memset 0, sz/4096 random bytes set (one random page per page), populate, count the
        // bits (c++ per 8 words).
        m(
            "galpat-0",
            vec![
                u(Fwd, true, 0, memset),
                u(Random(1), true, 0, 2),
                P,
                u(Fwd, false, 64, wrd),
            ],
            10003.69,
            0.68,
            0.54,
        ),
        m(
            "galpat-1",
            vec![
                u(Fwd, true, 0, memset),
                u(Random(1), true, 0, 2),
                P,
                u(Fwd, false, 64, wrd),
            ],
            10103.95,
            0.68,
            0.49,
        ),
        // Gray code stored per byte, populate, verify (c += 4 per 4 bytes).
        m(
            "gray",
            vec![u(Fwd, true, 0, b), P, u(Fwd, false, b, b)],
            97864.89,
            1.02,
            0.13,
        ),
        m(
            "grayflip",
            vec![u(Fwd, true, 0, b), P, u(Fwd, false, b, b)],
            163762.35,
            1.00,
            0.20,
        ),
        // populate, fill (uint32 stores), hammer two random rows 10^6 times (bogo += 10^6),
        // verify. The hammer's time is fixed per call (measured at two buffer sizes: see
        // `ROWHAMMER_NS`); the table's user share covers the per-page part.
        Method {
            name: "rowhammer",
            steps: vec![
                P,
                u(Fwd, true, 0, 1024),
                Step::Hammer {
                    units: 500_000,
                    ns: ROWHAMMER_NS / 2,
                },
                u(Fwd, false, 0, 1024),
            ],
            measured: Some(Measured {
                ops_per_cpu_sec: 4380.48,
                usr: 2.23,
                sys: 0.44,
            }),
        },
        // memset 0, += val per byte, populate, -= val per byte (c += sz), verify.
        m(
            "incdec",
            vec![
                u(Fwd, true, 0, memset),
                u(Fwd, true, 0, 2 * b),
                P,
                u(Fwd, true, b, 2 * b),
                u(Fwd, false, 0, b),
            ],
            128666.79,
            0.64,
            0.12,
        ),
        // memset, low nybbles (c++ per 8 bytes), high nybbles (c++ per 8 bytes), populate,
        // verify.
        m(
            "inc-nybble",
            vec![
                u(Fwd, true, 0, memset),
                u(Fwd, true, 512, 2 * b),
                u(Fwd, true, 512, 2 * b),
                P,
                u(Fwd, false, 0, b),
            ],
            29990.08,
            0.98,
            0.12,
        ),
        // LFSR values, 8 uint32 per iteration (c++ per 32 bytes), populate, verify.
        m(
            "lfsr32",
            vec![u(Fwd, true, 128, 1024), P, u(Fwd, false, 0, 1024)],
            4371.61,
            0.85,
            0.41,
        ),
        // A random byte stored 8 times per 8 bytes (c++), populate, verify.
        m(
            "rand-set",
            vec![u(Fwd, true, 512, b), P, u(Fwd, false, 0, b)],
            24999.20,
            1.26,
            0.21,
        ),
        // 8 random words per iteration (c++ per 64 bytes), populate, verify with popcount.
        m(
            "rand-sum",
            vec![u(Fwd, true, 64, wrd), P, u(Fwd, false, 0, wrd)],
            1844.02,
            0.94,
            1.04,
        ),
        // 32 word loads per iteration (i++ per 256 bytes).
        m("read64", vec![u(Fwd, false, 16, wrd)], 14178.68, 0.64, 1.30),
        // Random bytes (c++ per 8 bytes), populate, rotate every byte (c++ per 8 bytes),
        // populate, verify.
        m(
            "ror",
            vec![
                u(Fwd, true, 512, b),
                P,
                u(Fwd, true, 512, 2 * b),
                P,
                u(Fwd, false, 0, b),
            ],
            40470.91,
            1.53,
            0.29,
        ),
        // memset per 64-byte chunk, forward swaps of every chunk with a random chunk (c++ per
        // chunk), reverse swaps (c++ per chunk), populate, verify.
        m(
            "swap",
            vec![
                u(Fwd, true, 0, memset),
                u(Swap { rev: false }, true, 64, 128),
                u(Swap { rev: true }, true, 64, 128),
                P,
                u(Fwd, false, 0, b),
            ],
            606.13,
            1.92,
            0.09,
        ),
        // Random words; verify+invert (c += sz/8); populate; verify (c += sz/8); random
        // words from the end down; populate; verify+invert down (c += sz/8); verify down
        // (c += sz/8).
        m(
            "move-inv",
            vec![
                u(Fwd, true, 0, wrd),
                u(Fwd, true, 512, 2 * wrd),
                P,
                u(Fwd, false, 512, wrd),
                u(Rev, true, 0, wrd),
                P,
                u(Rev, true, 512, 2 * wrd),
                u(Rev, false, 512, wrd),
            ],
            34312.77,
            1.61,
            0.18,
        ),
        // For each of 23 offsets: every 23rd byte set, every other byte set to the complement
        // (c++ per byte: 4096 × 22/23 per page), the 23rd bytes checked. No populate.
        m(
            "modulo-x",
            {
                let mut s = Vec::new();
                for _ in 0..23 {
                    s.extend([
                        u(Fwd, true, 0, 178),
                        u(Fwd, true, 3918, 3918),
                        u(Fwd, false, 0, 178),
                    ]);
                }
                s
            },
            243743.66,
            1.42,
            0.07,
        ),
        // Each byte's bits set one by one (c++ per byte), counted; cleared one by one (c++
        // per byte), counted. The counter ends at start + 2 sz (stress_bogo_set(c)).
        m(
            "mscan",
            vec![
                u(Fwd, true, b, 8 * b),
                u(Fwd, false, 0, b),
                u(Fwd, true, b, 8 * b),
                u(Fwd, false, 0, b),
            ],
            37653.23,
            1.41,
            0.07,
        ),
        // 16 non-temporal 128-bit stores per 64 bytes (c++), loads. No populate.
        m(
            "wrrd128nt",
            vec![u(Fwd, true, 64, 1024), u(Fwd, false, 0, 1024)],
            3693.47,
            1.12,
            0.13,
        ),
    ];
    // prime-0, prime-1, prime-gray-0, prime-gray-1: every 61st byte set, then 8 passes of a
    // read-modify-write of every 61st byte (c++ each), populate, verify.
    for (name, r, usr, sys) in [
        ("prime-0", 12858.53, 1.14, 0.07),
        ("prime-1", 12058.10, 1.15, 0.06),
        ("prime-gray-0", 10774.13, 1.14, 0.07),
        ("prime-gray-1", 9558.62, 1.15, 0.07),
    ] {
        let mut s = vec![u(Fwd, true, 0, PRIME61)];
        for _ in 0..8 {
            s.push(u(Fwd, true, PRIME61, 2 * PRIME61));
        }
        s.extend([P, u(Fwd, false, 0, PRIME61)]);
        v.push(m(name, s, r, usr, sys));
    }
    v.extend([
        // memset 0, += val per byte (c++), populate, -= val at a stride of a prime just above
        // sz + 4096 (c++ per byte): the stride is one page and a few bytes, so the pass wraps
        // round the buffer ~4096 times visiting every page once per wrap; verify.
        m(
            "prime-incdec",
            vec![
                u(Fwd, true, 0, memset),
                u(Fwd, true, b, 2 * b),
                P,
                u(Wraps(4096), true, 1, 2),
                u(Fwd, false, 0, b),
            ],
            22212.33,
            1.38,
            0.09,
        ),
        // 8 set-and-test stores per byte (c++ per byte).
        m(
            "walk-0d",
            vec![u(Fwd, true, b, 16 * b)],
            35664.89,
            1.38,
            0.06,
        ),
        m(
            "walk-1d",
            vec![u(Fwd, true, b, 16 * b)],
            41580.34,
            1.47,
            0.05,
        ),
        // memset 0, then per 256 bytes (c++) stores at addresses with one address bit flipped
        // (walk-1a) or all but one (walk-0a): see `walk_addr_page`.
        m(
            "walk-0a",
            vec![
                u(Fwd, true, 0, memset),
                u(WalkAddr { zero: true }, true, 16, 64),
            ],
            1311.93,
            1.33,
            0.20,
        ),
        m(
            "walk-1a",
            vec![
                u(Fwd, true, 0, memset),
                u(WalkAddr { zero: false }, true, 16, 64),
            ],
            1010.27,
            1.34,
            0.17,
        ),
        // 32 word stores per iteration (i++ per 256 bytes).
        m("write64", vec![u(Fwd, true, 16, wrd)], 5721.93, 0.88, 0.65),
        m(
            "write64nt",
            vec![u(Fwd, true, 16, wrd)],
            5585.95,
            0.87,
            0.65,
        ),
        // One 128-byte vector store per iteration (i++).
        m(
            "write1024v",
            vec![u(Fwd, true, 32, 32)],
            11258.60,
            0.87,
            0.64,
        ),
        // memset 0, populate, popcount (c += sz/8), memset 0xff, populate, popcount
        // (c += sz/8).
        m(
            "zero-one",
            vec![
                u(Fwd, true, 0, memset),
                P,
                u(Fwd, false, 512, wrd),
                u(Fwd, true, 0, memset),
                P,
                u(Fwd, false, 512, wrd),
            ],
            107570.03,
            0.89,
            0.62,
        ),
    ]);
    v
}

/// rowhammer's fixed cost per call (ns): 10^6 loads of two rows, each pair CLFLUSHed and
/// fenced. Measured from two buffer sizes (stress-ng 0.15.06, `--vm 1 --vm-keep --vm-method
/// rowhammer --timeout 3 --metrics`): 4M → 9457 ops/s per CPU s = 25.82 ms per call (244.14
/// ops), 64M → 4380 ops/s = 55.73 ms per call; the per-page part is (55.73 − 25.82) / 15360
/// pages = 1.947 µs, the fixed part 25.82 ms − 1024 × 1.947 µs = 23.83 ms.
pub const ROWHAMMER_NS: u32 = 23_830_000;
/// rowhammer's per-page user time (ns): 1.947 µs less the sys share of the 64M run (0.44 s
/// of 2.67 s CPU: 9.18 ms per call, 0.56 µs per page, the two populates).
const ROWHAMMER_PAGE_NS: f64 = 1947.0 - 560.0;

/// Visits per page of a pass over the measured 64M (16384-page) buffer.
fn visits_per_page(o: Order) -> f64 {
    let n = 16384u64;
    let p = Pass {
        order: o,
        write: false,
        units: 0,
        ns: 0,
    };
    match o {
        Hammer => 0.0,
        _ => p.len(n) as f64 / n as f64,
    }
}

/// Bogo units per page per call the table gives a method (hammer excluded): the figure the
/// measurement's ops/s is divided by.
pub fn units_per_page(me: &Method) -> u64 {
    me.steps
        .iter()
        .map(|s| match *s {
            Step::U { order, units, .. } => {
                let per_home = match order {
                    Swap { .. } | WalkAddr { .. } => 1.0,
                    o => visits_per_page(o),
                };
                (f64::from(units) * per_home).round() as u64
            }
            _ => 0,
        })
        .sum()
}

/// The method's user CPU time per page per call (ns), from its measurement.
pub fn page_ns(me: &Method) -> Option<f64> {
    let ms = me.measured?;
    if me.name == "rowhammer" {
        return Some(ROWHAMMER_PAGE_NS);
    }
    let units = units_per_page(me);
    let per_call = units as f64 / 4096.0 / ms.ops_per_cpu_sec * 1e9;
    Some(per_call * ms.usr / (ms.usr + ms.sys))
}

/// The sweeps of one call of a method (without the loop's populate).
pub fn method_sweeps(me: &Method, cost: &CostTable) -> Vec<Sweep> {
    let total_w: f64 = me
        .steps
        .iter()
        .map(|s| match *s {
            Step::U { order, w, .. } => f64::from(w) * visits_per_page(order),
            _ => 0.0,
        })
        .sum();
    let page = page_ns(me);
    me.steps
        .iter()
        .map(|s| match *s {
            Step::P => Sweep::Populate,
            Step::U {
                order,
                write,
                units,
                w,
            } => Sweep::Pass(Pass {
                order,
                write,
                units,
                ns: match page {
                    Some(t) => ((t * f64::from(w) / total_w).round() as u32).max(1),
                    None => cost.touch_page as u32,
                },
            }),
            Step::Hammer { units, ns } => Sweep::Pass(Pass {
                order: Hammer,
                write: false,
                units,
                ns,
            }),
        })
        .collect()
}

/// The access model of `--vm-method method` ("all": every method in table order, one per
/// loop iteration, each after the loop's populate).
pub fn access_model(
    cfg: &SimConfig,
    cost: &CostTable,
    method: &str,
) -> anyhow::Result<AccessModel> {
    let _ = cfg;
    let table = methods();
    let chosen: Vec<&Method> = if method == "all" {
        table.iter().collect()
    } else {
        let me = table.iter().find(|me| me.name == method).ok_or_else(|| {
            let names: Vec<&str> = table.iter().map(|me| me.name).collect();
            anyhow::anyhow!(
                "workload.method: unknown stress-ng vm method {method:?}; one of: all {}",
                names.join(" ")
            )
        })?;
        vec![me]
    };
    let mut sweeps = Vec::new();
    for me in chosen {
        sweeps.push(Sweep::Populate);
        sweeps.extend(method_sweeps(me, cost));
    }
    Ok(AccessModel {
        sweeps,
        random: false,
        random_write: false,
        bogo_units_per_store: 0,
        one_cycle: false,
        ycsb: None,
        byte_touch: false,
    })
}

/// The methods `--vm-method method` runs, in table order ("all": every one), each with the
/// number of sweep indices it has in `access_model` (the loop's populate, then its passes).
pub fn methods_run(method: &str) -> impl Iterator<Item = (Method, usize)> + '_ {
    methods()
        .into_iter()
        .filter(move |me| method == "all" || me.name == method)
        .map(|me| {
            let phases = me.steps.len() + 1;
            (me, phases)
        })
}

/// The method each sweep index of `access_model(.., method)` belongs to.
pub fn names_by_phase(method: &str) -> Vec<&'static str> {
    methods_run(method)
        .flat_map(|(me, phases)| std::iter::repeat_n(me.name, phases))
        .collect()
}

/// Rates that do not depend on where each worker is in the method cycle when the run stops
/// (stress-ng's bogo ops/s does: the methods' bogo ops per page differ by 5000x):
/// `pages_touched_per_sec` (method pages visited, populate passes not counted),
/// `bogo_ops_by_method` (each method's share of the bogo ops, fractional) and
/// `stress_vm_end_methods` (the method each worker is in at the end), and per method the
/// simulated seconds its workers spent in it (`method_seconds`: entry to exit including the
/// populate before it and any wait for a CPU, summed over workers) and the bogo ops per second
/// of that time (`bogo_ops_per_sec_by_method`: ops / (method_seconds / workers), the
/// aggregate rate while the workers are in that method).
pub fn report_rates(
    k: &crate::kernel::Kernel,
    method: &str,
    secs: f64,
    extra: &mut std::collections::BTreeMap<String, serde_json::Value>,
) {
    let workers = k.tasks.iter().filter(|t| t.is_worker()).count().max(1) as f64;
    let end_ns = (secs * 1e9) as u64;
    let names_ns = names_by_phase(method);
    let mut ns_by: std::collections::BTreeMap<&str, u64> = Default::default();
    for t in k.tasks.iter().filter(|t| t.is_worker()) {
        for (phase, ns) in t.ns_by_phase.iter().enumerate() {
            if *ns > 0 {
                *ns_by.entry(names_ns[phase]).or_insert(0) += ns;
            }
        }
        // The phase the run ended in, up to the end of the run.
        *ns_by.entry(names_ns[t.phase]).or_insert(0) += end_ns.saturating_sub(t.phase_entered_ns);
    }
    let names = names_by_phase(method);
    let touched: u64 = k.tasks.iter().map(|t| t.pages_touched).sum();
    extra.insert(
        "pages_touched_per_sec".into(),
        serde_json::Value::from(touched as f64 / secs),
    );
    let mut by_method: std::collections::BTreeMap<&str, u64> = Default::default();
    for t in &k.tasks {
        for (phase, u) in t.bogo_units_by_phase.iter().enumerate() {
            if *u > 0 {
                *by_method.entry(names[phase]).or_insert(0) += u;
            }
        }
    }
    let ops: serde_json::Map<String, serde_json::Value> = by_method
        .into_iter()
        .map(|(m, u)| {
            let ops = u as f64 / (1u64 << VM_BOGO_SHIFT) as f64;
            (m.to_string(), serde_json::Value::from(ops))
        })
        .collect();
    let rates: serde_json::Map<String, serde_json::Value> = ops
        .iter()
        .filter_map(|(m, v)| {
            let ns = *ns_by.get(m.as_str())?;
            if ns == 0 {
                return None;
            }
            let per_worker_s = ns as f64 / 1e9 / workers;
            Some((
                m.clone(),
                serde_json::Value::from(v.as_f64()? / per_worker_s),
            ))
        })
        .collect();
    let seconds: serde_json::Map<String, serde_json::Value> = ns_by
        .iter()
        .map(|(m, ns)| (m.to_string(), serde_json::Value::from(*ns as f64 / 1e9)))
        .collect();
    extra.insert("bogo_ops_by_method".into(), serde_json::Value::Object(ops));
    extra.insert(
        "bogo_ops_per_sec_by_method".into(),
        serde_json::Value::Object(rates),
    );
    extra.insert("method_seconds".into(), serde_json::Value::Object(seconds));
    let ends: Vec<&str> = k
        .tasks
        .iter()
        .filter(|t| t.is_worker())
        .map(|t| names[t.phase])
        .collect();
    extra.insert(
        "stress_vm_end_methods".into(),
        serde_json::Value::from(ends),
    );
}
