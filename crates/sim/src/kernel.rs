//! The simulated machine and kernel state. Kernel functions live in the modules named after
//! their kernel files (`mm::vmscan`, `mm::rmap`, `arch::x86::tlb`, ...) as `impl Kernel`
//! blocks, so they share this state the way kernel code shares globals and per-CPU data.

use crate::arch::x86::tlb::CpuTlb;
use crate::config::{CheckLevel, Policy, SimConfig};
use crate::cost::CostTable;
use crate::cpumask::CpuMask;
pub use crate::cputime::Spent;
use crate::mm::folio::FolioTable;
use crate::mm::lru::Lruvec;
use crate::mm::memcontrol::MemCgroup;
use crate::mm::pgtable::Pte;
use crate::mm::swap::SwapDevice;
use crate::mm::vmstat::{IrqStat, VmEvents};
use rand_chacha::ChaCha8Rng;

pub type CpuId = usize;
pub type MmId = usize;
pub type TaskId = usize;

/// Per-CPU state: clock, what runs, and the x86 cpu_tlbstate.
pub struct Cpu {
    /// This CPU's virtual clock (ns). It only moves forward: the engine's CPU order
    /// (engine.rs, CpuOrder and the reclaim preemption window) relies on it.
    pub clock: u64,
    /// The running task. Assigned only in `context_switch` (sched/mod.rs), which counts
    /// `Kernel::context_switches`: the engine rebuilds its CPU order when that count moves.
    pub curr: Option<TaskId>,
    /// cpu_tlbstate.loaded_mm (None = init_mm).
    pub loaded_mm: Option<MmId>,
    /// cpu_tlbstate_shared.is_lazy: running a kernel thread / idle on a borrowed mm.
    pub is_lazy: bool,
    /// When it was not lazy (x86): what a sender behind this CPU's clock reads.
    pub(crate) active: crate::arch::x86::lazy_history::LazyHistory,
    pub tlb: CpuTlb,
    pub next_tick: u64,
    /// The start of the earliest cross-CPU call handler owed to this CPU (smp.rs), u64::MAX
    /// if none: beside the clock, so a charge tests it without reaching into the queue.
    pub(crate) owed_at: u64,
}

/// What backs an mm's single VMA.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backing {
    Anon,
    /// A shared file mapping of file `id`, vpage = file page offset.
    File(usize),
}

pub struct Mm {
    pub ptes: Vec<Pte>,
    pub backing: Backing,
    /// mm->context.tlb_gen.
    pub tlb_gen: u64,
    /// mm_cpumask: CPUs that may cache translations (x86 does not clear on switch-away).
    pub cpumask: CpuMask,
    /// MM_ANONPAGES + MM_FILEPAGES.
    pub rss: u64,
    /// MM_SWAPENTS.
    pub swapents: u64,
    /// Writable mapping (file mappings may be read-only).
    pub writable: bool,
    /// Bumped when the process is OOM-killed and restarted (a new incarnation).
    pub incarnation: u64,
    /// mm->context.next_trim_cpumask (ns).
    pub next_trim: u64,
    /// PMD-mapped page-cache folios, by PMD index (vp >> 9) (mm/huge_memory.rs).
    pub pmd_mapped: std::collections::BTreeSet<u64>,
    /// PMD ranges (vp >> 9) with a PTE page table, i.e. whose PMD is not pmd_none. A table is
    /// installed with the first PTE under the PMD (pte_alloc / pmd_install) and freed only
    /// when the mm goes (free_pgtables): reclaim's unmap clears PTEs, not tables, so a range
    /// once mapped by PTEs is never PMD-mapped again (do_set_pmd needs pmd_none).
    pub pte_tables: Vec<bool>,
    /// The phase of the stress-vm method cycle its worker is in (what its pages hold, for
    /// zram's costs: SwapDevice::data_by_phase).
    pub data_phase: usize,
}

/// A task (thread) and the workload cursor it runs.
pub struct Task {
    pub mm: MmId,
    pub pinned: Option<CpuId>,
    pub cpu: Option<CpuId>,
    /// Next page to touch.
    pub cursor: u64,
    /// Range of pages this task sweeps [start, end).
    pub start: u64,
    pub end: u64,
    pub passes: u64,
    pub pages_touched: u64,
    /// Finished (e.g. file-reclaim populate done): never scheduled again.
    pub done: bool,
    /// Index into the workload's sweep sequence.
    pub phase: usize,
    /// stress-ng bogo counter units.
    pub bogo_units: u64,
    /// The same units split by sweep index (`phase`), for stress-vm's per-method rates.
    pub bogo_units_by_phase: Vec<u64>,
    /// Simulated ns spent in each sweep index (entry to exit, waits included), and when the
    /// current one was entered.
    pub ns_by_phase: Vec<u64>,
    pub phase_entered_ns: u64,
    /// A kernel thread (kswapd): no mm of its own, runs lazily on the previous one.
    pub kthread: bool,
    /// A kernel thread of `machine.timer_kthreads`: its sleeps end by a timer-wheel timer
    /// (schedule_timeout), so its wake-up runs in TIMER_SOFTIRQ where timer migration puts it
    /// (softirq.rs, sched/mod.rs timer_waker).
    pub timer_wheel: bool,
    /// When a one-cycle task finished (its CPU's clock).
    pub done_at: Option<u64>,
    /// A workload's own thread that set it up and then waits for it (anon-sweep's main
    /// thread in join): reported as a helper, not a worker.
    pub helper: bool,
    /// Where fork/clone placement put an unpinned task (None: `place_tasks`' round robin).
    pub initial_cpu: Option<CpuId>,
    /// A random-pattern access whose fault stopped in a reclaim_throttle sleep: the task
    /// touches the same page again after it (the kernel's fault sleeps and completes).
    pub retry_vp: Option<u64>,
}

impl Task {
    /// A workload thread that does the work measured (not a kernel thread, not a helper that
    /// set the workload up and waits).
    pub fn is_worker(&self) -> bool {
        !self.kthread && !self.helper
    }
}

/// A file's page cache: per page either empty, a folio, or a workingset shadow.
pub struct File {
    /// 0 = empty; else like a non-present swap PTE: PTE_SWPCACHE|pfn for a cached folio,
    /// PTE_SWP|shadow for an evicted one.
    pub cache: Vec<u32>,
    /// Per page, whether its cached folio carries buffer heads (folio->private: ext4
    /// attaches them when the folio is written); one bit a page, set on every page of the folio.
    buffers: Vec<u64>,
}

impl File {
    /// An empty page cache of `pages` pages.
    pub fn new(pages: usize) -> File {
        File {
            cache: vec![0; pages],
            buffers: vec![0; pages.div_ceil(64)],
        }
    }

    /// folio_test_private: the cached folio at `index` has buffer heads.
    pub fn has_buffers(&self, index: usize) -> bool {
        self.buffers[index / 64] & (1 << (index % 64)) != 0
    }

    /// Attach (true) or drop (false) the buffer heads of the folio on pages [index, index + n).
    pub fn set_buffers(&mut self, index: usize, n: usize, on: bool) {
        for i in index..index + n {
            let (w, b) = (i / 64, 1u64 << (i % 64));
            if on {
                self.buffers[w] |= b;
            } else {
                self.buffers[w] &= !b;
            }
        }
    }
}

pub struct Kernel {
    pub cfg: SimConfig,
    pub policy: Policy,
    pub cost: CostTable,
    pub cpus: Vec<Cpu>,
    pub mms: Vec<Mm>,
    /// Per file, the first mm that maps it (what a file folio's rmap walk finds; mms are only
    /// ever added, so it never changes once set).
    file_mm: Vec<Option<MmId>>,
    pub tasks: Vec<Task>,
    pub files: Vec<File>,
    pub folios: FolioTable,
    pub lruvec: Lruvec,
    pub memcg: MemCgroup,
    pub swap: SwapDevice,
    /// Every event counter, by item (mm/vm_event_item.rs).
    pub vmstat: VmEvents,
    pub irq: IrqStat,
    pub rng: ChaCha8Rng,
    /// `run.seed`, for draws that must not move the workload's own random stream.
    pub seed: u64,
    /// Swappiness of the memcg (memory.swappiness).
    pub swappiness: u64,
    pub invariant_errors: Vec<String>,
    /// Dirty file folios reclaim tagged PG_reclaim, for the flusher (wakeup_flusher_threads).
    pub writeback_queue: Vec<crate::mm::folio::Pfn>,
    /// Spare folio lists for reclaim's isolate/keep/free/dirty lists, reused so that a scan
    /// allocates none; a stack, as reclaim nests (a preemption window's step reclaims whole).
    pub(crate) spare_lists: Vec<Vec<crate::mm::folio::Pfn>>,
    /// The lost-write oracle.
    pub oracle: crate::oracle::Oracle,
    /// Run queues and access model, for the engine and reclaim preemption points.
    pub runner: crate::engine::Runner,
    /// Inside a reclaim preemption window (no nested windows).
    pub in_reclaim_preempt: bool,
    /// Context switches so far (any CPU): a CPU's `curr` changes only in one.
    pub context_switches: u64,
    /// Set by the engine's watchdog when the run stopped making progress (engine.rs).
    pub stalled: Option<String>,
    /// machine.arch (`set_arch`; x86 unless set).
    pub arch: crate::arch::Arch,
    /// arm64 FEAT_TLBIRANGE (range TLBIs; ARMv8.4+, e.g. Neoverse N2/V1).
    pub arm64_tlbi_range: bool,
    /// x86 INVLPGB in use (`machine.invlpgb` and a kernel with the series): arch/x86/invlpgb.rs.
    pub invlpgb: Option<crate::arch::x86::invlpgb::Invlpgb>,
    /// LUF's pending batch and the frames owed its flush (mm/luf.rs).
    pub luf: crate::mm::luf::Luf,
    /// arm64: the (mm, first page) of contpte blocks unfolded since they were last complete.
    pub contpte_unfolded: std::collections::BTreeSet<(MmId, u64)>,
    /// Dirty page-cache accounting and the writeback device (mm/page_writeback.rs).
    pub wb: crate::mm::page_writeback::Writeback,
    /// The node's free pages and watermarks (off unless a workload enables global reclaim).
    pub pgdat: crate::mm::page_alloc::Pgdat,
    /// The node's kswapd thread.
    pub kswapd: crate::mm::kswapd::Kswapd,
    /// Page-cache readahead (off unless a workload sets it).
    pub ra: crate::mm::readahead::Readahead,
    /// The scheduler's state: domains, per-task entities, timers, placement counters.
    pub sched: crate::sched::Sched,
    /// Shared spinlocks as queues (locking.rs) and cross-CPU calls with interrupts-off
    /// windows (smp.rs).
    pub locks: crate::locking::Locks,
    /// Each CPU's lru_add folio batch (mm/cpu_fbatches.rs).
    pub cpu_fbatches: Vec<Vec<crate::mm::folio::Pfn>>,
    pub smp: crate::smp::Smp,
    /// CPU time by what it was spent on (cputime.rs).
    pub cpu_time: crate::cputime::CpuTime,
    /// vmpressure's sums (mm/vmpressure.rs) and the system workqueue (workqueue.rs).
    pub vmpressure: crate::mm::vmpressure::Vmpressures,
    pub workqueue: crate::workqueue::Workqueue,
    /// kblockd's pools (kblockd.rs).
    pub kblockd: crate::kblockd::Kblockd,
    /// Softirq rounds and ksoftirqd (softirq.rs).
    pub softirq: crate::softirq::Softirq,
}

impl Kernel {
    pub fn new(
        cfg: SimConfig,
        policy: Policy,
        nr_cpus: usize,
        memcg_limit_pages: u64,
        swap_pages: u64,
        swappiness: u64,
        seed: u64,
    ) -> Kernel {
        use rand::SeedableRng;
        let cpus = (0..nr_cpus)
            .map(|_| Cpu {
                clock: 0,
                curr: None,
                // Boot: the idle task runs on init_mm, not lazy (enter_lazy_tlb is a no-op there).
                loaded_mm: None,
                is_lazy: false,
                active: Default::default(),
                tlb: CpuTlb::new(cfg.tlb_entries, cfg.tlb_ways),
                next_tick: cfg.tick_ns,
                owed_at: u64::MAX,
            })
            .collect();
        Kernel {
            cost: CostTable::x86(),
            cpus,
            mms: Vec::new(),
            file_mm: Vec::new(),
            tasks: Vec::new(),
            files: Vec::new(),
            folios: FolioTable::new(),
            lruvec: {
                let mut l = Lruvec::new();
                if policy.has(crate::config::Patch::Mglru) {
                    l.lrugen = crate::mm::lru_gen::LruGen::init();
                }
                l
            },
            memcg: MemCgroup::new(memcg_limit_pages, nr_cpus),
            swap: {
                let mut s = SwapDevice::new(swap_pages);
                if let Some(b) = cfg.swap.block {
                    s.set_block(b, nr_cpus);
                }
                s
            },
            vmstat: VmEvents::default(),
            irq: IrqStat::new(nr_cpus),
            rng: ChaCha8Rng::seed_from_u64(seed),
            seed,
            swappiness,
            invariant_errors: Vec::new(),
            writeback_queue: Vec::new(),
            spare_lists: Vec::new(),
            oracle: crate::oracle::Oracle::new(cfg.oracle),
            runner: Default::default(),
            in_reclaim_preempt: false,
            context_switches: 0,
            stalled: None,
            arch: crate::arch::Arch::X86,
            arm64_tlbi_range: true,
            invlpgb: None,
            luf: Default::default(),
            contpte_unfolded: Default::default(),
            wb: Default::default(),
            pgdat: Default::default(),
            kswapd: Default::default(),
            ra: Default::default(),
            sched: crate::sched::Sched::new(&cfg.sched, nr_cpus),
            locks: crate::locking::Locks::new(nr_cpus),
            cpu_fbatches: vec![Vec::new(); nr_cpus],
            smp: crate::smp::Smp::new(nr_cpus),
            cpu_time: Default::default(),
            vmpressure: Default::default(),
            workqueue: Default::default(),
            kblockd: Default::default(),
            softirq: crate::softirq::Softirq::new(nr_cpus),
            cfg,
            policy,
        }
    }

    pub fn nr_cpus(&self) -> usize {
        self.cpus.len()
    }

    /// Whether the modelled kernel carries patch `p`: what every decision point asks.
    pub fn has(&self, p: crate::config::Patch) -> bool {
        self.policy.has(p)
    }

    pub fn paranoid(&self) -> bool {
        self.cfg.check == CheckLevel::Full
    }

    /// Create an mm of `pages` virtual pages.
    pub fn mm_alloc(&mut self, pages: u64, backing: Backing, writable: bool) -> MmId {
        let nr = self.nr_cpus();
        self.mms.push(Mm {
            ptes: vec![0; pages as usize],
            backing,
            tlb_gen: 1,
            cpumask: CpuMask::new(nr),
            rss: 0,
            swapents: 0,
            writable,
            incarnation: 0,
            next_trim: 0,
            pmd_mapped: Default::default(),
            pte_tables: vec![false; pages.div_ceil(crate::mm::huge_memory::HPAGE_PMD_NR) as usize],
            data_phase: 0,
        });
        for c in &mut self.cpus {
            c.tlb.add_mm();
        }
        let mm = self.mms.len() - 1;
        if let Backing::File(file) = backing {
            if self.file_mm.len() <= file {
                self.file_mm.resize(file + 1, None);
            }
            self.file_mm[file].get_or_insert(mm);
        }
        mm
    }

    /// The first mm that maps `file`, if any.
    pub fn mm_of_file(&self, file: usize) -> Option<MmId> {
        self.file_mm.get(file).copied().flatten()
    }
    /// A kernel of `cpus` CPUs with the default configuration, for unit tests.
    #[cfg(test)]
    pub(crate) fn for_test(cpus: usize) -> Kernel {
        Kernel::new(
            SimConfig::default(),
            Policy::linux_6_18(),
            cpus,
            1 << 20,
            1 << 10,
            60,
            1,
        )
    }

    pub fn task_new(&mut self, mm: MmId, pinned: Option<CpuId>, start: u64, end: u64) -> TaskId {
        self.tasks.push(Task {
            mm,
            pinned,
            cpu: None,
            cursor: start,
            start,
            end,
            passes: 0,
            pages_touched: 0,
            done: false,
            phase: 0,
            bogo_units: 0,
            bogo_units_by_phase: Vec::new(),
            ns_by_phase: Vec::new(),
            phase_entered_ns: 0,
            kthread: false,
            timer_wheel: false,
            done_at: None,
            helper: false,
            initial_cpu: None,
            retry_vp: None,
        });
        self.sched.se.push(crate::sched::SchedEntity {
            avg: crate::sched::pelt::Avg::new_task(0),
            weight: crate::sched::pelt::NICE_0_LOAD,
            group: crate::sched::autogroup::WORKLOAD_GROUP,
            ..Default::default()
        });
        self.tasks.len() - 1
    }

    /// A helper thread's whole life at the start of the run: it runs on each of `cpus` in
    /// turn (its mm is loaded there and the CPU joins the mm's cpumask), then blocks for good,
    /// leaving each idle CPU lazy on that mm.
    pub fn run_helper(&mut self, t: TaskId, cpus: &[CpuId]) {
        self.tasks[t].done = true;
        self.sched.se[t].sleeping = true;
        // Each CPU it ran on keeps its bit in the mm's cpumask (switch_mm_irqs_off sets it;
        // x86 does not clear it on switch-away).
        for &cpu in cpus {
            self.context_switch(cpu, Some(t));
            self.context_switch(cpu, None);
        }
    }

    /// Charge `ns` of work, spent on `what`, to a CPU's clock.
    /// `cpu` works `ns` more; cross-CPU calls owed to it that start meanwhile interrupt it.
    #[inline]
    pub fn charge(&mut self, cpu: CpuId, ns: u64, what: Spent) {
        self.cpus[cpu].clock += ns;
        self.cpu_time.add(what, ns);
        self.run_owed_handlers(cpu);
    }

    /// One charge of several parts, each accounted to what it pays for.
    pub fn charge_parts(&mut self, cpu: CpuId, parts: &[(u64, Spent)]) {
        for &(ns, what) in parts {
            self.cpus[cpu].clock += ns;
            self.cpu_time.add(what, ns);
        }
        self.run_owed_handlers(cpu);
    }

    pub fn mm_generation(&self, mm: MmId) -> u64 {
        self.mms[mm].incarnation
    }

    pub fn invariant_fail(&mut self, msg: String) {
        if self.invariant_errors.len() < 20 {
            self.invariant_errors.push(msg);
        }
    }
}
