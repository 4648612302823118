//! The live-kernel backend (`reclaimlab bench`): runs a scenario in a memcg on the running
//! kernel, samples its counters, and undoes every change it made on every exit path.
//!
//! One job per module: [`cgroup`] (memcg v1/v2), [`swap`] (zram), [`counters`]
//! (/proc/interrupts, /proc/vmstat, memory.stat), [`foreign`] (the tasks outside the run's
//! memcg during its window), [`background`] (the scenario's own foreign load, started for
//! each run), [`trace`] (tracefs instances; tlb:tlb_flush), [`sched_trace`]
//! (the CPUs each workload task ran on; [`ring_page`] decodes its binary trace), [`stress`]
//! (stress-ng), [`workers`] (the project's file workloads), [`workload`] (the trait they
//! implement), [`proc`] (processes we start), [`cleanup`] (undo on every exit path),
//! [`leftovers`] (what a SIGKILLed bench left),
//! [`bench`](mod@bench) (the repetitions), and [`calibrate`] (this machine's costs for the
//! simulator, measured).

pub mod background;
pub mod bench;
pub mod calibrate;
pub mod cgroup;
pub mod cleanup;
pub mod counters;
pub mod foreign;
pub mod leftovers;
pub mod placement;
pub mod proc;
pub mod ring_page;
pub mod sched_trace;
pub mod state;
pub mod stress;
pub mod swap;
pub mod trace;
pub mod workers;
pub mod workload;

use reclaimlab_core::{ResultDoc, Scenario};

/// `--swap zram:SIZE` or `--swap file:SIZE[:DIR]`: set up a swap device for the run and take it
/// down after. A zram device swaps synchronously in RAM (SWP_SYNCHRONOUS_IO); a swap file on a
/// disk filesystem is a block device: asynchronous writeback, swap-ins that wait for I/O.
#[derive(Clone, Debug)]
pub enum SwapRequest {
    Zram { bytes: u64 },
    File { bytes: u64, dir: std::path::PathBuf },
}

/// Where `--swap file:SIZE` puts its swap file: a disk-backed directory on most systems (unlike
/// /tmp, which is often tmpfs and cannot hold swap).
pub const DEFAULT_SWAPFILE_DIR: &str = "/var/tmp";

impl std::str::FromStr for SwapRequest {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let clip = || reclaimlab_core::units::clip(s);
        let size = |kind: &str, size: &str| {
            let bytes = reclaimlab_core::units::parse_size(size)?;
            // mkswap needs 10 pages; more than the largest physical memory is no device.
            let max = reclaimlab_core::scenario::limits::MAX_PHYS_BYTES;
            if !(40 << 10..=max).contains(&bytes) {
                return Err(format!(
                    "bad --swap {}: the {kind} size must be within 40K..=4096T (mkswap needs \
                     at least 10 pages)",
                    clip()
                ));
            }
            Ok(bytes)
        };
        match s.split_once(':') {
            Some(("zram", rest)) => Ok(SwapRequest::Zram {
                bytes: size("zram", rest)?,
            }),
            Some(("file", rest)) => {
                let (sz, dir) = match rest.split_once(':') {
                    Some((sz, dir)) => (sz, dir),
                    None => (rest, DEFAULT_SWAPFILE_DIR),
                };
                let dir = std::path::PathBuf::from(dir);
                if !dir.is_absolute() {
                    return Err(format!(
                        "bad --swap {}: the swap file's directory must be an absolute path",
                        clip()
                    ));
                }
                Ok(SwapRequest::File {
                    bytes: size("swap file", sz)?,
                    dir,
                })
            }
            _ => Err(format!(
                "bad --swap {}: use zram:SIZE (e.g. zram:4G) or file:SIZE[:DIR] (e.g. file:4G, \
                 a swap file in {DEFAULT_SWAPFILE_DIR})",
                clip()
            )),
        }
    }
}

#[derive(Default)]
pub struct BenchOptions<'a> {
    pub repeat: usize,
    pub swap: Option<SwapRequest>,
    pub trace: bool,
    /// Do not trace `sched:sched_switch` (no CPUs in `placement.processes`): to measure what
    /// the trace costs, or to run without its reader.
    pub no_placement_trace: bool,
    /// Called with (repetition index, repetitions, elapsed fraction of this repetition).
    pub progress: Option<&'a dyn Fn(usize, usize, f64)>,
    /// Repetitions an interrupted earlier bench finished (`--resume`): kept as runs 0.., and
    /// only the remaining ones are run.
    pub prior: Vec<reclaimlab_core::RunResult>,
    /// Called with each repetition as soon as it finishes (e.g. to journal it).
    pub on_run: Option<RunHook<'a>>,
}

/// [`BenchOptions::on_run`]: (repetition index, its result).
pub type RunHook<'a> = &'a dyn Fn(usize, &reclaimlab_core::RunResult) -> anyhow::Result<()>;

/// Run a scenario on the live kernel `repeat` times and return the shared result document.
///
/// Needs root and a memory cgroup controller. Reads the scenario's `[host]` keys (`host.grace`,
/// `host.stress_ng`) and skips `[sim]`, so the caller can `scn.finish()` afterwards.
pub fn bench(scn: &Scenario, opts: &BenchOptions) -> anyhow::Result<ResultDoc> {
    let r = bench::bench(scn, opts);
    // A signal's clean-up may have made the run fail under our feet (its processes killed,
    // reaped): let the signal thread finish and exit with 128 + signal, not with this error.
    cleanup::park_if_stopping();
    r
}

/// CPUs and RAM of this machine, for validating scenarios against it.
pub fn machine_limits() -> (usize, u64) {
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    // SAFETY: sysconf has no preconditions.
    let pages = unsafe { libc::sysconf(libc::_SC_PHYS_PAGES) } as u64;
    let psz = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
    (cpus, pages * psz)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swap_requests_parse_with_their_defaults() {
        match "file:4G".parse::<SwapRequest>().unwrap() {
            SwapRequest::File { bytes, dir } => {
                assert_eq!(bytes, 4 << 30);
                assert_eq!(dir, std::path::Path::new(DEFAULT_SWAPFILE_DIR));
            }
            other => panic!("{other:?}"),
        }
        match "file:64M:/srv/swap".parse::<SwapRequest>().unwrap() {
            SwapRequest::File { bytes, dir } => {
                assert_eq!(bytes, 64 << 20);
                assert_eq!(dir, std::path::Path::new("/srv/swap"));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            "zram:1G".parse::<SwapRequest>().unwrap(),
            SwapRequest::Zram { bytes } if bytes == 1 << 30
        ));
        let e = "file:4K".parse::<SwapRequest>().unwrap_err();
        assert!(e.contains("swap file size must be within"), "{e}");
        let e = "disk:4G".parse::<SwapRequest>().unwrap_err();
        assert!(e.contains("file:SIZE[:DIR]"), "{e}");
    }
}
