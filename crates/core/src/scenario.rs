//! The typed scenario shared by the `sim` and `host` backends.
//!
//! A scenario file names a workload (`workload.kind`) and the memcg, run and (simulated) machine
//! around it. Backend-specific tunables live in `[sim]` and `[host]` sections, which the backend
//! reads through [`Source`] itself so that its own keys get the same errors as everything else.

use crate::source::{ScenarioError, Source};
use serde::Serialize;
use std::path::Path;

pub use crate::workload::{
    AnonSweep, FileMmapRw, FileReclaim, Hold, KswapdMmapRead, LimitPages, LimitReclaim, StressVm,
    Workload, YcsbB,
};

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
    (
        "limit-reclaim",
        include_str!("../../../scenarios/limit-reclaim.toml"),
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

pub(crate) fn count(v: u64) -> String {
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

/// The keys that describe the simulated swap device (read by the simulator's config): the host
/// swaps to the device it has or sets up (`--swap`), so `bench` skips them. `swap.device`
/// first: the others apply to a block device only.
pub const SIM_SWAP_KEYS: [&str; 8] = [
    "swap.device",
    "swap.irq_cpu",
    "swap.page_cluster",
    "swap.rotational",
    "swap.scheduler",
    "swap.request_pages",
    "swap.ring_descriptors",
    "swap.indirect_desc",
];

/// Whether a host run's swap was a block device (a swap file, or swap that was already on and
/// is not zram): the simulator's `swap.device = "block"` models it.
pub fn host_swap_is_block(swap: &crate::SwapInfo) -> bool {
    swap.kind == "file"
        || (swap.kind == "existing"
            && !swap.devices.is_empty()
            && swap.devices.iter().any(|d| !d.starts_with("/dev/zram")))
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
        let (machine, profile) = Scenario::read_machine(&src)?;
        let (cpus_avail, mem_avail, where_) = match target {
            Target::Sim => (
                machine.cpus,
                machine.memory_bytes,
                "the simulated machine (machine.memory)",
            ),
            Target::Host { cpus, memory_bytes } => (cpus, memory_bytes, "this machine's RAM"),
        };
        let memcg = Scenario::read_memcg(&src, mem_avail, where_)?;
        let swap_bytes = src.check_range(
            "swap.size",
            src.size_or("swap.size", 8 << 30)?,
            0,
            MAX_PHYS_BYTES,
            fmt_size,
            "more swap than 52 bits of RAM could ever page out is not a configuration",
        )?;
        let run = Scenario::read_run(&src)?;
        let kernel = Scenario::read_kernel(&src, machine.arch)?;
        let kind = src
            .str_opt("workload.kind")?
            .ok_or_else(|| ScenarioError(format!("{}: missing key workload.kind", src.file())))?;
        let cx = crate::workload::Ctx {
            src: &src,
            cpus: cpus_avail,
            machine_memory: machine.memory_bytes,
            memcg_limit: memcg.limit_bytes,
        };
        let workload = Workload::parse(&kind, &cx)?;
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

    /// `machine.*`, with the profile `machine.profile` names.
    fn read_machine(
        src: &Source,
    ) -> Result<(Machine, Option<crate::profile::LoadedProfile>), ScenarioError> {
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
        Ok((machine, profile))
    }

    /// `memcg.*`, checked against the target's memory (`where_` names it).
    fn read_memcg(src: &Source, mem_avail: u64, where_: &str) -> Result<Memcg, ScenarioError> {
        // Global reclaim (kswapd-mmap-read) runs without a memcg limit: it defaults to the
        // machine's memory there.
        let global = Workload::is_global(src.str_opt("workload.kind")?.as_deref());
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
        Ok(memcg)
    }

    /// `run.*`.
    fn read_run(src: &Source) -> Result<Run, ScenarioError> {
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
        Ok(run)
    }

    /// `kernel.preset` and `kernel.patches`, checked against the policies known and the
    /// machine's architecture.
    fn read_kernel(src: &Source, arch: Arch) -> Result<Kernel, ScenarioError> {
        let kernel = Kernel {
            preset: src.str_or("kernel.preset", "6.18")?,
            patches: src.str_list_or("kernel.patches", &[])?,
        };

        if let Err(e) = crate::policy::KernelPolicy::new(&kernel.preset, &kernel.patches)
            .and_then(|k| k.check_arch(arch))
        {
            let key = if e.contains("preset") {
                "kernel.preset"
            } else {
                "kernel.patches"
            };
            return Err(src.err(key, e));
        }
        Ok(kernel)
    }

    /// Ignore single keys the current backend does not read (e.g. [`SIM_SWAP_KEYS`] under
    /// `bench`).
    pub fn skip_keys(&self, keys: &[&str]) {
        for k in keys {
            let _ = self.source.raw(k);
        }
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
    #[test]
    fn a_swap_file_or_a_disk_is_a_block_device_and_zram_is_not() {
        let info = |kind: &str, devs: &[&str]| crate::SwapInfo {
            kind: kind.into(),
            devices: devs.iter().map(|d| d.to_string()).collect(),
            bytes: 1 << 30,
            rotational: None,
            scheduler: None,
            request_pages: None,
            virtio_ring: None,
        };
        assert!(host_swap_is_block(&info(
            "file",
            &["/srv/reclaimlab-1-swap.dat"]
        )));
        assert!(host_swap_is_block(&info("existing", &["/dev/sda2"])));
        assert!(!host_swap_is_block(&info("existing", &["/dev/zram0"])));
        assert!(!host_swap_is_block(&info("zram", &["/dev/zram0"])));
        assert!(!host_swap_is_block(&info("none", &[])));
    }

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
