//! The typed scenario shared by the `sim` and `host` backends.
//!
//! A scenario file names a workload (`workload.kind`) and the memcg, run and (simulated) machine
//! around it. Backend-specific tunables live in `[sim]` and `[host]` sections, which the backend
//! reads through [`Source`] itself so that its own keys get the same errors as everything else.

use crate::source::{ScenarioError, Source};
use serde::Serialize;
use std::path::Path;
use toml_edit::Value;

/// Scenarios shipped in `scenarios/`, compiled in so the binary works from any directory.
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "stress-vm",
        include_str!("../../../scenarios/stress-vm.toml"),
    ),
    (
        "file-reclaim",
        include_str!("../../../scenarios/file-reclaim.toml"),
    ),
    (
        "file-mmap-rw",
        include_str!("../../../scenarios/file-mmap-rw.toml"),
    ),
    (
        "anon-sweep",
        include_str!("../../../scenarios/anon-sweep.toml"),
    ),
    ("ycsb-b", include_str!("../../../scenarios/ycsb-b.toml")),
    (
        "kswapd-mmap-read",
        include_str!("../../../scenarios/kswapd-mmap-read.toml"),
    ),
];

/// What a machine can have: the bounds every key is checked against (each with its reason).
pub mod limits {
    /// One page (4K): the unit every byte size is split into.
    pub const PAGE: u64 = 4096;
    /// Physical address space: x86-64 (5-level paging) and arm64 (LPA) address 52 bits.
    pub const MAX_PHYS_BYTES: u64 = 1 << 52;
    /// A process's user address space with 4-level paging (TASK_SIZE_MAX, 47 bits = 128T).
    pub const MAX_ANON_BYTES: u64 = 1 << 47;
    /// ext4's largest file with 4K blocks (2^32 blocks = 16T).
    pub const MAX_FILE_BYTES: u64 = 1 << 44;
    /// PID_MAX_LIMIT on 64-bit kernels (4M): no machine runs more tasks than it has pids.
    pub const MAX_TASKS: u64 = 1 << 22;
    /// A run longer than a day is a mistake, not a measurement (the simulator would take
    /// weeks, and bench's repetitions are meant to be minutes).
    pub const MAX_DURATION_NS: u64 = 86_400_000_000_000;
    /// NR_CPUS's largest configurable value the project supports (x86 CONFIG_MAXSMP is 8192).
    pub const MAX_CPUS: u64 = 4096;
}

use crate::units::{clip, fmt_size};
use limits::*;

fn count(v: u64) -> String {
    v.to_string()
}

/// A duration in the most readable unit, for range messages.
pub fn fmt_duration(ns: u64) -> String {
    match ns {
        0 => "0s".into(),
        n if n % 1_000_000_000 == 0 => format!("{}s", n / 1_000_000_000),
        n if n % 1_000_000 == 0 => format!("{}ms", n / 1_000_000),
        n if n % 1_000 == 0 => format!("{}us", n / 1_000),
        n => format!("{n}ns"),
    }
}

/// Which backend the scenario is being resolved for: the limits that make a value impossible.
#[derive(Clone, Copy, Debug)]
pub enum Target {
    /// The simulated machine described by `machine.*`.
    Sim,
    /// The live machine: its CPU count and RAM.
    Host { cpus: usize, memory_bytes: u64 },
}

pub use crate::arch::Arch;

/// `"all"` (unpinned; the scheduler places threads) or an explicit CPU per worker/thread,
/// assigned round-robin when there are more workers than entries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum CpuSet {
    All(AllTag),
    List(Vec<usize>),
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AllTag {
    All,
}

impl CpuSet {
    pub fn is_all(&self) -> bool {
        matches!(self, CpuSet::All(_))
    }
    /// CPU for worker `i`, or None when unpinned.
    pub fn for_worker(&self, i: usize) -> Option<usize> {
        match self {
            CpuSet::All(_) => None,
            CpuSet::List(l) => Some(l[i % l.len()]),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    /// Simulated CPU count (the host backend uses the live machine's).
    pub cpus: usize,
    pub arch: Arch,
    /// Simulated RAM (the host backend uses the live machine's).
    pub memory_bytes: u64,
    /// `machine.invlpgb` (x86 only): the CPU has AMD's INVLPGB/TLBSYNC broadcast invalidation
    /// (Zen 3 and later). A kernel that carries the series uses it whenever the CPU has it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub invlpgb: bool,
    /// `machine.profile` (or `--profile`): the machine profile whose costs the simulator uses,
    /// as given (a shipped name or a path).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Memcg {
    pub limit_bytes: u64,
    pub swappiness: u32,
}

#[derive(Clone, Debug, Serialize)]
pub struct Run {
    pub duration_ns: u64,
    /// Seed for every random choice the simulator makes (and the host's workers' random patterns).
    pub seed: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Kernel {
    /// Kernel preset the simulator models (e.g. "6.18").
    pub preset: String,
    /// Policies (patch series) applied on top of the preset.
    pub patches: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pattern {
    Sequential,
    Random,
}

/// stress-ng's vm stressor with `--vm-keep` (seed 000).
#[derive(Clone, Debug, Serialize)]
pub struct StressVm {
    pub workers: usize,
    /// Total over all workers: stress-ng 0.15 divides `--vm-bytes` among the `--vm` instances.
    pub bytes_total: u64,
    pub cpus: CpuSet,
    /// stress-ng `--vm-method`.
    pub method: String,
    /// Pass `--no-madvise` (stop stress-ng's random madvise() advice on the buffers).
    pub no_madvise: bool,
}

impl StressVm {
    pub fn bytes_per_worker(&self) -> u64 {
        self.bytes_total / self.workers as u64
    }
}

/// Populate a file through a shared read-only mapping, then reclaim part of it (seeds 001/004).
#[derive(Clone, Debug, Serialize)]
pub struct FileReclaim {
    pub file_bytes: u64,
    pub reclaim_bytes: u64,
    pub threads: usize,
    pub cpus: CpuSet,
    /// Directory for the data file (host); it is removed afterwards.
    pub dir: String,
    /// What the threads do while memory.reclaim runs (`workload.hold`).
    pub hold: Hold,
}

/// file-reclaim's threads after populating, while the file is reclaimed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Hold {
    /// Busy-wait on their CPUs: the mm stays loaded there, so unmapping its pages sends
    /// shootdown IPIs (the default).
    Spin,
    /// Sleep: their CPUs go idle in lazy-TLB mode, which x86's flushes skip.
    Sleep,
}

/// Threads read (and optionally write) a shared file mapping larger than the memcg limit.
#[derive(Clone, Debug, Serialize)]
pub struct FileMmapRw {
    pub file_bytes: u64,
    pub threads: usize,
    pub cpus: CpuSet,
    pub write: bool,
    pub pattern: Pattern,
    pub dir: String,
}

/// vm-scalability's lru-file-mmap-read (seed 003): `readers` processes, each reading its own
/// sparse file through a shared read-only mapping once, sequentially (or at random pages); the
/// files together exceed machine memory, so kswapd (global reclaim) does the reclaiming.
/// Simulator only: it needs machine-wide memory pressure.
#[derive(Clone, Debug, Serialize)]
pub struct KswapdMmapRead {
    /// Total over all readers (each reads `file_bytes / readers`).
    pub file_bytes: u64,
    pub readers: usize,
    pub cpus: CpuSet,
    pub pattern: Pattern,
    /// Sparse files (reading a hole zero-fills the page, no I/O), as vm-scalability creates.
    pub sparse: bool,
    /// read_ahead_kb in pages (the mmap read-around / async readahead window); 0 = off.
    pub readahead_pages: u64,
}

impl KswapdMmapRead {
    pub fn bytes_per_reader(&self) -> u64 {
        self.file_bytes / self.readers as u64
    }
}

/// The project's own anonymous-memory load: processes × threads sweeping their
/// process's buffer, every thread placed where the scenario says, no OOM at sane sizes.
#[derive(Clone, Debug, Serialize)]
pub struct AnonSweep {
    pub processes: usize,
    /// Threads per process; they share the process's mm.
    pub threads: usize,
    /// Per process (unlike stress-vm's total).
    pub bytes_per_process: u64,
    /// Fraction of page touches that are writes (0..=1); the rest are reads.
    pub write_ratio: f64,
    pub pattern: Pattern,
    /// `"all"` (unpinned) or a CPU per thread, process-major: thread t of process p takes
    /// entry (p × threads + t) mod len.
    pub cpus: CpuSet,
}

impl AnonSweep {
    /// CPU for thread `t` of process `p`, or None when unpinned.
    pub fn cpu_of(&self, p: usize, t: usize) -> Option<usize> {
        self.cpus.for_worker(p * self.threads + t)
    }
}

/// YCSB workload B on a file-backed store (seed 002): `threads` clients doing operations on
/// `records` records of `record_bytes` kept in a shared writable file mapping, a fraction
/// `read_ratio` reads and the rest updates (which dirty the record's page), keys drawn from
/// YCSB's scrambled zipfian distribution with constant `zipf_theta`.
#[derive(Clone, Debug, Serialize)]
pub struct YcsbB {
    pub records: u64,
    pub record_bytes: u64,
    pub threads: usize,
    pub cpus: CpuSet,
    pub read_ratio: f64,
    pub zipf_theta: f64,
    /// How the store reaches its file: `mmap` (a shared writable mapping, the default) or
    /// `pread` (pread/pwrite through the page cache, as WiredTiger does).
    pub pread: bool,
}

impl YcsbB {
    pub fn file_bytes(&self) -> u64 {
        self.records * self.record_bytes
    }
}

#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Workload {
    StressVm(StressVm),
    FileReclaim(FileReclaim),
    FileMmapRw(FileMmapRw),
    AnonSweep(AnonSweep),
    YcsbB(YcsbB),
    KswapdMmapRead(KswapdMmapRead),
}

impl Workload {
    pub fn kind(&self) -> &'static str {
        match self {
            Workload::StressVm(_) => "stress-vm",
            Workload::FileReclaim(_) => "file-reclaim",
            Workload::FileMmapRw(_) => "file-mmap-rw",
            Workload::AnonSweep(_) => "anon-sweep",
            Workload::YcsbB(_) => "ycsb-b",
            Workload::KswapdMmapRead(_) => "kswapd-mmap-read",
        }
    }
    /// Whether the workload's memory is anonymous (and so needs swap to be reclaimed).
    pub fn is_anon(&self) -> bool {
        matches!(self, Workload::StressVm(_) | Workload::AnonSweep(_))
    }
}

/// A fully resolved scenario. `source` keeps the raw keys so a backend can read its own section.
#[derive(Debug, Serialize)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    pub machine: Machine,
    pub memcg: Memcg,
    /// Simulated swap device size (the host uses the swap it is given).
    pub swap_bytes: u64,
    pub run: Run,
    pub kernel: Kernel,
    pub workload: Workload,
    #[serde(skip)]
    pub source: Source,
    /// The loaded `machine.profile`, if any (the simulator overlays its costs).
    #[serde(skip)]
    pub profile: Option<crate::profile::LoadedProfile>,
}

/// Find a scenario by builtin name or by path; returns (display name, text).
pub fn locate(name_or_path: &str) -> Result<(String, String), ScenarioError> {
    let p = Path::new(name_or_path);
    if p.extension().is_some_and(|e| e == "toml") || p.exists() {
        let text = std::fs::read_to_string(p)
            .map_err(|e| ScenarioError(format!("{name_or_path}: cannot read scenario: {e}")))?;
        return Ok((name_or_path.to_string(), text));
    }
    if let Some((n, t)) = BUILTIN.iter().find(|(n, _)| *n == name_or_path) {
        return Ok((format!("scenarios/{n}.toml"), t.to_string()));
    }
    let names: Vec<&str> = BUILTIN.iter().map(|(n, _)| *n).collect();
    Err(ScenarioError(format!(
        "no scenario named {name_or_path:?}: give a path to a .toml file or one of {}",
        names.join(", ")
    )))
}

impl Scenario {
    /// Locate, apply `--set` overrides, and resolve for `target`. Backend sections (`sim.*`,
    /// `host.*`) are left for the backend to read; call [`Scenario::finish`] after it has.
    pub fn load(
        name_or_path: &str,
        sets: &[String],
        target: Target,
    ) -> Result<Scenario, ScenarioError> {
        let (file, text) = locate(name_or_path)?;
        let mut src = Source::parse(&file, &text)?;
        for s in sets {
            src.set(s)?;
        }
        Scenario::resolve(src, target)
    }

    pub fn resolve(src: Source, target: Target) -> Result<Scenario, ScenarioError> {
        let name = src
            .str_opt("name")?
            .ok_or_else(|| ScenarioError(format!("{}: missing key name", src.file())))?;
        let description = src.str_or("description", "")?;

        let profile = match src.str_opt("machine.profile")? {
            Some(p) => Some(
                crate::profile::load(&p)
                    .map_err(|e| src.err("machine.profile", format!("{e:#}")))?,
            ),
            None => None,
        };
        // A profile's arch is the machine's when machine.arch is not given; a different
        // machine.arch is an error (its costs belong to the other architecture).
        let arch_default = profile
            .as_ref()
            .map_or("x86", |p| p.profile.machine.arch.as_str());
        let machine = Machine {
            cpus: src.u64_or("machine.cpus", 2)? as usize,
            arch: Arch::parse(&src.str_or("machine.arch", arch_default)?)
                .map_err(|e| src.err("machine.arch", e))?,
            memory_bytes: src.size_or("machine.memory", 32 << 30)?,
            invlpgb: src.bool_or("machine.invlpgb", false)?,
            profile: src.str_opt("machine.profile")?,
        };
        if machine.invlpgb && machine.arch == Arch::Arm64 {
            return Err(src.err(
                "machine.invlpgb",
                "INVLPGB is an x86 (AMD) instruction; arm64 broadcasts its TLBIs anyway: \
                 set machine.arch = \"x86\" or drop machine.invlpgb",
            ));
        }
        if let Some(p) = &profile {
            let want = p.profile.machine.arch.as_str();
            let have = machine.arch.name();
            if want != have {
                return Err(src.err(
                    "machine.arch",
                    format!(
                        "{have} does not match profile {:?} (arch {want}): set machine.arch = \"{want}\" or use a {have} profile",
                        p.profile.profile.name
                    ),
                ));
            }
        }
        src.check_range(
            "machine.cpus",
            machine.cpus as u64,
            1,
            MAX_CPUS,
            count,
            "a machine has at least one CPU and NR_CPUS at most 4096 here",
        )?;
        src.check_range(
            "machine.memory",
            machine.memory_bytes,
            4 << 20,
            MAX_PHYS_BYTES,
            fmt_size,
            "the smallest memcg is 4M, and x86-64/arm64 address at most 52 bits of RAM",
        )?;
        let (cpus_avail, mem_avail, where_) = match target {
            Target::Sim => (
                machine.cpus,
                machine.memory_bytes,
                "the simulated machine (machine.memory)",
            ),
            Target::Host { cpus, memory_bytes } => (cpus, memory_bytes, "this machine's RAM"),
        };

        // Global reclaim (kswapd-mmap-read) runs without a memcg limit: it defaults to the
        // machine's memory there.
        let global = src.str_opt("workload.kind")?.as_deref() == Some("kswapd-mmap-read");
        let memcg = Memcg {
            limit_bytes: match src.size_opt("memcg.limit")? {
                Some(v) => v,
                None if global => mem_avail,
                None => {
                    return Err(ScenarioError(format!(
                        "{}: missing key memcg.limit",
                        src.file()
                    )))
                }
            },
            swappiness: src.check_range(
                "memcg.swappiness",
                src.u64_or("memcg.swappiness", 60)?,
                0,
                200,
                count,
                "vm.swappiness and memory.swappiness take 0..=200",
            )? as u32,
        };
        if memcg.limit_bytes < (4 << 20) {
            return Err(src.err("memcg.limit", "must be at least 4M"));
        }
        if memcg.limit_bytes > mem_avail {
            return Err(src.err(
                "memcg.limit",
                format!(
                    "{} is above {where_} ({})",
                    crate::units::fmt_size(memcg.limit_bytes),
                    crate::units::fmt_size(mem_avail)
                ),
            ));
        }
        let swap_bytes = src.check_range(
            "swap.size",
            src.size_or("swap.size", 8 << 30)?,
            0,
            MAX_PHYS_BYTES,
            fmt_size,
            "more swap than 52 bits of RAM could ever page out is not a configuration",
        )?;
        let run = Run {
            duration_ns: src.duration_ns_or("run.duration", 10_000_000_000)?,
            seed: src.u64_or("run.seed", 1)?,
        };
        src.check_range(
            "run.duration",
            run.duration_ns,
            1,
            MAX_DURATION_NS,
            fmt_duration,
            "a run must last, and a run longer than a day is not a measurement this tool makes",
        )?;
        let kernel = Kernel {
            preset: src.str_or("kernel.preset", "6.18")?,
            patches: src.str_list_or("kernel.patches", &[])?,
        };

        if let Err(e) = crate::policy::KernelPolicy::new(&kernel.preset, &kernel.patches)
            .and_then(|k| k.check_arch(machine.arch))
        {
            let key = if e.contains("preset") {
                "kernel.preset"
            } else {
                "kernel.patches"
            };
            return Err(src.err(key, e));
        }

        let kind = src
            .str_opt("workload.kind")?
            .ok_or_else(|| ScenarioError(format!("{}: missing key workload.kind", src.file())))?;
        let workload = match kind.as_str() {
            "stress-vm" => {
                let w = StressVm {
                    workers: positive(&src, "workload.workers", 16)?,
                    bytes_total: src.size_or("workload.bytes", 2 << 30)?,
                    cpus: cpuset(&src, "workload.cpus", cpus_avail)?,
                    method: src.str_or("workload.method", "all")?,
                    no_madvise: src.bool_or("workload.no_madvise", true)?,
                };
                tasks(&src, "workload.workers", w.workers as u64)?;
                if w.bytes_per_worker() < PAGE {
                    return Err(src.err("workload.bytes", "leaves less than one page per worker"));
                }
                if w.bytes_per_worker() > MAX_ANON_BYTES {
                    return Err(src.err(
                        "workload.bytes",
                        format!(
                            "gives each worker {}, above a process's 128T address space",
                            fmt_size(w.bytes_per_worker())
                        ),
                    ));
                }
                Workload::StressVm(w)
            }
            "file-reclaim" => {
                let w = FileReclaim {
                    file_bytes: src.size_or("workload.file_bytes", 1 << 30)?,
                    reclaim_bytes: src.size_or("workload.reclaim_bytes", 512 << 20)?,
                    threads: positive(&src, "workload.threads", cpus_avail as u64)?,
                    cpus: cpuset_or_pinned(&src, "workload.cpus", cpus_avail)?,
                    dir: src.str_or("workload.dir", "/var/tmp")?,
                    hold: hold(&src)?,
                };
                file_per_thread(&src, w.file_bytes, w.threads)?;
                if w.reclaim_bytes > w.file_bytes {
                    return Err(src.err(
                        "workload.reclaim_bytes",
                        "is larger than workload.file_bytes",
                    ));
                }
                if w.file_bytes > memcg.limit_bytes {
                    return Err(src.err(
                        "workload.file_bytes",
                        "must fit under memcg.limit (the file is populated before reclaim starts)",
                    ));
                }
                Workload::FileReclaim(w)
            }
            "file-mmap-rw" => {
                let w = FileMmapRw {
                    file_bytes: src.size_or("workload.file_bytes", 1 << 30)?,
                    threads: positive(&src, "workload.threads", cpus_avail as u64)?,
                    cpus: cpuset_or_pinned(&src, "workload.cpus", cpus_avail)?,
                    write: src.bool_or("workload.write", false)?,
                    pattern: pattern(&src, "workload.pattern")?,
                    dir: src.str_or("workload.dir", "/var/tmp")?,
                };
                file_per_thread(&src, w.file_bytes, w.threads)?;
                Workload::FileMmapRw(w)
            }
            "anon-sweep" => {
                let w = AnonSweep {
                    processes: positive(&src, "workload.processes", 1)?,
                    threads: positive(&src, "workload.threads", 1)?,
                    bytes_per_process: src.size_or("workload.bytes", 256 << 20)?,
                    write_ratio: src.f64_or("workload.write_ratio", 1.0)?,
                    pattern: pattern(&src, "workload.pattern")?,
                    cpus: cpuset(&src, "workload.cpus", cpus_avail)?,
                };
                if !(0.0..=1.0).contains(&w.write_ratio) {
                    return Err(src.err(
                        "workload.write_ratio",
                        format!("must be within 0..=1 (got {})", w.write_ratio),
                    ));
                }
                tasks(&src, "workload.processes", w.processes as u64)?;
                tasks(&src, "workload.threads", w.threads as u64)?;
                let total = w.processes as u64 * w.threads as u64;
                if total > MAX_TASKS {
                    return Err(src.err(
                        "workload.threads",
                        format!(
                            "workload.processes x workload.threads = {total} tasks, above PID_MAX_LIMIT ({MAX_TASKS})"
                        ),
                    ));
                }
                if w.bytes_per_process / PAGE < w.threads as u64 {
                    return Err(src.err(
                        "workload.bytes",
                        format!(
                            "{} per process leaves less than one page (4K) for each of its {} threads",
                            fmt_size(w.bytes_per_process),
                            w.threads
                        ),
                    ));
                }
                if w.bytes_per_process > MAX_ANON_BYTES {
                    return Err(src.err(
                        "workload.bytes",
                        format!(
                            "{} per process is above a process's 128T address space",
                            fmt_size(w.bytes_per_process)
                        ),
                    ));
                }
                Workload::AnonSweep(w)
            }
            "ycsb-b" => {
                let w = YcsbB {
                    records: src.u64_or("workload.records", 1 << 20)?,
                    record_bytes: src.size_or("workload.record_bytes", 1024)?,
                    threads: positive(&src, "workload.threads", 32)?,
                    cpus: cpuset(&src, "workload.cpus", cpus_avail)?,
                    read_ratio: src.f64_or("workload.read_ratio", 0.95)?,
                    zipf_theta: src.f64_or("workload.zipf_theta", 0.99)?,
                    pread: match src.str_or("workload.access", "mmap")?.as_str() {
                        "mmap" => false,
                        "pread" => true,
                        o => {
                            return Err(src.err(
                                "workload.access",
                                format!("{}: use mmap or pread", clip(o)),
                            ))
                        }
                    },
                };
                tasks(&src, "workload.threads", w.threads as u64)?;
                if w.records == 0 {
                    return Err(src.err("workload.records", "must be at least 1"));
                }
                if w.record_bytes == 0 || w.record_bytes > 4096 || 4096 % w.record_bytes != 0 {
                    return Err(src.err(
                        "workload.record_bytes",
                        "must divide 4K (a record lies within one page)",
                    ));
                }
                if w.records.saturating_mul(w.record_bytes) > MAX_FILE_BYTES {
                    return Err(src.err(
                        "workload.records",
                        "x workload.record_bytes is above ext4's 16T largest file",
                    ));
                }
                if !(0.0..=1.0).contains(&w.read_ratio) {
                    return Err(src.err(
                        "workload.read_ratio",
                        format!("must be within 0..=1 (got {})", w.read_ratio),
                    ));
                }
                if !(w.zipf_theta > 0.0 && w.zipf_theta < 1.0) {
                    return Err(src.err(
                        "workload.zipf_theta",
                        format!("must be within (0, 1) (got {})", w.zipf_theta),
                    ));
                }
                Workload::YcsbB(w)
            }
            "kswapd-mmap-read" => {
                let w = KswapdMmapRead {
                    file_bytes: src.size_or("workload.file_bytes", 2 * machine.memory_bytes)?,
                    readers: positive(&src, "workload.readers", cpus_avail as u64)?,
                    cpus: cpuset_or_pinned(&src, "workload.cpus", cpus_avail)?,
                    pattern: pattern(&src, "workload.pattern")?,
                    sparse: src.bool_or("workload.sparse", true)?,
                    readahead_pages: src.u64_or("workload.readahead_pages", 32)?,
                };
                tasks(&src, "workload.readers", w.readers as u64)?;
                if w.bytes_per_reader() < 4096 {
                    return Err(src.err(
                        "workload.file_bytes",
                        "leaves less than one page per reader",
                    ));
                }
                if w.bytes_per_reader() >= 1 << 44 {
                    return Err(src.err("workload.file_bytes", "is too large (2^32 pages per reader)"));
                }
                if w.readahead_pages > 1024 {
                    return Err(src.err("workload.readahead_pages", "must be 0..=1024"));
                }
                Workload::KswapdMmapRead(w)
            }
            other => {
                return Err(src.err(
                    "workload.kind",
                    format!(
                        "unknown workload {}: use stress-vm, file-reclaim, file-mmap-rw, anon-sweep, ycsb-b or kswapd-mmap-read",
                        clip(other)
                    ),
                ))
            }
        };
        Ok(Scenario {
            name,
            description,
            machine,
            memcg,
            swap_bytes,
            run,
            kernel,
            workload,
            source: src,
            profile,
        })
    }

    /// Ignore a backend section the current backend does not read (e.g. `sim.*` under `bench`).
    pub fn skip_section(&self, prefix: &str) {
        for k in self.source.keys_under(prefix) {
            let _ = self.source.raw(&k);
        }
    }

    /// After the backend read its section: error on any key nobody used.
    pub fn finish(&self) -> Result<(), ScenarioError> {
        self.source.check_all_used()
    }

    /// The kernel preset and patches, already validated by `resolve`.
    pub fn kernel_policy(&self) -> crate::policy::KernelPolicy {
        crate::policy::KernelPolicy::new(&self.kernel.preset, &self.kernel.patches)
            .expect("validated in Scenario::resolve")
    }

    /// The resolved scenario as JSON, for the result's `config`.
    /// Backend sections (`[sim]`, `[host]`) are recorded as written, under `sim` and `host`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).expect("scenario serializes");
        for sec in ["sim", "host"] {
            v[sec] =
                serde_json::to_value(self.source.section_text(sec)).expect("strings serialize");
        }
        v
    }
}

fn pattern(src: &Source, key: &str) -> Result<Pattern, ScenarioError> {
    match src.str_or(key, "sequential")?.as_str() {
        "sequential" => Ok(Pattern::Sequential),
        "random" => Ok(Pattern::Random),
        o => Err(src.err(key, format!("{}: use sequential or random", clip(o)))),
    }
}

/// `workload.hold`: spin (default) or sleep. Its earlier name, host-only, is refused with
/// the new one.
fn hold(src: &Source) -> Result<Hold, ScenarioError> {
    if src.has("host.hold") {
        return Err(src.err(
            "host.hold",
            "is now workload.hold (the simulator honours it too)",
        ));
    }
    match src.str_or("workload.hold", "spin")?.as_str() {
        "spin" => Ok(Hold::Spin),
        "sleep" => Ok(Hold::Sleep),
        o => Err(src.err("workload.hold", format!("{}: use spin or sleep", clip(o)))),
    }
}

/// A task count within 1..=PID_MAX_LIMIT.
fn tasks(src: &Source, key: &str, n: u64) -> Result<u64, ScenarioError> {
    src.check_range(
        key,
        n,
        1,
        MAX_TASKS,
        count,
        "each is a task, and a kernel has at most PID_MAX_LIMIT of them",
    )
}

/// A file workload's file: at least a page per thread, at most ext4's largest file.
fn file_per_thread(src: &Source, file_bytes: u64, threads: usize) -> Result<(), ScenarioError> {
    tasks(src, "workload.threads", threads as u64)?;
    if file_bytes / PAGE < threads as u64 {
        return Err(src.err(
            "workload.file_bytes",
            format!(
                "{} leaves less than one page (4K) for each of the {threads} threads",
                fmt_size(file_bytes)
            ),
        ));
    }
    if file_bytes > MAX_FILE_BYTES {
        return Err(src.err(
            "workload.file_bytes",
            format!(
                "{} is above ext4's largest file (16T with 4K blocks)",
                fmt_size(file_bytes)
            ),
        ));
    }
    Ok(())
}

fn positive(src: &Source, key: &str, default: u64) -> Result<usize, ScenarioError> {
    let v = src.u64_or(key, default)?;
    if v == 0 {
        return Err(src.err(key, "must be at least 1 (got 0)"));
    }
    Ok(v as usize)
}

/// Like [`cpuset`], but when the key is absent each thread is pinned to its own CPU (0, 1, ...).
fn cpuset_or_pinned(src: &Source, key: &str, avail: usize) -> Result<CpuSet, ScenarioError> {
    if src.has(key) {
        cpuset(src, key, avail)
    } else {
        Ok(CpuSet::List((0..avail).collect()))
    }
}

/// `"all"`, `[0, 1]` or `"0-3,5"`; every CPU must exist on the target machine.
fn cpuset(src: &Source, key: &str, avail: usize) -> Result<CpuSet, ScenarioError> {
    let list = match src.raw(key) {
        None => return Ok(CpuSet::All(AllTag::All)),
        Some(Value::String(s)) if s.value().trim() == "all" => return Ok(CpuSet::All(AllTag::All)),
        Some(Value::String(s)) => parse_cpu_list(s.value()).map_err(|m| src.err(key, m))?,
        Some(Value::Integer(i)) if *i.value() >= 0 => vec![*i.value() as usize],
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| match v {
                Value::Integer(i) if *i.value() >= 0 => Ok(*i.value() as usize),
                other => Err(src.err(
                    key,
                    format!(
                        "CPU numbers must be whole numbers, got {}",
                        clip(other.to_string().trim())
                    ),
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(src.err(
                key,
                format!(
                    "expected \"all\", a list or \"0-3,5\", got {}",
                    clip(other.to_string().trim())
                ),
            ))
        }
    };
    if list.is_empty() {
        return Err(src.err(key, "empty CPU list"));
    }
    if let Some(bad) = list.iter().find(|c| **c >= avail) {
        return Err(src.err(
            key,
            format!(
                "CPU {bad} does not exist: the target machine has {avail} CPUs (0-{})",
                avail - 1
            ),
        ));
    }
    Ok(CpuSet::List(list))
}

/// Parse the kernel's cpulist format ("0-3,5").
pub fn parse_cpu_list(s: &str) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let parse = |x: &str| {
            x.trim()
                .parse::<usize>()
                .map_err(|_| format!("bad CPU list {}: use \"all\", \"0-3,5\" or [0, 1]", clip(s)))
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (parse(a)?, parse(b)?);
                if b < a {
                    return Err(format!("bad CPU range {}", clip(part)));
                }
                out.extend(a..=b);
            }
            None => out.push(parse(part)?),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(name: &str, sets: &[&str], t: Target) -> Result<Scenario, ScenarioError> {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let s = Scenario::load(name, &sets, t)?;
        s.skip_section("sim");
        s.skip_section("host");
        s.finish()?;
        Ok(s)
    }

    const HOST: Target = Target::Host {
        cpus: 2,
        memory_bytes: 24 << 30,
    };

    #[test]
    fn builtins_resolve_for_both_backends() {
        for (n, _) in BUILTIN {
            load(n, &[], Target::Sim).unwrap_or_else(|e| panic!("{n} sim: {e}"));
            let s = load(n, &[], HOST).unwrap_or_else(|e| panic!("{n} host: {e}"));
            assert_eq!(s.to_json()["workload"]["kind"], *n);
            assert!(s.to_json()["sim"].is_object());
        }
    }

    #[test]
    fn stress_vm_defaults_match_seed_000() {
        let s = load("stress-vm", &[], Target::Sim).unwrap();
        let Workload::StressVm(w) = &s.workload else {
            panic!()
        };
        assert_eq!((w.workers, w.bytes_total), (16, 2 << 30));
        assert_eq!(w.bytes_per_worker(), 128 << 20);
        assert_eq!(s.memcg.limit_bytes, 512 << 20);
        assert_eq!(s.run.duration_ns, 60_000_000_000);
        assert_eq!(s.machine.cpus, 16);
    }

    #[test]
    fn overrides_and_errors() {
        let s = load(
            "stress-vm",
            &["workload.workers=2", "memcg.limit=256M"],
            HOST,
        )
        .unwrap();
        assert_eq!(s.memcg.limit_bytes, 256 << 20);
        let e = load("stress-vm", &["workload.workers=0"], HOST)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--set workload.workers=0: workload.workers: must be at least 1"),
            "{e}"
        );
        let e = load("stress-vm", &["memcg.limit=100G"], HOST)
            .unwrap_err()
            .to_string();
        assert!(e.contains("above this machine's RAM"), "{e}");
        let e = load("stress-vm", &["workload.cpus=0-3"], HOST)
            .unwrap_err()
            .to_string();
        assert!(e.contains("CPU 2 does not exist"), "{e}");
        let e = load("stress-vm", &["workload.bogus=1"], HOST)
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown key workload.bogus"), "{e}");
        let e = load("stress-vm", &["run.duration=5h"], HOST)
            .unwrap_err()
            .to_string();
        assert!(e.contains("run.duration: bad duration unit"), "{e}");
        let e = load(
            "stress-vm",
            &["kernel.patches=[\"batch-dirty-flush\",\"x\"]"],
            HOST,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("kernel.patches: unknown patch \"x\""), "{e}");
        let s = load("stress-vm", &["host.grace=5s"], HOST).unwrap();
        assert_eq!(s.to_json()["host"]["host.grace"], "\"5s\"");
        let e = load("anon-sweep", &["workload.write_ratio=1.5"], HOST)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("workload.write_ratio: must be within 0..=1"),
            "{e}"
        );
        let s = load(
            "anon-sweep",
            &[
                "workload.processes=2",
                "workload.threads=2",
                "workload.cpus=[0,1]",
            ],
            HOST,
        )
        .unwrap();
        let Workload::AnonSweep(w) = &s.workload else {
            panic!()
        };
        assert_eq!(
            (w.cpu_of(0, 0), w.cpu_of(0, 1), w.cpu_of(1, 0)),
            (Some(0), Some(1), Some(0))
        );
        // 16 pinned CPUs are fine on the simulated 16-CPU machine.
        load("stress-vm", &["workload.cpus=0-15"], Target::Sim).unwrap();
    }

    #[test]
    fn file_errors_name_line() {
        let dir = std::env::temp_dir().join(format!("rl-scn-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("bad.toml");
        std::fs::write(
            &p,
            "name = \"bad\"\n[workload]\nkind = \"stress-vm\"\nworkers = 0\n[memcg]\nlimit = \"64M\"\n",
        )
        .unwrap();
        let e = load(p.to_str().unwrap(), &[], Target::Sim)
            .unwrap_err()
            .to_string();
        assert!(e.contains("bad.toml:4: workload.workers"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn errors_quote_at_most_a_hundred_characters() {
        let huge = "9".repeat(100_000);
        for set in [
            format!("workload.bytes={huge}Q"),
            format!("workload.{huge}=1"),
            format!("run.duration={huge}x"),
            format!("kernel.preset={huge}"),
            format!("workload.pattern=[{}]", "1,".repeat(50_000)),
        ] {
            let e = load("stress-vm", &[&set], Target::Sim)
                .unwrap_err()
                .to_string();
            assert!(
                e.len() < 600,
                "{} bytes: {}",
                e.len(),
                &e[..600.min(e.len())]
            );
        }
        let e = Source::parse("x.toml", &format!("a = {huge}{huge}q\n"))
            .unwrap_err()
            .to_string();
        assert!(e.len() < 1000, "{e}");
    }

    #[test]
    fn scalars_keep_their_text() {
        let s = load("stress-vm", &["kernel.preset=7.0"], Target::Sim).unwrap();
        assert_eq!(s.kernel.preset, "7.0");
        let e = load("stress-vm", &["kernel.preset=7.00"], Target::Sim)
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"7.00\""), "{e}");
    }

    #[test]
    fn ranges_name_key_bound_and_reason() {
        let e = load("stress-vm", &["machine.memory=8192T"], Target::Sim)
            .unwrap_err()
            .to_string();
        assert!(e.contains("machine.memory: must be within 4M..="), "{e}");
        let e = load("stress-vm", &["run.duration=2000m"], Target::Sim)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("run.duration: must be within 1ns..=86400s"),
            "{e}"
        );
        let e = load(
            "ycsb-b",
            &["workload.records=9223372036854775807"],
            Target::Sim,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("16T"), "{e}");
        let e = load(
            "anon-sweep",
            &["workload.processes=4096", "workload.threads=2048"],
            Target::Sim,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("PID_MAX_LIMIT"), "{e}");
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-3,5").unwrap(), vec![0, 1, 2, 3, 5]);
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("a").is_err());
    }
}
