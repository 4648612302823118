//! The reclaim cycle profiled in place: one task pinned to CPU 0 sweeps twice its memcg's limit
//! of anonymous pages (a zero page with one byte changed, as anon-sweep leaves them), so every
//! touch swaps a page in from zram and reclaims one out. `perf record -g` samples CPU 0 during
//! the steady part; each sample goes to the innermost kernel function on its stack that one of
//! the simulator's costs stands for (`classify`). Samples per class, over the samples' time and
//! the pages stolen meanwhile, give each cost per page *on the path the workloads take*, where
//! the microbenchmarks (fresh memory, a limit write) measure neighbouring paths.
//!
//! cpu-clock samples cannot land while interrupts are off: time in an irq-off section shows at
//! the function that turns them back on (`_raw_spin_unlock_irq`), whose caller is on the stack,
//! so it is still classed by where the section is.

use super::derive::Derived;
use super::stats::Measurement;
use super::{find, put};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// What the simulator charges a stack to: the first rule matching a frame, walking from the
/// leaf up. Order matters only between rules that can nest (the codec inside swap_writeout,
/// the flush inside try_to_unmap, the allocation inside do_swap_page).
const RULES: &[(&str, &[&str])] = &[
    ("zram_codec_write", &["zcomp_compress"]),
    ("zram_codec_read", &["zcomp_decompress"]),
    (
        "tlb_flush",
        &[
            "flush_tlb_mm_range",
            "arch_tlbbatch_flush",
            "native_flush_tlb_multi",
            "flush_tlb_func",
        ],
    ),
    ("folio_referenced", &["folio_referenced"]),
    ("try_to_unmap", &["try_to_unmap"]),
    (
        "add_to_swap",
        &["folio_alloc_swap", "swap_cache_add_folio", "add_to_swap"],
    ),
    ("swap_writeout", &["swap_writeout", "pageout"]),
    (
        "remove_mapping",
        &[
            "__remove_mapping",
            "free_unref_folios",
            "__mem_cgroup_uncharge_folios",
            "mem_cgroup_uncharge_folios",
        ],
    ),
    ("shrink_folio_list", &["shrink_folio_list"]),
    (
        "lru_scan",
        &[
            "shrink_lruvec",
            "shrink_node",
            "do_try_to_free_pages",
            "try_to_free_mem_cgroup_pages",
        ],
    ),
    ("charge", &["try_charge_memcg", "charge_memcg"]),
    (
        "alloc_folio",
        &["vma_alloc_folio_noprof", "alloc_anon_folio"],
    ),
    ("swap_read", &["swap_read_folio"]),
    ("do_swap_page", &["do_swap_page"]),
    ("do_anonymous_page", &["do_anonymous_page"]),
    (
        "fault",
        &[
            "asm_exc_page_fault",
            "exc_page_fault",
            "handle_mm_fault",
            "__handle_mm_fault",
        ],
    ),
];

/// One sample's class: a rule's name, `user` (a user-space leaf) or `other`.
pub fn classify(frames: &[(String, bool)]) -> &'static str {
    for (sym, _) in frames {
        for (class, syms) in RULES {
            if syms.contains(&sym.as_str()) {
                return class;
            }
        }
    }
    match frames.first() {
        Some((_, false)) => "user",
        _ => "other",
    }
}

/// `perf script` text → (tid, frames leaf first as (symbol, in the kernel)).
pub fn parse_script(text: &str) -> Vec<(i64, Vec<(String, bool)>)> {
    let mut out = Vec::new();
    let mut cur: Option<(i64, Vec<(String, bool)>)> = None;
    for line in text.lines() {
        if line.trim().is_empty() {
            if let Some(s) = cur.take() {
                out.push(s);
            }
        } else if line.starts_with(char::is_whitespace) {
            if let Some((_, frames)) = cur.as_mut() {
                // "\t ffffffff81234567 shrink_folio_list+0x1f ([kernel.kallsyms])"
                let mut it = line.split_whitespace();
                let _addr = it.next();
                let sym = it.next().unwrap_or("[unknown]");
                let sym = sym.split("+0x").next().unwrap_or(sym).to_string();
                frames.push((sym, line.contains("[kernel.kallsyms]")));
            }
        } else {
            if let Some(s) = cur.take() {
                out.push(s);
            }
            // "comm  tid ..." (comm may hold spaces; the tid is the first integer field)
            let tid = line
                .split_whitespace()
                .find_map(|w| w.parse::<i64>().ok())
                .unwrap_or(-1);
            cur = Some((tid, Vec::new()));
        }
    }
    if let Some(s) = cur {
        out.push(s);
    }
    out
}

/// Samples per class of one task.
pub fn classes(samples: &[(i64, Vec<(String, bool)>)], tid: i64) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for (t, frames) in samples {
        if *t == tid {
            *m.entry(classify(frames).to_string()).or_insert(0) += 1;
        }
    }
    m
}

/// What one profiled window gave.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Window {
    /// Samples of the sweeping task per class.
    pub classes: BTreeMap<String, u64>,
    /// Sampling frequency (Hz): a sample stands for 1e9 / freq ns of CPU time.
    pub freq: u64,
    /// /proc/vmstat deltas over the window.
    pub pgsteal: u64,
    pub pgscan: u64,
    pub pswpin: u64,
    pub pgfault: u64,
    pub seconds: f64,
    /// The sweeping task's CPU time over the window (/proc/PID/stat), ns; 0 if unknown.
    /// Samples are shares of it: perf lowers its rate when sampling takes too long
    /// (perf_event_max_sample_rate), so the nominal period would understate the time.
    pub task_ns: u64,
    /// The share of the window CPU 1 was not idle (/proc/stat; perf's own work there
    /// included). On this guest a busy CPU 1 slows CPU 0's cycle by a fifth to a third
    /// (docs/results/2026-11-26-one-cpu-path.md), so the costs hold for the neighbour's
    /// state they were measured in. Absent (None) in documents written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu1_busy: Option<f64>,
}

impl Window {
    /// ns per stolen page charged to `class` (None without steals).
    pub fn per_steal(&self, class: &str) -> Option<f64> {
        let n = *self.classes.get(class).unwrap_or(&0) as f64;
        (self.pgsteal > 0).then(|| n * self.ns_per_sample() / self.pgsteal as f64)
    }
    /// CPU time a sample stands for: the task's time over its samples, or the nominal period.
    pub fn ns_per_sample(&self) -> f64 {
        let total = self.total_samples();
        if self.task_ns > 0 && total > 0 {
            self.task_ns as f64 / total as f64
        } else {
            1e9 / self.freq as f64
        }
    }
    pub fn total_samples(&self) -> u64 {
        self.classes.values().sum()
    }
}

/// Is `perf` there and allowed to sample the kernel?
pub fn perf_available() -> Result<()> {
    let o = Command::new("perf")
        .arg("--version")
        .output()
        .context("perf not found (the cycle family needs it: apt-get install linux-perf)")?;
    if !o.status.success() {
        bail!("perf --version failed");
    }
    Ok(())
}

/// CPU time (user + system, ns) of the processes in `procs`, all threads, from /proc/PID/stat
/// (clock ticks of 10 ms: 0.2% of a 5 s window; /proc/PID/schedstat reads 0 on kernels without
/// schedstats).
pub fn cpu_ns(procs: &[i32]) -> u64 {
    procs
        .iter()
        .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/stat")).ok())
        .map(|s| stat_cpu_ns(&s))
        .sum()
}

/// utime + stime of one /proc/PID/stat line, in ns (USER_HZ is 100 on every Linux ABI).
pub fn stat_cpu_ns(line: &str) -> u64 {
    // Fields after the command's closing parenthesis: state is field 3, utime 14, stime 15.
    let rest = line.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
    (tick(11) + tick(12)) * 10_000_000
}

/// CPU `cpu`'s (busy, total) clock ticks from /proc/stat (crate::placement's parser).
pub fn cpu_ticks(cpu: usize) -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    crate::placement::parse_stat_cpus(&stat).get(cpu).copied()
}

/// Busy share between two `cpu_ticks` readings.
pub fn busy_share(before: Option<(u64, u64)>, after: Option<(u64, u64)>) -> Option<f64> {
    let ((b0, t0), (b1, t1)) = (before?, after?);
    (t1 > t0).then(|| (b1 - b0) as f64 / (t1 - t0) as f64)
}

/// `perf record` of CPU 0 with call graphs for `seconds`; returns the data file.
pub fn record_cpu0(dir: &Path, seconds: f64, freq: u64) -> Result<std::path::PathBuf> {
    let data = dir.join(format!("reclaimlab-cycle-{}.perf", std::process::id()));
    let st = Command::new("perf")
        .args(["record", "-q", "-C", "0", "-g", "-e", "cpu-clock", "-F"])
        .arg(freq.to_string())
        .arg("-o")
        .arg(&data)
        .args(["--", "sleep"])
        .arg(format!("{seconds:.3}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .context("running perf record")?;
    if !st.success() {
        let _ = std::fs::remove_file(&data);
        bail!("perf record failed ({st})");
    }
    Ok(data)
}

/// The recorded samples as text (`perf script`); the data file is removed.
pub fn script(data: &Path) -> Result<String> {
    let text = Command::new("perf")
        .args(["script", "-F", "comm,tid,ip,sym,dso", "-i"])
        .arg(data)
        .output()
        .context("running perf script")
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
    let _ = std::fs::remove_file(data);
    text
}

/// The windows as measurements: ns per stolen page for each class (one sample per window),
/// the whole cycle, and the counts per stolen page the derivations divide by.
pub fn measurements(ws: &[Window], limit_pages: usize) -> Result<Vec<Measurement>> {
    let mut names: Vec<String> = ws.iter().flat_map(|w| w.classes.keys().cloned()).collect();
    names.sort();
    names.dedup();
    let how = format!(
        "perf record -g of CPU 0 while one task pinned there writes one byte of each page of \
         {} anonymous pages in a {limit_pages}-page memcg (zram swap): samples whose innermost \
         modelled kernel function is",
        2 * limit_pages
    );
    let mut v = Vec::new();
    for n in &names {
        let per: Vec<f64> = ws.iter().map(|w| w.per_steal(n).unwrap_or(0.0)).collect();
        v.push(Measurement::new(
            &format!("cycle-{n}"),
            "ns/steal",
            &format!("{how} in class {n}, per stolen page"),
            per,
        )?);
    }
    let ratio = |f: &dyn Fn(&Window) -> u64| -> Vec<f64> {
        ws.iter()
            .map(|w| f(w) as f64 / w.pgsteal.max(1) as f64)
            .collect()
    };
    let total: Vec<f64> = ws
        .iter()
        .map(|w| w.total_samples() as f64 * w.ns_per_sample() / w.pgsteal as f64)
        .collect();
    v.push(
        Measurement::new(
            "cycle-total",
            "ns/steal",
            &format!("{how} anything, per stolen page (the whole cycle's CPU time)"),
            total,
        )?
        .observe("windows", serde_json::to_value(ws)?),
    );
    v.push(Measurement::new(
        "cycle-scans-per-steal",
        "ratio",
        "pgscan_anon / pgsteal_anon over the windows (/proc/vmstat)",
        ratio(&|w| w.pgscan),
    )?);
    v.push(Measurement::new(
        "cycle-swapins-per-steal",
        "ratio",
        "pswpin / pgsteal_anon over the windows",
        ratio(&|w| w.pswpin),
    )?);
    let busy: Vec<f64> = ws.iter().filter_map(|w| w.cpu1_busy).collect();
    if busy.len() == ws.len() {
        v.push(Measurement::new(
            "cycle-cpu1-busy",
            "ratio",
            "the share of each window CPU 1 was not idle (/proc/stat; perf runs there): the \
             state of CPU 0's neighbour the costs were measured in",
            busy,
        )?);
    }
    v.push(Measurement::new(
        "cycle-faults-per-steal",
        "ratio",
        "pgfault / pgsteal_anon over the windows",
        ratio(&|w| w.pgfault),
    )?);
    Ok(v)
}

/// Costs from the cycle's classes. Each is a per-call figure: per-steal time over the calls per
/// steal the simulator makes on this path (folio_referenced per scanned folio, try_to_unmap per
/// stolen one, a fault per pgfault, do_swap_page per swap-in). Where a microbenchmark set the
/// same cost, the cycle's replaces it (the workloads' path, not fresh memory) and a note keeps
/// the other figure.
pub fn derive(ms: &[Measurement], costs: &mut BTreeMap<String, Derived>, notes: &mut Vec<String>) {
    let Some(total) = find(ms, "cycle-total") else {
        return;
    };
    let n = total.samples.len();
    let col =
        |name: &str| -> Vec<f64> { find(ms, name).map_or(vec![0.0; n], |m| m.samples.clone()) };
    let scans = col("cycle-scans-per-steal");
    let swapins = col("cycle-swapins-per-steal");
    let faults = col("cycle-faults-per-steal");
    let per = |classes: &[&str], calls: &dyn Fn(usize) -> f64| -> Vec<f64> {
        let cols: Vec<Vec<f64>> = classes.iter().map(|c| col(&format!("cycle-{c}"))).collect();
        (0..n)
            .map(|i| cols.iter().map(|c| c[i]).sum::<f64>() / calls(i).max(1e-9))
            .collect()
    };
    let mut set = |name: &str, classes: &[&str], calls: &dyn Fn(usize) -> f64, what: &str| {
        let from: Vec<String> = classes
            .iter()
            .map(|c| format!("cycle-{c}"))
            .chain(["cycle-total".to_string()])
            .collect();
        let from: Vec<&str> = from.iter().map(|s| s.as_str()).collect();
        let d = Derived::new(
            per(classes, calls),
            &format!("the reclaim cycle profiled with perf (calibrate family cycle): {what}"),
            &from,
        );
        install(
            costs,
            notes,
            name,
            d,
            "the path the workloads take, not a microbenchmark's",
        );
    };
    set(
        "rmap_walk",
        &["folio_referenced", "try_to_unmap"],
        &|i| scans[i] + 1.0,
        "folio_referenced and try_to_unmap per call (one per scanned folio, one per stolen)",
    );
    set(
        "isolate_folio",
        &["lru_scan"],
        &|i| scans[i],
        "shrink_lruvec's own work (isolation and putback under lru_lock, the loop) per scanned folio",
    );
    set(
        "shrink_folio",
        &["shrink_folio_list"],
        &|i| scans[i],
        "shrink_folio_list's own work (not in a function another cost stands for) per folio on \
         its list (every scanned folio)",
    );
    set(
        "memcg_charge",
        &["charge"],
        &|i| swapins[i],
        "try_charge_memcg and charge_memcg per swap-in (one charge each)",
    );
    set(
        "add_to_swap",
        &["add_to_swap"],
        &|_| 1.0,
        "folio_alloc_swap and the swap cache insert per stolen page",
    );
    set(
        "swap_writeout",
        &["swap_writeout"],
        &|_| 1.0,
        "swap_writeout without the compression per stolen page",
    );
    set(
        "remove_mapping",
        &["remove_mapping"],
        &|_| 1.0,
        "__remove_mapping, the uncharge and the free per stolen page",
    );
    set(
        "fault_base",
        &["fault"],
        &|i| faults[i],
        "the exception and handle_mm_fault's own work per fault",
    );
    set(
        "do_swap_page",
        &["do_swap_page", "swap_read"],
        &|i| swapins[i],
        "do_swap_page's own work and swap_read_folio without the decompression, per swap-in",
    );
    // The cycle's pages are a zero page with one byte changed: its codec figures are the sparse
    // ones, timed on pages as the swap path meets them (cache-cold) rather than through the
    // block device.
    set(
        "zram_compress_sparse",
        &["zram_codec_write"],
        &|_| 1.0,
        "zcomp_compress of a nearly zero page per stolen page",
    );
    set(
        "zram_decompress_sparse",
        &["zram_codec_read"],
        &|i| swapins[i],
        "zcomp_decompress of a nearly zero page per swap-in",
    );
    set(
        "alloc_anon_folio",
        &["alloc_folio"],
        &|i| swapins[i],
        "the new folio's allocation per swap-in",
    );
    // The task's own time: one one-byte store per page, and every page it touches was swapped
    // out, so one touch per swap-in; the page walk after the fault is `tlb_walk`, charged
    // apart by the simulator.
    let walk = reclaimlab_sim::cost::CostTable::x86().tlb_walk as f64;
    let user: Vec<f64> = col("cycle-user")
        .iter()
        .zip(&swapins)
        .map(|(u, s)| u / s.max(1e-9) - walk)
        .collect();
    let d = Derived::new(
        user,
        "the reclaim cycle profiled with perf (calibrate family cycle): the task's user time \
         per touch (a one-byte store to a page just swapped in; one touch per swap-in) minus \
         tlb_walk (the page walk, charged apart)",
        &["cycle-user", "cycle-swapins-per-steal", "cycle-total"],
    );
    install(costs, notes, "touch_line", d, "the path the workloads take");
    // With the mm on one CPU try_to_unmap does not defer the flush (should_defer_flush): one
    // ranged local flush of one page per stolen page, so the fixed part is the rest.
    if let Some(one) = costs.get("local_flush_one").map(|d| d.ns) {
        let v: Vec<f64> = col("cycle-tlb_flush").iter().map(|t| t - one).collect();
        let d = Derived::new(
            v,
            "the reclaim cycle profiled with perf (calibrate family cycle): the flush work per \
             stolen page (one ranged local flush of one page: the mm runs on one CPU, so \
             try_to_unmap flushes at once) minus local_flush_one",
            &["cycle-tlb_flush", "flush-invlpg-fit"],
        );
        install(
            costs,
            notes,
            "flush_tlb_range_fixed",
            d,
            "the mprotect series' intercept holds more than the flush",
        );
    }
}

/// Set a cost from the cycle (`put`); a figure it replaces is kept in a note, with `why`.
fn install(
    costs: &mut BTreeMap<String, Derived>,
    notes: &mut Vec<String>,
    name: &str,
    d: Option<Derived>,
    why: &str,
) {
    if let (Some(new), Some(old)) = (&d, costs.get(name)) {
        notes.push(format!(
            "{name}: the cycle's {:.0} ns replaces {:.0} ns from {} ({why})",
            new.ns,
            old.ns,
            old.from.join(", ")
        ));
    }
    put(costs, notes, name, d, "the cycle gave no samples for it");
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCRIPT: &str = "\
reclaimlab 4242 [000]
\tffffffff81a00001 lzo1x_1_do_compress.isra.0+0x10 ([kernel.kallsyms])
\tffffffff81a00002 zcomp_compress+0x20 ([kernel.kallsyms])
\tffffffff81a00003 swap_writeout+0x30 ([kernel.kallsyms])
\tffffffff81a00004 shrink_folio_list+0x40 ([kernel.kallsyms])

reclaimlab 4242 [000]
\tffffffff81a00005 _raw_spin_unlock_irq+0x5 ([kernel.kallsyms])
\tffffffff81a00006 shrink_lruvec+0x6 ([kernel.kallsyms])
\tffffffff81a00007 shrink_node+0x7 ([kernel.kallsyms])

reclaimlab 4242 [000]
\t558f61e8dbce [unknown] (/usr/bin/reclaimlab)

rustc 77 [000]
\tffffffff81a00008 exc_page_fault+0x8 ([kernel.kallsyms])

reclaimlab 4242 [000]
\tffffffff81a00009 flush_tlb_mm_range+0x9 ([kernel.kallsyms])
\tffffffff81a0000a try_to_unmap_one+0xa ([kernel.kallsyms])
\tffffffff81a0000b try_to_unmap+0xb ([kernel.kallsyms])
";

    #[test]
    fn classes_by_the_innermost_frame_a_cost_stands_for() {
        let s = parse_script(SCRIPT);
        assert_eq!(s.len(), 5);
        let c = classes(&s, 4242);
        assert_eq!(c["zram_codec_write"], 1, "the codec, not swap_writeout");
        assert_eq!(c["lru_scan"], 1, "an irq-off section goes to its caller");
        assert_eq!(c["user"], 1);
        assert_eq!(c["tlb_flush"], 1, "the flush, not try_to_unmap");
        assert!(
            !c.contains_key("fault"),
            "another task's samples are not counted"
        );
        let mut w = Window {
            classes: c,
            freq: 1000,
            pgsteal: 2,
            ..Default::default()
        };
        // One sample = 1 ms of CPU at the nominal rate; over 2 steals, 0.5 ms each.
        assert_eq!(w.per_steal("user"), Some(500_000.0));
        assert_eq!(w.total_samples(), 4);
        assert_eq!(
            stat_cpu_ns("4242 (a (b) c) R 1 2 3 4 5 6 7 8 9 10 150 50 0 0"),
            2_000_000_000
        );
        // With the task's measured CPU time (8 ms for 4 samples) a sample is 2 ms.
        w.task_ns = 8_000_000;
        assert_eq!(w.per_steal("user"), Some(1_000_000.0));
    }

    #[test]
    fn the_neighbours_busy_share_is_its_busy_ticks_over_all() {
        let (t0, t1) = (Some((20, 100)), Some((110, 200)));
        // 90 busy ticks of 100.
        assert_eq!(busy_share(t0, t1), Some(0.9));
        assert_eq!(busy_share(t0, t0), None, "no time passed");
        assert_eq!(busy_share(t0, None), None);
    }
}
