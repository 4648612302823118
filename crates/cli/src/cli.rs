//! The command line: clap's types, one argument struct per subcommand (`crate::cmd` runs them).

use crate::output::Format;
use clap::{Args, Parser, Subcommand};
use reclaimlab_core::sweep::Axis;
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "reclaimlab",
    version,
    about = "Measure, predict and check TLB-flush batching in Linux page reclaim",
    long_about = "reclaimlab runs page-reclaim scenarios (the benchmarks of the LKML series on batched TLB \
flushing) either in a deterministic model of the kernel's reclaim path (`sim`, no root needed) or on the \
live kernel in a memcg (`bench`, root), and compares results as the seeds' Before/After/Delta table.\n\n\
Scenarios are TOML files; the shipped ones (see `reclaimlab scenarios`) are selected by name, others by path. \
Any key can be overridden with --set KEY=VALUE (sizes take K/M/G/T, durations ns/us/ms/s/m)."
)]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Cmd,
}

/// Where the scenario keys are listed, under the options of the commands that take --set.
const KEYS_HELP: &str = "Scenario keys: `reclaimlab scenarios` lists the shipped scenarios; \
`reclaimlab scenarios NAME` prints one as TOML with every key it sets and its value, the default \
that --set overrides (`workers = 16` under `[workload]` is workload.workers). The README's \
\"Scenario keys\" describes every key. Sizes take K/M/G/T, durations ns/us/ms/s/m.";

#[derive(Args)]
pub struct ScenarioArgs {
    /// Scenario name (see `reclaimlab scenarios`) or path to a .toml file.
    pub scenario: String,
    /// Override a scenario key, e.g. --set workload.workers=2 --set memcg.limit=256M (repeatable;
    /// default: the scenario's values, which `reclaimlab scenarios NAME` prints).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
}

#[derive(Args)]
pub struct OutputArgs {
    /// How to print the table.
    #[arg(long, value_enum, default_value_t = Format::Text, value_name = "FORMAT")]
    pub format: Format,
    /// Print only the result JSON on stdout (no table, no progress bar): --format json.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// --format mail: name the rows by their /proc/vmstat keys, not readable names.
    #[arg(long)]
    pub raw_names: bool,
    /// Also write the result JSON to FILE (default: none).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Show every non-zero counter, not just the headline ones.
    #[arg(long)]
    pub all: bool,
}

#[derive(Subcommand)]
pub enum Cmd {
    /// Simulate a scenario in the model of the kernel's reclaim path (no root needed).
    #[command(after_help = KEYS_HELP)]
    Sim(SimArgs),
    /// Run a scenario on the live kernel in a memcg (needs root); leaves nothing behind.
    #[command(after_help = KEYS_HELP)]
    Bench(BenchArgs),
    /// Measure this machine's costs for the simulator on the live kernel (needs root): faults,
    /// page clearing, local flushes, the shootdown round trip, zram, readahead, reclaim, and the
    /// swap-in/reclaim cycle profiled with perf (the reclaim path's costs per page; needs perf).
    /// Writes a machine profile (--out FILE.toml) with every sample beside it
    /// (FILE.calibrate.json); leaves nothing behind. About 1 min, --quick about 20 s.
    Calibrate(CalibrateArgs),
    /// Before/After/Delta table: of two result files (host or sim, in any mix), or of two
    /// simulations of one scenario: `compare SCENARIO --before 6.18 --after 6.18+batch-dirty-flush`;
    /// --plot also draws the deltas (SVG or PNG).
    #[command(
        override_usage = "reclaimlab compare BEFORE.json AFTER.json [OPTIONS]\n       \
                                reclaimlab compare SCENARIO --before PRESET[+PATCH...] --after PRESET[+PATCH...] [--set KEY=VALUE]... [--before-set KEY=VALUE]... [--after-set KEY=VALUE]... [OPTIONS]",
        after_help = KEYS_HELP
    )]
    Compare(CompareArgs),
    /// Run a scenario on the host and in the simulator (as this machine) and print the
    /// per-stolen-page ratios side by side with the sim's relative error (host part needs root).
    Validate(ValidateArgs),
    /// Simulate a grid of scenario variations under two policies (in parallel: --jobs) and
    /// print each metric's Before/After delta per grid point; --plot draws them (SVG or PNG).
    #[command(after_help = KEYS_HELP)]
    Sweep(SweepArgs),
    /// Search every interleaving of user stores, context switches and reclaim's steps on a tiny
    /// machine for a store through a stale TLB entry (lost write or use-after-free write).
    /// Exits 0 when none is found within scope, 1 with the shortest counterexample.
    Check(CheckArgs),
    /// List kernel presets and policies (the seed series), one line each.
    Policies,
    /// List the shipped machine profiles (CPU, arch, kernel, how many costs are measured,
    /// published or estimated), or show one profile's every cost with its provenance and source.
    Profiles(ProfilesArgs),
    /// List the shipped scenarios, or print one.
    Scenarios(ScenariosArgs),
}

#[derive(Args)]
pub struct SimArgs {
    #[command(flatten)]
    pub scn: ScenarioArgs,
    /// Kernel preset to model (sets kernel.preset), e.g. 6.18 (default: the scenario's
    /// kernel.preset, else 6.18; `reclaimlab policies` lists them).
    #[arg(long, value_name = "PRESET")]
    pub kernel: Option<String>,
    /// Apply a policy (patch series) on top of the preset (repeatable; sets kernel.patches;
    /// default: the scenario's kernel.patches, else none).
    #[arg(long = "patch", value_name = "NAME")]
    pub patches: Vec<String>,
    /// Random seed (sets run.seed; default: the scenario's run.seed, else 1); the same
    /// scenario and seed give the same output, bit for bit.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Machine profile for the simulator's costs: a shipped NAME (see `reclaimlab profiles`)
    /// or a FILE.toml; sets machine.profile (and wins over the scenario's; default: the
    /// scenario's machine.profile, else the built-in costs).
    #[arg(long, value_name = "NAME|FILE")]
    pub profile: Option<String>,
    #[command(flatten)]
    pub out: OutputArgs,
}

#[derive(Args)]
pub struct BenchArgs {
    #[command(flatten)]
    pub scn: ScenarioArgs,
    /// Repetitions (each in a fresh memcg); medians, min and max are reported.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub repeat: u64,
    /// Set up swap for the run and take it down after: zram:SIZE (e.g. zram:4G), or
    /// `file:SIZE[:DIR]`, a swap file on a disk filesystem, i.e. a block swap device (DIR
    /// defaults to /var/tmp). Default: the swap that is on, and an anonymous scenario
    /// refuses to start without any.
    #[arg(long, value_name = "zram:SIZE|file:SIZE")]
    pub swap: Option<reclaimlab_host::SwapRequest>,
    /// Record a tlb:tlb_flush histogram (by reason and pages) with tracefs (default: off).
    #[arg(long)]
    pub trace: bool,
    /// Do not trace sched:sched_switch: `placement.processes` then has no CPUs, switch-ins or
    /// switch-outs (default: traced in every run; its reader's CPU time is in
    /// `placement.sched_trace.reader_cpu_s`).
    #[arg(long)]
    pub no_placement_trace: bool,
    #[command(flatten)]
    pub out: OutputArgs,
    /// Continue an interrupted `bench --repeat N --out FILE` (same arguments): the
    /// repetitions journalled in FILE.partial are kept and only the rest are run.
    #[arg(long, requires = "out")]
    pub resume: bool,
}

#[derive(Args)]
pub struct CalibrateArgs {
    /// Write the profile to FILE.toml and the raw samples to FILE.calibrate.json beside it.
    #[arg(long, value_name = "FILE.toml")]
    pub out: Option<PathBuf>,
    /// Fewer samples over smaller sets: under a minute.
    #[arg(long)]
    pub quick: bool,
    /// Print the raw calibration (every sample, costs, checks) as JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Run only these benchmark families: parallel, fault, access, flush, shootdown, zram,
    /// readahead, writeback, blockio, reclaim, contention, cycle.
    #[arg(long, value_delimiter = ',', value_name = "FAMILY,...")]
    pub only: Option<Vec<String>>,
    /// The profile's name (default: the --out file's stem).
    #[arg(long)]
    pub name: Option<String>,
    /// Directory for the file benchmarks' data files (a disk filesystem, not tmpfs).
    #[arg(long, default_value = "/var/tmp", value_name = "DIR")]
    pub dir: PathBuf,
    /// Measure nothing: derive the costs and checks again from raw documents earlier runs
    /// wrote (FILE.calibrate.json), e.g. after the derivations changed; no root needed.
    /// Repeat it to combine runs (say, one family measured later): a benchmark in a later
    /// file replaces the same benchmark of an earlier one. With --out, the new profile
    /// keeps the combined samples beside it.
    #[arg(long, value_name = "FILE.calibrate.json", conflicts_with_all = ["quick", "only"])]
    pub from_raw: Vec<PathBuf>,
}

#[derive(Args)]
pub struct CompareArgs {
    /// Two result files, or one scenario with --before/--after.
    #[arg(num_args = 1..=2, required = true, value_name = "INPUT")]
    pub inputs: Vec<String>,
    /// Kernel policy simulated as "before", e.g. 6.18 (no default: with a scenario, both
    /// --before and --after; `reclaimlab policies` lists them).
    #[arg(long, value_name = "PRESET[+PATCH...]", requires = "after")]
    pub before: Option<String>,
    /// Kernel policy simulated as "after", e.g. 6.18+batch-dirty-flush (no default, as
    /// --before).
    #[arg(long, value_name = "PRESET[+PATCH...]", requires = "before")]
    pub after: Option<String>,
    /// Override a scenario key for both simulations (repeatable; default: the scenario's
    /// values, which `reclaimlab scenarios NAME` prints).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Override a scenario key for the "before" simulation only (repeatable; after --set),
    /// so that two machines, not only two kernels, can be compared, e.g.
    /// `--after-set machine.invlpgb=true`. The keys set this way may differ between the
    /// sides; they are named under the table (default: none).
    #[arg(long = "before-set", value_name = "KEY=VALUE", requires = "before")]
    pub before_sets: Vec<String>,
    /// Override a scenario key for the "after" simulation only (as --before-set; default:
    /// none).
    #[arg(long = "after-set", value_name = "KEY=VALUE", requires = "after")]
    pub after_sets: Vec<String>,
    /// Machine profile for the simulator's costs: a shipped NAME (see `reclaimlab profiles`)
    /// or a FILE.toml; sets machine.profile (and wins over the scenario's; default: the
    /// scenario's machine.profile, else the built-in costs).
    #[arg(long, value_name = "NAME|FILE")]
    pub profile: Option<String>,
    /// How to print the comparison (mail: the configuration, then plain-ASCII columns to
    /// quote in a cover letter).
    #[arg(long, value_enum, default_value_t = Format::Text, value_name = "FORMAT")]
    pub format: Format,
    /// Print the comparison as JSON: --format json.
    #[arg(long, conflicts_with_all = ["format", "markdown"])]
    pub json: bool,
    /// Print a Markdown table: --format markdown.
    #[arg(long, conflicts_with = "format")]
    pub markdown: bool,
    /// --format mail: name the rows by their /proc/vmstat keys, not readable names.
    #[arg(long)]
    pub raw_names: bool,
    /// Include every counter both results have (and, with --format mail, the wall-clock row).
    #[arg(long)]
    pub all: bool,
    /// Draw each metric's delta % as a bar; FILE.svg or FILE.png (format by extension;
    /// default: no plot).
    #[arg(long, value_name = "FILE.svg|FILE.png")]
    pub plot: Option<PathBuf>,
    /// Compare even when the two results differ in more than the kernel (scenario, a
    /// config key, throughput unit); the differences head the table. Results without a
    /// valid run or with impossible figures are refused regardless.
    #[arg(long)]
    pub allow_mismatch: bool,
    /// Simulations run at once (default: one per core; 1 runs them one after another).
    /// The results do not depend on it: each simulation is deterministic on its own.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
}

#[derive(Args)]
pub struct ValidateArgs {
    /// Scenario name or path to a .toml file (or --suite).
    #[arg(required_unless_present = "suite")]
    pub scenario: Option<String>,
    /// Override a scenario key (repeatable; with --suite, in every configuration, last).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Machine profile for the simulator's costs: a shipped NAME (see `reclaimlab profiles`)
    /// or a FILE.toml; sets machine.profile (and wins over the scenario's; default: the
    /// scenario's machine.profile, else the built-in costs).
    #[arg(long, value_name = "NAME|FILE")]
    pub profile: Option<String>,
    /// Run every configuration of a suite file instead, e.g. validation/default.toml.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["scenario"])]
    pub suite: Option<PathBuf>,
    /// Host repetitions.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub repeat: u64,
    /// Swap for the host runs: zram:SIZE or `file:SIZE[:DIR]` (see `bench --help`).
    #[arg(long, value_name = "zram:SIZE|file:SIZE")]
    pub swap: Option<reclaimlab_host::SwapRequest>,
    /// Use this host result instead of running the host backend. With --suite, FILE is a
    /// suite result (`validate --suite ... --out FILE`): each configuration's host runs are
    /// taken from it by name and only the simulator runs (no root needed).
    #[arg(long, value_name = "FILE")]
    pub host_result: Option<PathBuf>,
    /// Print a Markdown table (for docs/validation.md).
    #[arg(long)]
    pub markdown: bool,
    /// Give each simulation the foreign load its host runs had, from the median of the
    /// runs' `foreign` records: machine.background_load from the user tasks outside the
    /// run's memcg (how many ran, their CPU time, how often they ran, their sessions and
    /// nice) and machine.background_kthreads from the kernel threads (each CPU's share of
    /// time in them, their mean run, their nice: bound per-CPU threads without an mm), the
    /// RCU grace-period threads apart as machine.timer_kthreads (their wake-ups run in the
    /// timer softirq). A configuration that sets machine.background_load keeps it (bench ran that load on
    /// the host): its tasks (rl-load-N) are taken out of the record and the rest of the user
    /// tasks goes to machine.background_other, a second foreign load the simulator runs
    /// beside it. Printed with each table. Off by default: the simulated machine is quiet
    /// unless the scenario says otherwise.
    #[arg(long)]
    pub background_from_host: bool,
    /// anon-sweep: simulate each host run from where its threads started (which CPUs
    /// each process's main thread ran on before it cloned its sweepers, and where each
    /// sweeper was placed), read from the run's scheduler trace (placement.processes).
    /// On x86 those CPUs stay in the mm's cpumask, so a start-up race on the host decides
    /// how many CPUs each reclaim flush reaches; with this the model is compared run by
    /// run, its runs following the host's. Off by default: the model derives start-up.
    #[arg(long)]
    pub placement_from_host: bool,
    /// Simulate each configuration N times, with run.seed 1..=N, and compare the host's
    /// median with the simulations' median: where a start-up races a foreign load (its phase
    /// at the workload's start is drawn from the seed, as it is random on the host), both
    /// sides are then a distribution. Not with --placement-from-host or a --set run.seed.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=64))]
    pub sim_seeds: u64,
    /// Before the host runs, measure this session's flush, shootdown and reclaim cycle costs
    /// (calibrate's flush, shootdown and cycle families, ~45 s; the cycle needs perf) and give
    /// the simulator --profile's costs with those laid over them: a guest's IPI costs drift by
    /// a third between sessions, its per-page reclaim costs by a fifth. With --swap file:...,
    /// or a file workload, also the disk under the swap file or the data file (`workload.dir`;
    /// the blockio family, about 25 s): its request latency and transfer time, and its rate of
    /// random 4 KiB requests with its tags full (file_read_request, file_write_request, net of
    /// --profile's page costs; swap_read_request, swap_write_request, net of the measured
    /// swap transfer). Needs --out FILE; the profile is written beside it as
    /// FILE.session.toml (with its raw samples, FILE.session.calibrate.json) for later
    /// --host-result runs.
    #[arg(long, conflicts_with = "host_result")]
    pub calibrate: bool,
    #[command(flatten)]
    pub out: OutputArgs,
    /// With --suite and --out FILE: keep the configurations an interrupted run wrote to
    /// FILE (same suite, --repeat and --set) and run only the others.
    #[arg(long, requires = "suite")]
    pub resume: bool,
}

#[derive(Args)]
pub struct SweepArgs {
    /// Scenario name or path.
    pub scenario: String,
    /// A key to vary: KEY=V1,V2,... (required, repeatable; the grid is their product).
    #[arg(long = "vary", value_name = "KEY=V1,V2,...", required = true)]
    pub vary: Vec<Axis>,
    /// Kernel policy simulated as "before".
    #[arg(long, value_name = "PRESET[+PATCH...]", default_value = "6.18")]
    pub before: String,
    /// Kernel policy simulated as "after" (required; `reclaimlab policies` lists them).
    #[arg(long, value_name = "PRESET[+PATCH...]")]
    pub after: String,
    /// Override a scenario key at every grid point (repeatable; default: the scenario's
    /// values, which `reclaimlab scenarios NAME` prints).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Machine profile for the simulator's costs: a shipped NAME (see `reclaimlab profiles`)
    /// or a FILE.toml; sets machine.profile (and wins over the scenario's; default: the
    /// scenario's machine.profile, else the built-in costs).
    #[arg(long, value_name = "NAME|FILE")]
    pub profile: Option<String>,
    /// Draw each metric's delta % against the first varied key; FILE.svg or FILE.png
    /// (format by extension; default: no plot).
    #[arg(long, value_name = "FILE.svg|FILE.png")]
    pub plot: Option<PathBuf>,
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Also write the points (JSON) to FILE (default: none). Each simulation is journalled in FILE.partial
    /// as it finishes; an interrupted sweep keeps them and --resume continues it.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Continue the interrupted sweep whose journal is FILE.partial (same arguments).
    #[arg(long, requires = "out")]
    pub resume: bool,
    /// Simulations run at once (default: one per core; 1 runs them one after another).
    /// The results do not depend on it: each simulation is deterministic on its own.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
}

#[derive(Args)]
pub struct CheckArgs {
    /// Kernel policy PRESET[+PATCH...], e.g. 6.18+batch-dirty-flush.
    #[arg(long, default_value = "6.18", value_name = "PRESET[+PATCH...]")]
    pub policy: String,
    /// Architecture semantics: x86 (IPIs, mm_cpumask, lazy TLB) or arm64 (broadcast TLBI + DSB).
    #[arg(long, default_value = "x86")]
    pub arch: String,
    /// CPUs in all, 2..=4 (CPU 0 runs reclaim, the others user threads).
    #[arg(long)]
    pub cpus: Option<u8>,
    /// Base pages on the folio list, 1..=8.
    #[arg(long)]
    pub pages: Option<u8>,
    /// Pages of those in one shared file folio.
    #[arg(long)]
    pub file_pages: Option<u8>,
    /// Bound on schedule length (steps); default: explore until no new state appears.
    #[arg(long)]
    pub depth: Option<u32>,
    /// shrink_folio_list passes over the list.
    #[arg(long)]
    pub passes: Option<u8>,
    /// Also race user mprotect(PROT_READ) calls against reclaim (flush_tlb_batched_pending).
    #[arg(long)]
    pub mprotect: bool,
    /// x86 with AMD INVLPGB, as a kernel with the series (6.15+) uses it: reclaim's batched
    /// flush is one broadcast invalidation plus TLBSYNC, no IPIs (default: off).
    #[arg(long)]
    pub invlpgb: bool,
    /// Dirty file folios as 6.18 treats them: reclaim only tags them PG_reclaim and
    /// activates them; a flusher thread writes them (page_mkclean write-protects and cleans
    /// their PTEs with a TLB flush, PG_writeback until the device completes) and reclaim keeps
    /// a folio under writeback (default: off; reclaim writes dirty file folios itself).
    #[arg(long)]
    pub flusher: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct ProfilesArgs {
    /// A shipped profile name or a profile file to show in full.
    #[arg(value_name = "NAME|FILE")]
    pub name: Option<String>,
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct ScenariosArgs {
    /// Print this scenario's TOML.
    pub name: Option<String>,
}

impl Cmd {
    /// `--json` and `--markdown` are `--format json|markdown`: one setting per command, read
    /// by the code either way. Returns the format, which decides the table style.
    pub fn resolve_format(&mut self) -> Format {
        let (format, json, markdown) = match self {
            Cmd::Sim(SimArgs { out, .. }) | Cmd::Bench(BenchArgs { out, .. }) => {
                (&mut out.format, &mut out.json, None)
            }
            Cmd::Validate(ValidateArgs { out, markdown, .. }) => {
                (&mut out.format, &mut out.json, Some(markdown))
            }
            Cmd::Compare(CompareArgs {
                format,
                json,
                markdown,
                ..
            }) => (format, json, Some(markdown)),
            _ => return Format::Text,
        };
        if *json {
            *format = Format::Json;
        }
        if let Some(m) = markdown {
            if *m {
                *format = Format::Markdown;
            }
            *m = *format == Format::Markdown;
        }
        *json = *format == Format::Json;
        *format
    }
}

impl OutputArgs {
    /// `--out` must be writable before the run starts.
    pub fn check(&self) -> anyhow::Result<()> {
        match &self.out {
            Some(p) => crate::output::file::check_writable(p, "--out"),
            None => Ok(()),
        }
    }
}
