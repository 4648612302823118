//! Where an anon-sweep run's processes started, from a host run's scheduler trace
//! (`placement.processes`, written by bench), as the simulator's `sim.start_placement`.
//!
//! Why it matters: on x86 a CPU's bit stays in an mm's cpumask after the mm's last task there
//! left it (arch/x86/mm/tlb.c: switch_mm_irqs_off sets it and never clears it on switch-away;
//! only flush_tlb_func on an mm-targeted flush trims it, at most once a second). A worker
//! whose main thread ran on the other CPU during start-up (forked there, pulled by a
//! new-idle balance while it waited to join the memcg) keeps that CPU in its mask, so every
//! reclaim flush of its pages sends an IPI there: the host's unpinned rows are bimodal for this
//! reason. The race that decides it lasts microseconds; giving the model the CPUs each host
//! run's threads really started on lets the rest of the run be compared mode by mode.

use crate::result::RunResult;
use serde_json::Value;

/// One process's start-up placement: the CPUs its main thread ran on (in order; each leaves
/// its bit in the mm's cpumask) and the CPU each sweeping thread was cloned onto.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StartCpus {
    pub main: Vec<usize>,
    pub sweepers: Vec<usize>,
}

impl StartCpus {
    /// Parse `MAIN:SWEEPERS;...`, e.g. `0,1:0;1:1` (process 0's main thread ran on CPUs 0
    /// then 1 and cloned its sweeper onto 0; process 1 stayed on CPU 1).
    pub fn parse_list(text: &str) -> Result<Vec<StartCpus>, String> {
        let cpus = |t: &str| -> Result<Vec<usize>, String> {
            t.split(',')
                .map(|c| {
                    c.trim()
                        .parse::<usize>()
                        .map_err(|_| format!("{c:?} is not a CPU number"))
                })
                .collect()
        };
        text.split(';')
            .map(|p| {
                let (m, s) = p.split_once(':').ok_or_else(|| {
                    format!("{p:?}: each process is MAIN_CPUS:SWEEPER_CPUS, e.g. 0,1:0")
                })?;
                Ok(StartCpus {
                    main: cpus(m)?,
                    sweepers: cpus(s)?,
                })
            })
            .collect()
    }

    /// The inverse of `parse_list`.
    pub fn format_list(list: &[StartCpus]) -> String {
        let j = |v: &[usize]| {
            v.iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        list.iter()
            .map(|p| format!("{}:{}", j(&p.main), j(&p.sweepers)))
            .collect::<Vec<_>>()
            .join(";")
    }
}

/// The `sim.start_placement` string (`MAIN:SWEEPERS;...`) of one host run, or None when the
/// run has no scheduler trace or its processes do not look like anon-sweep workers (a main
/// thread, whose tid is the pid, and `threads` sweepers).
///
/// A process's main-thread CPUs are those it was first seen on no later than the last of its
/// sweepers was first seen running (after cloning them it waits in join until the sweep ends;
/// where it runs at exit does not matter to the sweep).
pub fn of_run(run: &RunResult, processes: usize, threads: usize) -> Option<String> {
    let procs = run.extra.get("placement")?["processes"].as_array()?;
    if procs.len() != processes {
        return None;
    }
    let starts = procs
        .iter()
        .map(|p| process_start(p, threads))
        .collect::<Option<Vec<_>>>()?;
    Some(StartCpus::format_list(&starts))
}

/// One process of `placement.processes`: its main thread (tid = pid) and `threads` sweepers.
fn process_start(p: &Value, threads: usize) -> Option<StartCpus> {
    let pid = p["pid"].as_i64()?;
    let ts = p["threads"].as_array()?;
    let main = ts.iter().find(|t| t["tid"].as_i64() == Some(pid))?;
    let mut sweepers: Vec<&Value> = ts
        .iter()
        .filter(|t| t["tid"].as_i64() != Some(pid))
        .collect();
    if sweepers.len() != threads {
        return None;
    }
    sweepers.sort_by_key(|t| t["tid"].as_i64());
    // (seconds, CPU) of each CPU the thread was seen on, earliest first.
    let firsts = |t: &Value| -> Option<Vec<(f64, usize)>> {
        let mut v: Vec<(f64, usize)> = t["first_seen"]
            .as_object()?
            .iter()
            .filter_map(|(c, s)| Some((s.as_f64()?, c.parse().ok()?)))
            .collect();
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        Some(v)
    };
    let mut sweeper_cpus = Vec::new();
    let mut last_start = f64::MIN;
    for s in &sweepers {
        let &(at, cpu) = firsts(s)?.first()?;
        last_start = last_start.max(at);
        sweeper_cpus.push(cpu);
    }
    let main_cpus: Vec<usize> = firsts(main)?
        .into_iter()
        .filter(|&(at, _)| at <= last_start)
        .map(|(_, c)| c)
        .collect();
    (!main_cpus.is_empty()).then_some(StartCpus {
        main: main_cpus,
        sweepers: sweeper_cpus,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(processes: Value) -> RunResult {
        let mut r = RunResult::default();
        r.extra
            .insert("placement".into(), json!({ "processes": processes }));
        r
    }

    #[test]
    fn main_cpus_up_to_the_sweepers_start_and_sweepers_in_tid_order() {
        // Process 10902: born on CPU 0, pulled to 1, cloned its sweeper onto 0. Process 10901
        // stayed on 1 until the sweep ended, then exited on 0 (not a start-up CPU).
        let r = run(json!([
            {"pid": 10901, "threads": [
                {"tid": 10901, "first_seen": {"1": 0.0001, "0": 15.01}},
                {"tid": 10904, "first_seen": {"1": 0.011}}]},
            {"pid": 10902, "threads": [
                {"tid": 10902, "first_seen": {"0": 0.0003, "1": 0.0108}},
                {"tid": 10903, "first_seen": {"0": 0.0109}}]},
        ]));
        assert_eq!(of_run(&r, 2, 1).as_deref(), Some("1:1;0,1:0"));
        // The wrong shape: no string.
        assert_eq!(of_run(&r, 3, 1), None);
        assert_eq!(of_run(&r, 2, 2), None);
        assert_eq!(of_run(&RunResult::default(), 2, 1), None);
    }

    #[test]
    fn the_list_parses_and_formats_back() {
        let l = StartCpus::parse_list("0,1:0;1:1,0").unwrap();
        assert_eq!(l[0].main, vec![0, 1]);
        assert_eq!(l[1].sweepers, vec![1, 0]);
        assert_eq!(StartCpus::format_list(&l), "0,1:0;1:1,0");
        assert!(StartCpus::parse_list("0;1:1").is_err());
        assert!(StartCpus::parse_list("0:x").is_err());
    }
}
