//! Simulator tunables (`[sim]` in a scenario) and the kernel policy the simulator models.

use reclaimlab_core::policy::KernelPolicy;
pub use reclaimlab_core::policy::{Patch, PatchSet, Settings};
use reclaimlab_core::Scenario;

/// How much checking runs during the simulation (the end-of-run invariants always run).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckLevel {
    /// Invariants at the end of the run only (fast; the default).
    End,
    /// Also after every flush and at every folio free (slow; tests use it).
    Full,
}

/// How finely reclaim interleaves with the other CPUs (`sim.interleave`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interleave {
    /// A direct-reclaim call is one engine step (faster; other CPUs stand still meanwhile).
    Step,
    /// Other CPUs run at a preemption point after each folio of shrink_folio_list (the
    /// default: on real hardware they run concurrently, and what they touch meanwhile is
    /// young when reclaim reaches it).
    Folio,
}

#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Per-CPU TLB capacity in entries (a Zen-class L2 DTLB holds 2048 4K entries).
    pub tlb_entries: usize,
    /// TLB associativity.
    pub tlb_ways: usize,
    /// Scheduler tick (HZ = 250 → 4 ms).
    pub tick_ns: u64,
    /// The scheduler's machine settings: `machine.topology` and `machine.background_load`
    /// (sched/). Task placement and migration come from the scheduler model.
    pub sched: crate::sched::SchedConfig,
    /// stress-ng vm bogo counter units per page per pass (one op = 4096 units, VM_BOGO_SHIFT).
    pub bogo_units_per_page: u64,
    /// Longest stretch of resident-page touches done in one engine step.
    pub step_pages: u64,
    /// How often the progress callback runs (simulated ns).
    pub progress_every_ns: u64,
    pub check: CheckLevel,
    /// Order of the page-cache folios the file workloads create (`sim.file_folio_order`,
    /// default 0): a page-cache miss allocates a folio of 2^order pages aligned in the file
    /// (smaller near the end of the file), as readahead on a large-folio filesystem does.
    pub file_folio_order: u8,
    /// The largest page-cache folio order the filesystem accepts (`sim.file_max_order`;
    /// mapping_max_folio_order: 9 for ext4/xfs on 6.18 with 4 KiB pages, 0 for a filesystem
    /// without large folios). Readahead's order ramp is capped here; `sim.file_folio_order`
    /// (when non-zero) overrides the ramp with one order for every folio.
    pub file_max_order: u8,
    /// bdi->ra_pages for the file workloads (`sim.readahead_pages`; read_ahead_kb / 4).
    /// None: the workload's default (off for file-mmap-rw and file-reclaim).
    pub readahead_pages: Option<u64>,
    /// cgroup v1 memcg (`sim.cgroup = "v1"`): !writeback_throttling_sane, a global dirty
    /// domain and reclaim waiting on writeback; v2 (the default) has sane throttling and a
    /// per-memcg dirty domain.
    pub cgroup_v1: bool,
    /// The writeback device's request queue (`sim.writeback_queue_depth`: requests in flight
    /// at once, the blk-mq tag depth, /sys/block/DEV/mq/*/nr_tags; 0 = unbounded, the
    /// default) and its largest request (`sim.writeback_request_pages`: max_sectors_kb / 4).
    /// With a depth, the flusher submits a folio only when its request fits, and otherwise
    /// sleeps until a request completes (blk_mq_get_tag).
    pub writeback_queue_depth: u64,
    pub writeback_request_pages: u64,
    /// The CPU the data disk's completion interrupt runs on (`sim.writeback_irq_cpu`: a CPU
    /// number, or "submitter", the default: the CPU that submitted the write, as with a queue
    /// per CPU). A one-queue disk (virtio-blk with one request queue) completes on the CPU its
    /// interrupt is routed to, and the completion's CPU time lands there.
    pub writeback_irq_cpu: Option<usize>,
    /// Map PMD-sized page-cache folios with one PMD (`sim.file_pmd_map`, default true:
    /// finish_fault → do_set_pmd, as 6.18 does for a suitably aligned file mapping).
    pub file_pmd_map: bool,
    /// A page-cache fault maps the whole large folio with PTEs (`sim.file_fault_whole_folio`,
    /// default false): finish_fault as of "mm/fault: Try to map the entire file folio in
    /// finish_fault()" (posted September 2025); without it only shmem does and other files
    /// take one fault per page. `validation/file.toml` sets it: the host's counters show it.
    pub file_fault_whole_folio: bool,
    /// Written page-cache folios carry buffer heads (`sim.file_buffer_heads`, default true):
    /// ext4 attaches them when a folio is written (write_begin, page_mkwrite →
    /// block_page_mkwrite) and reclaim must release them (filemap_release_folio →
    /// try_to_free_buffers) before the folio leaves the page cache. False for a filesystem on
    /// iomap (XFS), whose folios have no buffer heads.
    pub file_buffer_heads: bool,
    /// The lost-write oracle (`sim.oracle`, default true; off only to measure its cost).
    pub oracle: bool,
    /// `sim.interleave`: `folio` (default) or `step` (engine.rs).
    pub interleave: Interleave,
    /// `sim.page_data`: what swapped pages hold, for zram's cost (drivers/zram.rs); `auto`
    /// (None, the default) takes what the workload writes.
    pub page_data: Option<crate::drivers::zram::PageData>,
    /// `sim.start_placement` (anon-sweep): where each process's threads ran before the sweep,
    /// instead of the start-up the model derives (workload/anon_sweep.rs). Validate sets it
    /// from a host run's scheduler trace (`--placement-from-host`).
    pub start_placement: Option<Vec<StartCpus>>,
    /// `sim.bench_start` (anon-sweep, without `sim.start_placement`): `attach` (default)
    /// starts the processes as bench does, forked from CPU `sim.bench_launch_cpu` (default 1,
    /// where bench ran in every traced start; 0 on one CPU), each writing itself into the
    /// memcg before it maps and clones (workload/bench_start.rs); `static` places main threads
    /// round-robin and clones their threads at time 0, with no memcg attach.
    pub bench_start_attach: bool,
    pub bench_launch_cpu: usize,
    /// `sim.stress_ng_start` (stress-vm): `fork` (default) starts the workers as stress-ng
    /// does, grandchildren of a parent on CPU `sim.stress_ng_launch_cpu` placed by fork
    /// balancing (workload/stress_ng.rs); `spread` puts worker i on CPU i mod CPUs at once.
    pub stress_ng_fork: bool,
    pub stress_ng_launch_cpu: usize,
    /// `swap.device`, `swap.irq_cpu`, `swap.page_cluster` (mm/swap.rs): zram (the default) or
    /// a block device.
    pub swap: crate::mm::swap::SwapConfig,
}

pub use reclaimlab_core::start_placement::StartCpus;

/// The kernel the simulator models: the patches in force, asked at each decision point
/// (`Kernel::has`), and the preset's settings. Both come from the policy table
/// (reclaimlab_core::policy); a new policy needs no field here.
#[derive(Clone, Debug)]
pub struct Policy {
    /// Name shown in the result (`6.18`, `6.18+batch-dirty-flush`).
    pub name: String,
    /// Every patch in force, the implied ones included.
    pub patches: PatchSet,
    pub settings: Settings,
}

impl Policy {
    pub fn linux_6_18() -> Policy {
        Policy::from_kernel_policy(&KernelPolicy::parse("6.18").expect("a shipped preset"))
    }

    /// Resolve `kernel.preset` + `kernel.patches` through the shared registry.
    pub fn from_scenario(scn: &Scenario) -> anyhow::Result<Policy> {
        let kp = KernelPolicy::new(&scn.kernel.preset, &scn.kernel.patches)
            .map_err(|e| anyhow::anyhow!(e))?;
        Ok(Policy::from_kernel_policy(&kp))
    }

    /// The simulator's view of a resolved `PRESET[+PATCH...]`.
    pub fn from_kernel_policy(kp: &KernelPolicy) -> Policy {
        Policy {
            name: kp.to_string(),
            patches: kp.in_force(),
            settings: kp.settings,
        }
    }

    pub fn has(&self, p: Patch) -> bool {
        self.patches.has(p)
    }

    /// Turn a patch on (with what it implies) or off, for a test's what-if.
    pub fn set(&mut self, p: Patch, on: bool) {
        if on {
            self.patches.insert(p);
            self.patches = self.patches.with_implied();
        } else {
            self.patches.remove(p);
        }
    }
}

impl Default for SimConfig {
    /// The `[sim]` defaults (each documented at its field).
    fn default() -> SimConfig {
        SimConfig {
            tlb_entries: 2048,
            tlb_ways: 16,
            tick_ns: 4_000_000,
            sched: Default::default(),
            bogo_units_per_page: 512,
            step_pages: 64,
            progress_every_ns: 5_000_000,
            check: CheckLevel::End,
            file_folio_order: 0,
            file_max_order: 9,
            readahead_pages: None,
            cgroup_v1: false,
            writeback_queue_depth: 0,
            writeback_request_pages: 1024,
            writeback_irq_cpu: None,
            file_pmd_map: true,
            file_fault_whole_folio: false,
            file_buffer_heads: true,
            oracle: true,
            interleave: Interleave::Folio,
            page_data: None,
            start_placement: None,
            bench_start_attach: true,
            bench_launch_cpu: 0,
            stress_ng_fork: true,
            stress_ng_launch_cpu: 0,
            swap: Default::default(),
        }
    }
}

impl SimConfig {
    /// Read every `sim.*` key this backend supports (the CLI rejects the rest afterwards).
    pub fn from_scenario(scn: &Scenario) -> anyhow::Result<SimConfig> {
        let s = &scn.source;
        let d = SimConfig::default();
        reject_removed_keys(s)?;
        let cfg = SimConfig {
            tlb_entries: s.u64_or("sim.tlb_entries", d.tlb_entries as u64)? as usize,
            tlb_ways: s.u64_or("sim.tlb_ways", d.tlb_ways as u64)? as usize,
            tick_ns: s.duration_ns_or("sim.tick", d.tick_ns)?,
            sched: crate::sched::SchedConfig::from_scenario(scn)?,
            bogo_units_per_page: s.u64_or("sim.bogo_units_per_page", d.bogo_units_per_page)?,
            step_pages: s.u64_or("sim.step_pages", d.step_pages)?,
            progress_every_ns: s.duration_ns_or("sim.progress_every", d.progress_every_ns)?,
            check: match s.str_or("sim.check", "end")?.as_str() {
                "end" => CheckLevel::End,
                "full" => CheckLevel::Full,
                o => {
                    return Err(s
                        .err(
                            "sim.check",
                            format!("{}: use end or full", reclaimlab_core::units::clip(o)),
                        )
                        .into())
                }
            },
            file_folio_order: s.u64_or("sim.file_folio_order", 0)? as u8,
            file_max_order: s
                .u64_or("sim.file_max_order", d.file_max_order as u64)?
                .min(255) as u8,
            readahead_pages: match s.u64_or("sim.readahead_pages", u64::MAX)? {
                u64::MAX => None,
                n => Some(n),
            },
            cgroup_v1: match s.str_or("sim.cgroup", "v2")?.as_str() {
                "v1" => true,
                "v2" => false,
                o => return Err(s.err("sim.cgroup", format!("{o:?}: use v1 or v2")).into()),
            },
            writeback_queue_depth: s
                .u64_or("sim.writeback_queue_depth", d.writeback_queue_depth)?,
            writeback_request_pages: s
                .u64_or("sim.writeback_request_pages", d.writeback_request_pages)?,
            writeback_irq_cpu: match s.str_or("sim.writeback_irq_cpu", "submitter")?.as_str() {
                "submitter" => None,
                o => match o.parse::<usize>() {
                    Ok(c) if c < scn.machine.cpus => Some(c),
                    _ => {
                        return Err(s
                            .err(
                                "sim.writeback_irq_cpu",
                                format!(
                                    "{}: use submitter or a CPU number below machine.cpus ({})",
                                    reclaimlab_core::units::clip(o),
                                    scn.machine.cpus
                                ),
                            )
                            .into())
                    }
                },
            },
            file_pmd_map: s.bool_or("sim.file_pmd_map", d.file_pmd_map)?,
            file_fault_whole_folio: s
                .bool_or("sim.file_fault_whole_folio", d.file_fault_whole_folio)?,
            file_buffer_heads: s.bool_or("sim.file_buffer_heads", d.file_buffer_heads)?,
            oracle: s.bool_or("sim.oracle", d.oracle)?,
            interleave: match s.str_or("sim.interleave", "folio")?.as_str() {
                "step" => Interleave::Step,
                "folio" => Interleave::Folio,
                o => {
                    return Err(s
                        .err(
                            "sim.interleave",
                            format!("{}: use step or folio", reclaimlab_core::units::clip(o)),
                        )
                        .into())
                }
            },
            page_data: {
                use crate::drivers::zram::PageData;
                match s.str_or("sim.page_data", "auto")?.as_str() {
                    "auto" => None,
                    "zero" => Some(PageData::Zero),
                    "sparse" => Some(PageData::Sparse),
                    "pattern" => Some(PageData::Pattern),
                    "random" => Some(PageData::Random),
                    o => {
                        return Err(s
                            .err(
                                "sim.page_data",
                                format!(
                                    "{}: use auto, zero, sparse, pattern or random",
                                    reclaimlab_core::units::clip(o)
                                ),
                            )
                            .into())
                    }
                }
            },
            start_placement: match s.str_or("sim.start_placement", "")?.as_str() {
                "" => None,
                t => Some(StartCpus::parse_list(t).map_err(|e| s.err("sim.start_placement", e))?),
            },
            bench_start_attach: match s.str_or("sim.bench_start", "attach")?.as_str() {
                "attach" => true,
                "static" => false,
                o => {
                    return Err(s
                        .err(
                            "sim.bench_start",
                            format!("{}: use attach or static", reclaimlab_core::units::clip(o)),
                        )
                        .into())
                }
            },
            bench_launch_cpu: s
                .u64_or("sim.bench_launch_cpu", 1.min(scn.machine.cpus as u64 - 1))?
                as usize,
            stress_ng_fork: match s.str_or("sim.stress_ng_start", "fork")?.as_str() {
                "fork" => true,
                "spread" => false,
                o => {
                    return Err(s
                        .err(
                            "sim.stress_ng_start",
                            format!("{}: use fork or spread", reclaimlab_core::units::clip(o)),
                        )
                        .into())
                }
            },
            stress_ng_launch_cpu: s.u64_or("sim.stress_ng_launch_cpu", 0)? as usize,
            swap: crate::mm::swap::SwapConfig::from_scenario(scn)?,
        };
        cfg.check(scn)?;
        Ok(cfg)
    }

    /// The values' ranges and how they fit together (checked after every key is read).
    fn check(&self, scn: &Scenario) -> anyhow::Result<()> {
        let (s, cfg) = (&scn.source, self);
        for (key, cpu) in [
            ("sim.bench_launch_cpu", cfg.bench_launch_cpu),
            ("sim.stress_ng_launch_cpu", cfg.stress_ng_launch_cpu),
        ] {
            if cpu >= scn.machine.cpus {
                let msg = format!("{cpu}: the machine has CPUs 0-{}", scn.machine.cpus - 1);
                return Err(s.err(key, msg).into());
            }
        }
        // Ranges by meaning (reclaimlab_core::Source::check_range names key, bound and reason).
        let count = |v: u64| v.to_string();
        s.check_range(
            "sim.tlb_entries",
            cfg.tlb_entries as u64,
            1,
            1 << 16,
            count,
            "real second-level TLBs hold a few thousand 4K entries (Zen 4: 3072)",
        )?;
        s.check_range(
            "sim.tlb_ways",
            cfg.tlb_ways as u64,
            1,
            cfg.tlb_entries as u64,
            count,
            "a set has at least one way and at most every entry (fully associative)",
        )?;
        s.check_range(
            "sim.tick",
            cfg.tick_ns,
            1_000,
            1_000_000_000,
            reclaimlab_core::scenario::fmt_duration,
            "HZ is 100..=1000 (a 1..10 ms tick); 1us..1s leaves room for what-ifs",
        )?;
        s.check_range(
            "sim.step_pages",
            cfg.step_pages,
            1,
            1 << 20,
            count,
            "a step is a short stretch of accesses that ends at a fault or a tick",
        )?;
        s.check_range(
            "sim.progress_every",
            cfg.progress_every_ns,
            1_000,
            reclaimlab_core::scenario::limits::MAX_DURATION_NS,
            reclaimlab_core::scenario::fmt_duration,
            "a progress report per simulated microsecond at most, and at least one a day",
        )?;
        s.check_range(
            "sim.bogo_units_per_page",
            cfg.bogo_units_per_page,
            0,
            1 << 32,
            count,
            "stress-ng counts at most a few thousand units per page (one op = 4096 units)",
        )?;
        if cfg.tlb_ways == 0
            || cfg.tlb_entries < cfg.tlb_ways
            || !cfg.tlb_entries.is_multiple_of(cfg.tlb_ways)
        {
            return Err(s
                .err(
                    "sim.tlb_entries",
                    "must be a non-zero multiple of sim.tlb_ways",
                )
                .into());
        }
        if s.u64_or("sim.file_folio_order", 0)? > 9 {
            return Err(s
                .err(
                    "sim.file_folio_order",
                    "must be in 0..=9 (a PMD is order 9)",
                )
                .into());
        }
        if cfg.file_max_order > 9 {
            return Err(s
                .err("sim.file_max_order", "must be in 0..=9 (a PMD is order 9)")
                .into());
        }
        if cfg.writeback_request_pages == 0 || cfg.writeback_queue_depth > 1 << 20 {
            return Err(s
                .err(
                    "sim.writeback_queue_depth",
                    "sim.writeback_request_pages must be > 0 and sim.writeback_queue_depth <= 1048576",
                )
                .into());
        }
        if cfg.tick_ns == 0 || cfg.step_pages == 0 {
            return Err(s
                .err("sim.tick", "sim.tick and sim.step_pages must be > 0")
                .into());
        }
        Ok(())
    }
}

/// Keys an earlier model read, refused with what replaced them.
fn reject_removed_keys(s: &reclaimlab_core::Source) -> anyhow::Result<()> {
    for key in ["sim.migrate_per_tick", "sim.migrate_per_tick_shared"] {
        if s.has(key) {
            return Err(s
                .err(
                    key,
                    "was removed: tasks now migrate for the scheduler model's reasons \
                     (wake-up placement, load balancing); describe the machine with \
                     machine.topology.* and its other load with machine.background_load.*",
                )
                .into());
        }
    }
    Ok(())
}
