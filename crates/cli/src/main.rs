//! `reclaimlab`: measure (host), predict (sim) and compare TLB-flush batching in page reclaim.

mod calibrate;
/// `println!` that ends the process quietly when stdout is a closed pipe (`... | head`)
/// instead of panicking; by then every result is written and bench has cleaned up.
macro_rules! outln {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let mut o = std::io::stdout().lock();
        if let Err(e) = writeln!(o, $($t)*) {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                std::process::exit(0);
            }
            panic!("failed printing to stdout: {e}");
        }
    }};
}

mod journal;
mod mail;
mod output;
mod plot;
mod profiles;
mod render;
mod suite;
mod sweep;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use reclaimlab_core::{ResultDoc, Scenario, Target};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

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
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

/// Where the scenario keys are listed, under the options of the commands that take --set.
const KEYS_HELP: &str = "Scenario keys: `reclaimlab scenarios` lists the shipped scenarios; \
`reclaimlab scenarios NAME` prints one as TOML with every key it sets and its value, the default \
that --set overrides (`workers = 16` under `[workload]` is workload.workers). The README's \
\"Scenario keys\" describes every key. Sizes take K/M/G/T, durations ns/us/ms/s/m.";

#[derive(Args)]
struct ScenarioArgs {
    /// Scenario name (see `reclaimlab scenarios`) or path to a .toml file.
    scenario: String,
    /// Override a scenario key, e.g. --set workload.workers=2 --set memcg.limit=256M (repeatable;
    /// default: the scenario's values, which `reclaimlab scenarios NAME` prints).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
}

#[derive(Args)]
struct OutputArgs {
    /// How to print the table.
    #[arg(long, value_enum, default_value_t = render::Format::Text, value_name = "FORMAT")]
    format: render::Format,
    /// Print only the result JSON on stdout (no table, no progress bar): --format json.
    #[arg(long, conflicts_with = "format")]
    json: bool,
    /// --format mail: name the rows by their /proc/vmstat keys, not readable names.
    #[arg(long)]
    raw_names: bool,
    /// Also write the result JSON to FILE (default: none).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Show every non-zero counter, not just the headline ones.
    #[arg(long)]
    all: bool,
}

#[derive(Subcommand)]
enum Cmd {
    /// Simulate a scenario in the model of the kernel's reclaim path (no root needed).
    #[command(after_help = KEYS_HELP)]
    Sim {
        #[command(flatten)]
        scn: ScenarioArgs,
        /// Kernel preset to model (sets kernel.preset), e.g. 6.18 (default: the scenario's
        /// kernel.preset, else 6.18; `reclaimlab policies` lists them).
        #[arg(long, value_name = "PRESET")]
        kernel: Option<String>,
        /// Apply a policy (patch series) on top of the preset (repeatable; sets kernel.patches;
        /// default: the scenario's kernel.patches, else none).
        #[arg(long = "patch", value_name = "NAME")]
        patches: Vec<String>,
        /// Random seed (sets run.seed; default: the scenario's run.seed, else 1); the same
        /// scenario and seed give the same output, bit for bit.
        #[arg(long)]
        seed: Option<u64>,
        /// Machine profile for the simulator's costs: a shipped NAME (see `reclaimlab profiles`)
        /// or a FILE.toml; sets machine.profile (and wins over the scenario's; default: the
        /// scenario's machine.profile, else the built-in costs).
        #[arg(long, value_name = "NAME|FILE")]
        profile: Option<String>,
        #[command(flatten)]
        out: OutputArgs,
    },
    /// Run a scenario on the live kernel in a memcg (needs root); leaves nothing behind.
    #[command(after_help = KEYS_HELP)]
    Bench {
        #[command(flatten)]
        scn: ScenarioArgs,
        /// Repetitions (each in a fresh memcg); medians, min and max are reported.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1000))]
        repeat: u64,
        /// Set up swap for the run and take it down after: zram:SIZE (e.g. zram:4G; default:
        /// the swap that is on, and an anonymous scenario refuses to start without any).
        #[arg(long, value_name = "zram:SIZE")]
        swap: Option<reclaimlab_host::SwapRequest>,
        /// Record a tlb:tlb_flush histogram (by reason and pages) with tracefs (default: off).
        #[arg(long)]
        trace: bool,
        #[command(flatten)]
        out: OutputArgs,
        /// Continue an interrupted `bench --repeat N --out FILE` (same arguments): the
        /// repetitions journalled in FILE.partial are kept and only the rest are run.
        #[arg(long, requires = "out")]
        resume: bool,
    },
    /// Measure this machine's costs for the simulator on the live kernel (needs root): faults,
    /// page clearing, local flushes, the shootdown round trip, zram, readahead, reclaim, and the
    /// swap-in/reclaim cycle profiled with perf (the reclaim path's costs per page; needs perf).
    /// Writes a machine profile (--out FILE.toml) with every sample beside it
    /// (FILE.calibrate.json); leaves nothing behind. About 1 min, --quick about 20 s.
    Calibrate {
        /// Write the profile to FILE.toml and the raw samples to FILE.calibrate.json beside it.
        #[arg(long, value_name = "FILE.toml")]
        out: Option<PathBuf>,
        /// Fewer samples over smaller sets: under a minute.
        #[arg(long)]
        quick: bool,
        /// Print the raw calibration (every sample, costs, checks) as JSON instead of tables.
        #[arg(long)]
        json: bool,
        /// Run only these benchmark families: parallel, fault, access, flush, shootdown, zram,
        /// readahead, reclaim, contention, cycle.
        #[arg(long, value_delimiter = ',', value_name = "FAMILY,...")]
        only: Option<Vec<String>>,
        /// The profile's name (default: the --out file's stem).
        #[arg(long)]
        name: Option<String>,
        /// Directory for the file benchmarks' data files (a disk filesystem, not tmpfs).
        #[arg(long, default_value = "/var/tmp", value_name = "DIR")]
        dir: PathBuf,
        /// Measure nothing: derive the costs and checks again from raw documents earlier runs
        /// wrote (FILE.calibrate.json), e.g. after the derivations changed; no root needed.
        /// Repeat it to combine runs (say, one family measured later): a benchmark in a later
        /// file replaces the same benchmark of an earlier one. With --out, the new profile
        /// keeps the combined samples beside it.
        #[arg(long, value_name = "FILE.calibrate.json", conflicts_with_all = ["quick", "only"])]
        from_raw: Vec<PathBuf>,
    },
    /// Before/After/Delta table: of two result files (host or sim, in any mix), or of two
    /// simulations of one scenario: `compare SCENARIO --before 6.18 --after 6.18+batch-dirty-flush`;
    /// --plot also draws the deltas (SVG or PNG).
    #[command(
        override_usage = "reclaimlab compare BEFORE.json AFTER.json [OPTIONS]\n       \
                                reclaimlab compare SCENARIO --before PRESET[+PATCH...] --after PRESET[+PATCH...] [--set KEY=VALUE]... [--before-set KEY=VALUE]... [--after-set KEY=VALUE]... [OPTIONS]",
        after_help = KEYS_HELP
    )]
    Compare {
        /// Two result files, or one scenario with --before/--after.
        #[arg(num_args = 1..=2, required = true, value_name = "INPUT")]
        inputs: Vec<String>,
        /// Kernel policy simulated as "before", e.g. 6.18 (no default: with a scenario, both
        /// --before and --after; `reclaimlab policies` lists them).
        #[arg(long, value_name = "PRESET[+PATCH...]", requires = "after")]
        before: Option<String>,
        /// Kernel policy simulated as "after", e.g. 6.18+batch-dirty-flush (no default, as
        /// --before).
        #[arg(long, value_name = "PRESET[+PATCH...]", requires = "before")]
        after: Option<String>,
        /// Override a scenario key for both simulations (repeatable; default: the scenario's
        /// values, which `reclaimlab scenarios NAME` prints).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// Override a scenario key for the "before" simulation only (repeatable; after --set),
        /// so that two machines, not only two kernels, can be compared, e.g.
        /// `--after-set machine.invlpgb=true`. The keys set this way may differ between the
        /// sides; they are named under the table (default: none).
        #[arg(long = "before-set", value_name = "KEY=VALUE", requires = "before")]
        before_sets: Vec<String>,
        /// Override a scenario key for the "after" simulation only (as --before-set; default:
        /// none).
        #[arg(long = "after-set", value_name = "KEY=VALUE", requires = "after")]
        after_sets: Vec<String>,
        /// Machine profile for the simulator's costs: a shipped NAME (see `reclaimlab profiles`)
        /// or a FILE.toml; sets machine.profile (and wins over the scenario's; default: the
        /// scenario's machine.profile, else the built-in costs).
        #[arg(long, value_name = "NAME|FILE")]
        profile: Option<String>,
        /// How to print the comparison (mail: the configuration, then plain-ASCII columns to
        /// quote in a cover letter).
        #[arg(long, value_enum, default_value_t = render::Format::Text, value_name = "FORMAT")]
        format: render::Format,
        /// Print the comparison as JSON: --format json.
        #[arg(long, conflicts_with_all = ["format", "markdown"])]
        json: bool,
        /// Print a Markdown table: --format markdown.
        #[arg(long, conflicts_with = "format")]
        markdown: bool,
        /// --format mail: name the rows by their /proc/vmstat keys, not readable names.
        #[arg(long)]
        raw_names: bool,
        /// Include every counter both results have (and, with --format mail, the wall-clock row).
        #[arg(long)]
        all: bool,
        /// Draw each metric's delta % as a bar; FILE.svg or FILE.png (format by extension;
        /// default: no plot).
        #[arg(long, value_name = "FILE.svg|FILE.png")]
        plot: Option<PathBuf>,
        /// Compare even when the two results differ in more than the kernel (scenario, a
        /// config key, throughput unit); the differences head the table. Results without a
        /// valid run or with impossible figures are refused regardless.
        #[arg(long)]
        allow_mismatch: bool,
        /// Simulations run at once (default: one per core; 1 runs them one after another).
        /// The results do not depend on it: each simulation is deterministic on its own.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
        jobs: Option<u16>,
    },
    /// Run a scenario on the host and in the simulator (as this machine) and print the
    /// per-stolen-page ratios side by side with the sim's relative error (host part needs root).
    Validate {
        /// Scenario name or path to a .toml file (or --suite).
        #[arg(required_unless_present = "suite")]
        scenario: Option<String>,
        /// Override a scenario key (repeatable; with --suite, in every configuration, last).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// Machine profile for the simulator's costs: a shipped NAME (see `reclaimlab profiles`)
        /// or a FILE.toml; sets machine.profile (and wins over the scenario's; default: the
        /// scenario's machine.profile, else the built-in costs).
        #[arg(long, value_name = "NAME|FILE")]
        profile: Option<String>,
        /// Run every configuration of a suite file instead, e.g. validation/default.toml.
        #[arg(long, value_name = "FILE", conflicts_with_all = ["scenario"])]
        suite: Option<PathBuf>,
        /// Host repetitions.
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=1000))]
        repeat: u64,
        /// Swap for the host runs: zram:SIZE.
        #[arg(long, value_name = "zram:SIZE")]
        swap: Option<reclaimlab_host::SwapRequest>,
        /// Use this host result instead of running the host backend. With --suite, FILE is a
        /// suite result (`validate --suite ... --out FILE`): each configuration's host runs are
        /// taken from it by name and only the simulator runs (no root needed).
        #[arg(long, value_name = "FILE")]
        host_result: Option<PathBuf>,
        /// Print a Markdown table (for docs/validation.md).
        #[arg(long)]
        markdown: bool,
        /// Give each simulation the foreign load its host runs had: machine.background_load
        /// from the median of the runs' `foreign` records (the user tasks outside the run's
        /// memcg: how many ran, their CPU time, how often they ran, their sessions and nice;
        /// kernel threads are left out, they do not switch mm). Printed with each table. Off by
        /// default: the simulated machine is quiet unless the scenario says otherwise.
        #[arg(long)]
        background_from_host: bool,
        /// anon-sweep: simulate each host run from where its threads started (which CPUs
        /// each process's main thread ran on before it cloned its sweepers, and where each
        /// sweeper was placed), read from the run's scheduler trace (placement.processes).
        /// On x86 those CPUs stay in the mm's cpumask, so a start-up race on the host decides
        /// how many CPUs each reclaim flush reaches; with this the model is compared run by
        /// run, its runs following the host's. Off by default: the model derives start-up.
        #[arg(long)]
        placement_from_host: bool,
        /// Before the host runs, measure this session's flush and shootdown costs (calibrate's
        /// flush and shootdown families, ~15 s) and give the simulator --profile's costs with
        /// those laid over them: a guest's IPI costs drift by a third between sessions. Needs
        /// --out FILE; the profile is written beside it as FILE.session.toml (with its raw
        /// samples, FILE.session.calibrate.json) for later --host-result runs.
        #[arg(long, conflicts_with = "host_result")]
        calibrate: bool,
        #[command(flatten)]
        out: OutputArgs,
        /// With --suite and --out FILE: keep the configurations an interrupted run wrote to
        /// FILE (same suite, --repeat and --set) and run only the others.
        #[arg(long, requires = "suite")]
        resume: bool,
    },
    /// Simulate a grid of scenario variations under two policies (in parallel: --jobs) and
    /// print each metric's Before/After delta per grid point; --plot draws them (SVG or PNG).
    #[command(after_help = KEYS_HELP)]
    Sweep {
        /// Scenario name or path.
        scenario: String,
        /// A key to vary: KEY=V1,V2,... (required, repeatable; the grid is their product).
        #[arg(long = "vary", value_name = "KEY=V1,V2,...", required = true)]
        vary: Vec<sweep::Axis>,
        /// Kernel policy simulated as "before".
        #[arg(long, value_name = "PRESET[+PATCH...]", default_value = "6.18")]
        before: String,
        /// Kernel policy simulated as "after" (required; `reclaimlab policies` lists them).
        #[arg(long, value_name = "PRESET[+PATCH...]")]
        after: String,
        /// Override a scenario key at every grid point (repeatable; default: the scenario's
        /// values, which `reclaimlab scenarios NAME` prints).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// Machine profile for the simulator's costs: a shipped NAME (see `reclaimlab profiles`)
        /// or a FILE.toml; sets machine.profile (and wins over the scenario's; default: the
        /// scenario's machine.profile, else the built-in costs).
        #[arg(long, value_name = "NAME|FILE")]
        profile: Option<String>,
        /// Draw each metric's delta % against the first varied key; FILE.svg or FILE.png
        /// (format by extension; default: no plot).
        #[arg(long, value_name = "FILE.svg|FILE.png")]
        plot: Option<PathBuf>,
        /// Print JSON instead of the table.
        #[arg(long)]
        json: bool,
        /// Also write the points (JSON) to FILE (default: none). Each simulation is journalled in FILE.partial
        /// as it finishes; an interrupted sweep keeps them and --resume continues it.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Continue the interrupted sweep whose journal is FILE.partial (same arguments).
        #[arg(long, requires = "out")]
        resume: bool,
        /// Simulations run at once (default: one per core; 1 runs them one after another).
        /// The results do not depend on it: each simulation is deterministic on its own.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
        jobs: Option<u16>,
    },
    /// Search every interleaving of user stores, context switches and reclaim's steps on a tiny
    /// machine for a store through a stale TLB entry (lost write or use-after-free write).
    /// Exits 0 when none is found within scope, 1 with the shortest counterexample.
    Check {
        /// Kernel policy PRESET[+PATCH...], e.g. 6.18+batch-dirty-flush.
        #[arg(long, default_value = "6.18", value_name = "PRESET[+PATCH...]")]
        policy: String,
        /// Architecture semantics: x86 (IPIs, mm_cpumask, lazy TLB) or arm64 (broadcast TLBI + DSB).
        #[arg(long, default_value = "x86")]
        arch: String,
        /// CPUs in all, 2..=4 (CPU 0 runs reclaim, the others user threads).
        #[arg(long)]
        cpus: Option<u8>,
        /// Base pages on the folio list, 1..=8.
        #[arg(long)]
        pages: Option<u8>,
        /// Pages of those in one shared file folio.
        #[arg(long)]
        file_pages: Option<u8>,
        /// Bound on schedule length (steps); default: explore until no new state appears.
        #[arg(long)]
        depth: Option<u32>,
        /// shrink_folio_list passes over the list.
        #[arg(long)]
        passes: Option<u8>,
        /// Also race user mprotect(PROT_READ) calls against reclaim (flush_tlb_batched_pending).
        #[arg(long)]
        mprotect: bool,
        /// x86 with AMD INVLPGB, as a kernel with the series (6.15+) uses it: reclaim's batched
        /// flush is one broadcast invalidation plus TLBSYNC, no IPIs (default: off).
        #[arg(long)]
        invlpgb: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List kernel presets and policies (the seed series), one line each.
    Policies,
    /// List the shipped machine profiles (CPU, arch, kernel, how many costs are measured,
    /// published or estimated), or show one profile's every cost with its provenance and source.
    Profiles {
        /// A shipped profile name or a profile file to show in full.
        #[arg(value_name = "NAME|FILE")]
        name: Option<String>,
        /// Print JSON instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// List the shipped scenarios, or print one.
    Scenarios {
        /// Print this scenario's TOML.
        name: Option<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            // A last guard against echoing huge inputs: no line longer than a few hundred
            // characters (the messages themselves quote at most 100 of any input).
            let msg = format!("{e:#}");
            let lines: Vec<String> = msg
                .lines()
                .map(|l| {
                    if l.chars().count() > 400 {
                        let head: String = l.chars().take(400).collect();
                        format!("{head}... (line cut)")
                    } else {
                        l.to_string()
                    }
                })
                .collect();
            eprintln!("reclaimlab: {}", lines.join("\n"));
            ExitCode::from(2)
        }
    }
}

/// `--json` and `--markdown` are `--format json|markdown`: one setting per command, read by
/// the code either way; the table style follows from it.
fn resolve_format(cmd: &mut Cmd) {
    let (format, json, markdown) = match cmd {
        Cmd::Sim { out, .. } | Cmd::Bench { out, .. } => (&mut out.format, &mut out.json, None),
        Cmd::Validate { out, markdown, .. } => (&mut out.format, &mut out.json, Some(markdown)),
        Cmd::Compare {
            format,
            json,
            markdown,
            ..
        } => (format, json, Some(markdown)),
        _ => return render::set_style(render::Format::Text),
    };
    if *json {
        *format = render::Format::Json;
    }
    if let Some(m) = markdown {
        if *m {
            *format = render::Format::Markdown;
        }
        *m = *format == render::Format::Markdown;
    }
    *json = *format == render::Format::Json;
    render::set_style(*format);
}

fn run(mut cli: Cli) -> Result<ExitCode> {
    resolve_format(&mut cli.cmd);
    match cli.cmd {
        Cmd::Sim {
            mut scn,
            kernel,
            patches,
            seed,
            profile,
            out,
        } => {
            push_profile(&mut scn.sets, profile);
            if let Some(k) = kernel {
                scn.sets.push(format!("kernel.preset={k:?}"));
            }
            if !patches.is_empty() {
                let list: Vec<String> = patches.iter().map(|p| format!("{p:?}")).collect();
                scn.sets
                    .push(format!("kernel.patches=[{}]", list.join(",")));
            }
            if let Some(s) = seed {
                scn.sets.push(format!("run.seed={s}"));
            }
            out.check()?;
            let scenario = Scenario::load(&scn.scenario, &scn.sets, Target::Sim)?;
            reclaimlab_host::workload::HostConfig::check_section(&scenario)?;
            let bar = fraction_bar(out.json);
            let cb = |done: u64, total: u64| {
                if let Some(b) = &bar {
                    // The bar moves by simulated milliseconds; the text says seconds.
                    b.set_length(total / 1_000_000);
                    b.set_position(done / 1_000_000);
                    b.set_message(sim_progress_text(done, total));
                }
            };
            // SimOptions grows fields the CLI leaves at their defaults.
            #[allow(clippy::needless_update)]
            let opts = reclaimlab_sim::SimOptions {
                progress: Some(&cb),
                ..Default::default()
            };
            let doc = finish_scenario(&scenario, reclaimlab_sim::run(&scenario, &opts))?;
            if let Some(b) = bar {
                b.finish_and_clear();
            }
            emit(&doc, &out)?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Bench {
            scn,
            repeat,
            swap,
            trace,
            out,
            resume,
        } => {
            out.check()?;
            // With --out, each finished repetition is journalled (FILE.partial) at once.
            let (jn, done) = match &out.out {
                Some(p) => {
                    let header = serde_json::json!({
                        "bench": scn.scenario,
                        "sets": scn.sets,
                        "repeat": repeat,
                        "swap": swap.as_ref().map(|s| format!("{s:?}")),
                        "trace": trace,
                    });
                    let (j, d) =
                        journal::Journal::open::<reclaimlab_core::RunResult>(p, &header, resume)?;
                    (Some(j), d)
                }
                None => (None, Default::default()),
            };
            let prior: Vec<reclaimlab_core::RunResult> = done.into_values().collect();
            if !prior.is_empty() {
                eprintln!(
                    "reclaimlab: resuming: {} of {repeat} repetitions already done",
                    prior.len()
                );
            }
            let record = |i: usize, r: &reclaimlab_core::RunResult| match &jn {
                Some(j) => j.record(&format!("run/{i:04}"), r),
                None => Ok(()),
            };
            let (cpus, memory_bytes) = reclaimlab_host::machine_limits();
            let scenario = match Scenario::load(
                &scn.scenario,
                &scn.sets,
                Target::Host { cpus, memory_bytes },
            ) {
                Err(e) if jn.is_some() => {
                    return jn.expect("journal").fail(Err(e.into()));
                }
                r => r?,
            };
            let bar = fraction_bar(out.json);
            let cb = |i: usize, n: usize, frac: f64| show_repetition(&bar, i, n, frac);
            let opts = reclaimlab_host::BenchOptions {
                repeat: repeat as usize,
                swap,
                trace,
                progress: Some(&cb),
                prior,
                on_run: Some(&record),
            };
            let res = finish_scenario(&scenario, reclaimlab_host::bench(&scenario, &opts));
            let doc = match (res, &jn) {
                (Err(e), Some(_)) => return jn.expect("journal").fail(Err(e)),
                (r, _) => r?,
            };
            if let Some(b) = bar {
                b.finish_and_clear();
            }
            emit(&doc, &out)?;
            if let Some(j) = jn {
                j.finish()?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Calibrate {
            out,
            quick,
            json,
            only,
            name,
            dir,
            from_raw,
        } => {
            calibrate::run(calibrate::Args {
                out,
                quick,
                json,
                only,
                name,
                dir,
                from_raw,
                command: format!(
                    "reclaimlab {}",
                    std::env::args().skip(1).collect::<Vec<_>>().join(" ")
                ),
            })?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Compare {
            inputs,
            before,
            after,
            mut sets,
            before_sets,
            after_sets,
            profile,
            format,
            all,
            raw_names,
            plot,
            allow_mismatch,
            jobs,
            ..
        } => {
            if profile.is_some() && before.is_none() {
                bail!("--profile applies to simulations: give one scenario with --before and --after, not result files");
            }
            push_profile(&mut sets, profile);
            if let Some(p) = &plot {
                plot::Format::of(p)?;
                output::check_writable(p, "--plot")?;
            }
            let (b, a) = match (inputs.as_slice(), before, after) {
                ([b, a], None, None) if sets.is_empty() => {
                    (read_doc(b.as_ref())?, read_doc(a.as_ref())?)
                }
                ([scn], Some(before), Some(after)) => {
                    // Reject a bad spec before spending time on the other simulation.
                    for spec in [&before, &after] {
                        reclaimlab_core::policy::KernelPolicy::parse(spec)
                            .map_err(anyhow::Error::msg)?;
                    }
                    {
                        // Both simulations at once: each is deterministic on its own.
                        let bar = progress_bar(format == render::Format::Json, "simulations done");
                        if let Some(b) = &bar {
                            b.set_length(2);
                            b.enable_steady_tick(std::time::Duration::from_millis(200));
                        }
                        let side = |spec: &str, own: &[String]| {
                            let sets = [sets.as_slice(), own].concat();
                            let r = simulate_policy(scn, &sets, spec);
                            if let Some(b) = &bar {
                                b.inc(1);
                            }
                            r
                        };
                        let (b, a) = with_jobs(jobs, || {
                            rayon::join(
                                || side(&before, &before_sets),
                                || side(&after, &after_sets),
                            )
                        })?;
                        if let Some(b) = bar {
                            b.finish_and_clear();
                        }
                        (b?, a?)
                    }
                }
                _ => bail!(
                    "compare takes two result files, or one scenario with --before and --after \
                     (--set only with a scenario)"
                ),
            };
            let side_sets: Vec<String> = before_sets.iter().chain(&after_sets).cloned().collect();
            let c =
                reclaimlab_core::mismatch::checked_compare(&b, &a, all, allow_mismatch, &side_sets)
                    .map_err(anyhow::Error::msg)?;
            if let Some(p) = &plot {
                let title = format!("{}: {} vs {}", b.scenario, doc_policy(&b), doc_policy(&a));
                plot::compare_plot(&c, &title, p)?;
            }
            match format {
                render::Format::Json => outln!("{}", serde_json::to_string_pretty(&c)?),
                render::Format::Markdown => print!("{}", c.markdown()),
                render::Format::Mail => {
                    let o = mail::MailOpts { all, raw_names };
                    outln!("{}", mail::compare_mail(&c, &b, &a, o).trim_end());
                }
                render::Format::Text => outln!("{}", render::compare_table(&c)),
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Validate {
            scenario,
            mut sets,
            profile,
            suite,
            repeat,
            swap,
            host_result,
            markdown,
            background_from_host,
            placement_from_host,
            calibrate: session,
            out,
            resume,
        } => {
            let profile = if session {
                let Some(o) = out.out.as_deref() else {
                    bail!("--calibrate writes the session's profile beside --out FILE: give --out");
                };
                Some(calibrate::session_profile(profile.as_deref(), o)?)
            } else {
                profile
            };
            push_profile(&mut sets, profile);
            let from_host = suite::FromHost {
                background: background_from_host,
                placement: placement_from_host,
            };
            match (out.check().map(|_| suite), scenario) {
                (Err(e), _) => Err(e),
                (Ok(suite), scenario) => match (suite, scenario) {
                    (Some(f), _) => suite::run_suite(
                        &f,
                        &sets,
                        suite::SuiteRun {
                            repeat,
                            swap,
                            host_from: host_result.as_deref(),
                            markdown,
                            json: out.json,
                            out_resume: out.out.as_deref().map(|p| (p, resume)),
                            from_host,
                        },
                    ),
                    (None, scenario) => validate(
                        ScenarioArgs {
                            scenario: scenario.unwrap_or_default(),
                            sets,
                        },
                        repeat,
                        swap,
                        host_result,
                        markdown,
                        from_host,
                        out,
                    ),
                },
            }
        }
        Cmd::Sweep {
            scenario,
            vary,
            before,
            after,
            mut sets,
            profile,
            plot,
            json,
            out,
            resume,
            jobs,
        } => {
            push_profile(&mut sets, profile);
            if let Some(p) = &plot {
                plot::Format::of(p)?;
                output::check_writable(p, "--plot")?;
            }
            for spec in [&before, &after] {
                reclaimlab_core::policy::KernelPolicy::parse(spec).map_err(anyhow::Error::msg)?;
            }
            let (jn, done) = match &out {
                Some(p) => {
                    output::check_writable(p, "--out")?;
                    let header = serde_json::json!({
                        "sweep": scenario,
                        "vary": vary.iter().map(|a| (&a.key, &a.values)).collect::<Vec<_>>(),
                        "before": before,
                        "after": after,
                        "sets": sets,
                    });
                    let (j, d) = journal::Journal::open(p, &header, resume)?;
                    (Some(j), d)
                }
                None => (None, Default::default()),
            };
            let bar = progress_bar(json, "points done");
            if let Some(b) = &bar {
                b.enable_steady_tick(std::time::Duration::from_millis(200));
            }
            let show = |done: usize, n: usize| {
                if let Some(b) = &bar {
                    b.set_length(n as u64);
                    b.set_position(done as u64);
                }
            };
            let points = match with_jobs(jobs, || {
                sweep::run_kept(
                    &vary,
                    &before,
                    &after,
                    |extra, pol| {
                        let mut all = sets.clone();
                        all.extend_from_slice(extra);
                        simulate_policy(&scenario, &all, pol)
                    },
                    jn.as_ref(),
                    done,
                    &show,
                )
            })? {
                Err(e) if jn.is_some() => return jn.expect("journal").fail(Err(e)),
                r => r?,
            };
            if let Some(b) = bar {
                b.finish_and_clear();
            }
            if let (Some(p), Some(j)) = (&out, jn) {
                output::write_atomic(p, serde_json::to_string_pretty(&points)?.as_bytes())?;
                j.finish()?;
            }
            if let Some(p) = &plot {
                plot::sweep_plot(&points, &format!("{after} vs {before}"), p)?;
            }
            if json {
                outln!("{}", serde_json::to_string_pretty(&points)?);
            } else {
                outln!("{}", render::sweep_table(&points));
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Check {
            policy,
            arch,
            cpus,
            pages,
            file_pages,
            depth,
            passes,
            mprotect,
            invlpgb,
            json,
        } => {
            use reclaimlab_check::{check, Arch, CheckConfig};
            let mut cfg = CheckConfig::new(&policy).map_err(anyhow::Error::msg)?;
            cfg.arch = Arch::parse(&arch).map_err(anyhow::Error::msg)?;
            if let Some(n) = cpus {
                cfg.cpus = n;
            }
            if let Some(n) = pages {
                cfg.pages = n;
            }
            if file_pages.is_some() {
                cfg.file_pages = file_pages;
            }
            if let Some(n) = passes {
                cfg.passes = n;
            }
            cfg.depth = depth;
            cfg.mprotect = mprotect;
            cfg.invlpgb = invlpgb;
            let report = check(&cfg).map_err(anyhow::Error::msg)?;
            if json {
                outln!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{report}");
            }
            Ok(if report.passed() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Cmd::Policies => {
            outln!("{}", reclaimlab_core::policy::listing().trim_end());
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Profiles { name, json } => {
            profiles::run(name.as_deref(), json)?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Scenarios { name } => {
            match name {
                Some(n) => {
                    let (_, text) = reclaimlab_core::scenario::locate(&n)?;
                    print!("{text}");
                }
                None => {
                    for (n, text) in reclaimlab_core::scenario::BUILTIN {
                        let desc = text
                            .lines()
                            .find_map(|l| l.strip_prefix("description = "))
                            .unwrap_or("")
                            .trim_matches('"');
                        outln!("{n:<17} {desc}");
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `--profile X` is `--set machine.profile=X`, given last so that it wins.
fn push_profile(sets: &mut Vec<String>, profile: Option<String>) {
    if let Some(p) = profile {
        sets.push(format!("machine.profile={p:?}"));
    }
}

/// What a result ran: its policy spec (sim), else its kernel release (host), with the backend.
fn doc_policy(d: &ResultDoc) -> String {
    let what = if d.policy.is_empty() {
        &d.kernel
    } else {
        &d.policy
    };
    format!("{} {what}", d.backend)
}

/// Simulate `scenario` under the kernel policy `spec` (PRESET[+PATCH...]).
fn simulate_policy(scenario: &str, sets: &[String], spec: &str) -> Result<ResultDoc> {
    let k = reclaimlab_core::policy::KernelPolicy::parse(spec).map_err(anyhow::Error::msg)?;
    let mut sets = sets.to_vec();
    sets.extend(k.scenario_sets());
    let s = Scenario::load(scenario, &sets, Target::Sim)?;
    reclaimlab_host::workload::HostConfig::check_section(&s)?;
    finish_scenario(&s, reclaimlab_sim::run(&s, &Default::default()))
}

/// Host vs sim for one scenario: the sim models this machine (its CPU count and RAM).
fn validate(
    scn: ScenarioArgs,
    repeat: u64,
    swap: Option<reclaimlab_host::SwapRequest>,
    host_result: Option<PathBuf>,
    markdown: bool,
    from: suite::FromHost,
    out: OutputArgs,
) -> Result<ExitCode> {
    let suite::HostAndSim {
        host,
        sim,
        background,
        placements,
    } = suite::host_and_sim(
        &scn.scenario,
        &scn.sets,
        repeat,
        swap,
        host_result.as_deref().map(read_doc).transpose()?,
        out.json,
        from,
    )?;
    let rows = reclaimlab_core::validate::ratio_table(&host, &sim);
    if let Some(p) = &out.out {
        let v = serde_json::json!({"host": host, "sim": sim, "rows": rows,
            "background_from_host": background, "placement_from_host": placements});
        output::write_atomic(p, serde_json::to_string_pretty(&v)?.as_bytes())?;
    }
    if out.json {
        outln!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        if let Some(p) = &placements {
            outln!(
                "start placement from host (MAIN_CPUS:SWEEPER_CPUS per process): {}",
                suite::placement_cell(p)
            );
            for l in suite::per_run_lines(&host, &sim, p) {
                outln!("  {l}");
            }
        }
        if from.background {
            outln!(
                "{}",
                background.as_ref().map_or(
                    "background load from host: no foreign user task ran (a quiet model)".into(),
                    |b| b.summary()
                )
            );
        }
        outln!("{}", render::validate_table(&rows, markdown));
    }
    Ok(ExitCode::SUCCESS)
}

/// The backend has read its own section; now every key must have been used.
fn finish_scenario(scn: &Scenario, res: Result<ResultDoc>) -> Result<ResultDoc> {
    scn.finish()?;
    res
}

/// Bench's progress callback: repetition `i` of `n`, `frac` of the way through.
fn show_repetition(bar: &Option<ProgressBar>, i: usize, n: usize, frac: f64) {
    if let Some(b) = bar {
        // The bar moves by thousandths of a repetition; the text counts repetitions.
        b.set_style(fraction_style());
        b.set_length(n as u64 * 1000);
        b.set_position(i as u64 * 1000 + (frac.clamp(0.0, 1.0) * 1000.0) as u64);
        b.set_message(repetition_text(i, n, frac));
    }
}

/// `sim`'s progress: simulated seconds done of the run's (the callback gives nanoseconds).
fn sim_progress_text(done_ns: u64, total_ns: u64) -> String {
    let s = |ns: u64| ns as f64 / 1e9;
    format!("{:.1}/{:.1} simulated s", s(done_ns), s(total_ns))
}

/// `bench`'s progress: which repetition, and how far into it.
fn repetition_text(i: usize, n: usize, frac: f64) -> String {
    format!(
        "repetition {} of {n}, {:.0}%",
        (i + 1).min(n),
        frac.clamp(0.0, 1.0) * 100.0
    )
}

/// A bar over whole things (`{pos}/{len} UNIT`), on stderr when it is a terminal and not
/// with --json.
/// Run `f` on a pool of `jobs` threads (`--jobs`; None: rayon's global pool, one per core).
fn with_jobs<R: Send>(jobs: Option<u16>, f: impl FnOnce() -> R + Send) -> Result<R> {
    match jobs {
        None => Ok(f()),
        Some(n) => {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(n.into())
                .build()?;
            Ok(pool.install(f))
        }
    }
}

fn progress_bar(json: bool, unit: &str) -> Option<ProgressBar> {
    if json || !std::io::stderr().is_terminal() {
        return None;
    }
    let b = ProgressBar::new(1);
    b.set_style(
        ProgressStyle::with_template(&format!(
            "{{spinner}} [{{bar:40}}] {{pos}}/{{len}} {unit} {{msg}} (eta {{eta}})"
        ))
        .expect("valid template")
        .progress_chars("=> "),
    );
    Some(b)
}

/// The style of a bar whose position is in units finer than those its message counts.
fn fraction_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} [{bar:40}] {msg} (eta {eta})")
        .expect("valid template")
        .progress_chars("=> ")
}

fn fraction_bar(json: bool) -> Option<ProgressBar> {
    let b = progress_bar(json, "")?;
    b.set_style(fraction_style());
    Some(b)
}

fn read_doc(p: &std::path::Path) -> Result<ResultDoc> {
    let text =
        std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?;
    ResultDoc::from_json(&text)
        .with_context(|| format!("{} is not a reclaimlab result", p.display()))
}

impl OutputArgs {
    /// `--out` must be writable before the run starts.
    fn check(&self) -> Result<()> {
        match &self.out {
            Some(p) => output::check_writable(p, "--out"),
            None => Ok(()),
        }
    }
}

fn emit(doc: &ResultDoc, out: &OutputArgs) -> Result<()> {
    let json = serde_json::to_string_pretty(doc)?;
    if let Some(p) = &out.out {
        output::write_atomic(p, format!("{json}\n").as_bytes())?;
    }
    match out.format {
        render::Format::Json => outln!("{json}"),
        render::Format::Markdown => print!("{}", render::result_markdown(doc, out.all)),
        render::Format::Mail => {
            let o = mail::MailOpts {
                all: out.all,
                raw_names: out.raw_names,
            };
            let keys = render::result_keys(doc, out.all);
            outln!("{}", mail::result_mail(doc, &keys, o).trim_end());
        }
        render::Format::Text => outln!("{}", render::result_table(doc, out.all)),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_is_in_the_units_it_names() {
        // The simulator reports nanoseconds; a 60 s run near its end.
        assert_eq!(
            sim_progress_text(59_944_000_000, 60_000_000_000),
            "59.9/60.0 simulated s"
        );
        assert_eq!(sim_progress_text(0, 1_000_000_000), "0.0/1.0 simulated s");
        assert_eq!(repetition_text(1, 3, 0.45), "repetition 2 of 3, 45%");
        assert_eq!(repetition_text(3, 3, 1.0), "repetition 3 of 3, 100%");
    }
}
