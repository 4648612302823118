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
    let mut out = Vec::new();
    for p in procs {
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
        let firsts = |t: &Value| -> Option<Vec<(f64, u64)>> {
            let m = t["first_seen"].as_object()?;
            let mut v: Vec<(f64, u64)> = m
                .iter()
                .filter_map(|(c, s)| Some((s.as_f64()?, c.parse().ok()?)))
                .collect();
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            Some(v)
        };
        let mut sweeper_cpus = Vec::new();
        let mut last_start = f64::MIN;
        for s in &sweepers {
            let f = firsts(s)?;
            let &(at, cpu) = f.first()?;
            last_start = last_start.max(at);
            sweeper_cpus.push(cpu);
        }
        let main_cpus: Vec<u64> = firsts(main)?
            .into_iter()
            .filter(|&(at, _)| at <= last_start)
            .map(|(_, c)| c)
            .collect();
        if main_cpus.is_empty() {
            return None;
        }
        let j = |v: &[u64]| {
            v.iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        out.push(format!("{}:{}", j(&main_cpus), j(&sweeper_cpus)));
    }
    Some(out.join(";"))
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
}
