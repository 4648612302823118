//! The `contention` family's checks: one reclaimer against two in one memcg, measured, beside
//! the simulator's `limit-reclaim` workload run for the same set-up (same pages, cgroup v1
//! limit writes on CPUs 0 and 1) with the default costs and with this calibration's costs.

use super::derive::{check, check_values, Check, Derived};
use super::find;
use super::stats::Measurement;
use reclaimlab_sim::cost::CostTable;
use reclaimlab_sim::workload::limit_reclaim::{figures, Figures};
use std::collections::BTreeMap;

/// Pages the two reclaimers take in all when the raw document does not say (a full run's).
const DEFAULT_PAGES: u64 = 16 * 1024;

/// The set-up of one kind (`file` or `anon`) as the measurements describe it.
#[derive(Clone, Copy)]
struct Setup<'a> {
    kind: &'a str,
    /// Pages reclaimed in all (the memcg holds twice that).
    pages: u64,
}

impl Setup<'_> {
    fn of<'a>(ms: &[Measurement], kind: &'a str) -> Setup<'a> {
        let pages = find(ms, &format!("reclaim-{kind}-one-cpu"))
            .and_then(|m| m.observed.get("reclaim_pages"))
            .and_then(|v| v.as_u64())
            .unwrap_or(DEFAULT_PAGES);
        Setup { kind, pages }
    }

    /// The model's figures with `reclaimers` on CPUs 0.. and `t`'s costs; None when the
    /// model could not run it (the reason is not a cost: the check shows NaN).
    fn model(&self, reclaimers: u32, t: &CostTable) -> Option<Figures> {
        let bytes = self.pages * 4096;
        let sets = [
            format!("workload.pages={}", self.kind),
            format!("workload.reclaimers={reclaimers}"),
            format!("workload.bytes={}", 2 * bytes),
            format!("workload.reclaim_bytes={bytes}"),
        ];
        figures(&sets, t).ok()
    }

    fn cpu_ratio(&self, t: &CostTable) -> f64 {
        match (self.model(2, t), self.model(1, t)) {
            (Some(two), Some(one)) => two.cpu_ns_per_page / one.cpu_ns_per_page,
            _ => f64::NAN,
        }
    }

    /// The one reclaimer's CPU time and the pair's wall time (the slower) per page, each
    /// beside the model's.
    fn per_page(
        &self,
        ms: &[Measurement],
        costs: &BTreeMap<String, Derived>,
        v: &mut Vec<Check>,
        label: &str,
        wall_note: &str,
    ) {
        let kind = self.kind;
        if let Some(one) = find(ms, &format!("reclaim-{kind}-one-cpu-cputime")) {
            v.push(check(
                &format!("{label}, one CPU, CPU time per page"),
                one,
                &self.charges("the model's one reclaimer", costs),
                |t| self.model(1, t).map_or(f64::NAN, |f| f.cpu_ns_per_page),
                costs,
                "the base the two-CPU ratio divides by",
            ));
        }
        if let Some(m) = find(ms, &format!("reclaim-{kind}-two-cpus-wall")) {
            v.push(check(
                &format!("{label}, two CPUs at once, wall time per page (the slower)"),
                m,
                &self.charges("the model's slower reclaimer", costs),
                |t| self.model(2, t).map_or(f64::NAN, |f| f.wall_ns_per_page),
                costs,
                wall_note,
            ));
        }
    }

    /// The pair's CPU time per page over the one reclaimer's, sample by sample, beside the
    /// model's ratio.
    fn ratio_check(
        &self,
        name: &str,
        (two, one): (&Measurement, &Measurement),
        costs: &BTreeMap<String, Derived>,
        note: &str,
    ) -> Check {
        check_values(
            name,
            "ratio",
            &sample_ratios(two, one),
            &self.charges("the model's two reclaimers over one", costs),
            |t| self.cpu_ratio(t),
            costs,
            note,
        )
    }

    fn charges(&self, what: &str, costs: &BTreeMap<String, Derived>) -> String {
        let mut mine: Vec<&str> = costs.keys().map(String::as_str).collect();
        if mine.is_empty() {
            mine.push("none");
        }
        format!(
            "{what}: `reclaimlab sim limit-reclaim --set workload.pages={} --set workload.bytes={}K \
             --set workload.reclaim_bytes={}K` (cgroup v1, lru_lock and i_pages queues with line \
             transfers, shootdowns with the sender's wait); calibrated = the defaults with this \
             run's costs: {}",
            self.kind,
            2 * self.pages * 4,
            self.pages * 4,
            mine.join(", ")
        )
    }
}

/// `two`'s samples over `one`'s, pair by pair.
fn sample_ratios(two: &Measurement, one: &Measurement) -> Vec<f64> {
    two.samples
        .iter()
        .zip(&one.samples)
        .map(|(a, b)| a / b)
        .collect()
}

/// Two CPUs at once: reclaim contention and whether the two vCPUs run together.
pub(super) fn checks(ms: &[Measurement], costs: &BTreeMap<String, Derived>, v: &mut Vec<Check>) {
    let file = Setup::of(ms, "file");
    // Thread CPU times where the raw document has them; older documents only had the
    // reclaimers' wall times added ("-two-cpus-cpu"), which counts a reclaimer's waits too.
    let pair = match (
        find(ms, "reclaim-file-two-cpus-cputime"),
        find(ms, "reclaim-file-one-cpu-cputime"),
    ) {
        (Some(two), Some(one)) => Some((two, one, "thread CPU time")),
        _ => find(ms, "reclaim-file-two-cpus-cpu")
            .zip(find(ms, "reclaim-file-one-cpu"))
            .map(|(two, one)| {
                (
                    two,
                    one,
                    "wall times added (an older raw document: waits count as CPU)",
                )
            }),
    };
    file.per_page(
        ms,
        costs,
        v,
        "file reclaim",
        "below the one-CPU figure: the two reclaimers gained from working at once",
    );
    if let Some((two, one, basis)) = pair {
        v.push(file.ratio_check(
            "reclaim CPU time per page, two CPUs at once / one CPU",
            (two, one),
            costs,
            &format!("{basis}; above 1 is contention: locked sections lengthened by cache-line transfers and the wait for the lock"),
        ));
    }
    anon_checks(ms, costs, v);
    if let Some(m) = find(ms, "cpu-loop-two-vs-one") {
        v.push(check(
            "CPU-bound loop, two CPUs at once / one alone (wall)",
            m,
            "1 (the simulator's CPUs run at once, independently)",
            |_| 1.0,
            costs,
            "above 1: the hypervisor does not run the two vCPUs at the same time all the time; every two-CPU figure here (shootdowns, contention) carries that",
        ));
    }
    if let Some(m) = find(ms, "clear-page-two-vs-one") {
        v.push(check(
            "clearing cache-cold pages, two CPUs at once / one alone (ns per page)",
            m,
            "1 (zero_page is charged the same whatever the other CPU does)",
            |_| 1.0,
            costs,
            "above 1 (with the CPU-bound loop near 1): the CPUs share memory bandwidth, so every new page (clear_page) costs more while the other CPU also writes memory",
        ));
    }
}

fn anon_checks(ms: &[Measurement], costs: &BTreeMap<String, Derived>, v: &mut Vec<Check>) {
    let anon = Setup::of(ms, "anon");
    anon.per_page(
        ms,
        costs,
        v,
        "anon reclaim to zram",
        "each reclaimer unmaps the other's pages: a shootdown to the other CPU per dirty folio (try_to_unmap_flush_dirty before pageout)",
    );
    if let (Some(two), Some(one)) = (
        find(ms, "reclaim-anon-two-cpus-cputime"),
        find(ms, "reclaim-anon-one-cpu-cputime"),
    ) {
        v.push(anon.ratio_check(
            "anon reclaim to zram, CPU time per page, two CPUs at once / one CPU",
            (two, one),
            costs,
            "thread CPU time; above 1 is contention (lru_lock, the zram/zsmalloc and memcg counters) and the IPIs of the pair's cross-reclaim",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(name: &str, samples: &[f64]) -> Measurement {
        Measurement::new(name, "ns/page", "synthetic", samples.to_vec()).unwrap()
    }

    fn cost(ns: f64) -> Derived {
        Derived::new(vec![ns], "synthetic", &["m"]).unwrap()
    }

    /// A small set-up (1024 pages) with this machine's IPI round trip put in.
    fn run() -> Vec<Check> {
        let ms = vec![
            m("reclaim-file-one-cpu", &[500.0]).observe("reclaim_pages", 1024u64),
            m("reclaim-file-one-cpu-cputime", &[500.0, 480.0]),
            m("reclaim-file-two-cpus-cputime", &[900.0, 960.0]),
            m("reclaim-file-two-cpus-wall", &[470.0]),
            m("reclaim-anon-one-cpu", &[7500.0]).observe("reclaim_pages", 1024u64),
            m("reclaim-anon-one-cpu-cputime", &[7500.0, 7400.0]),
            m("reclaim-anon-two-cpus-cputime", &[28000.0, 29000.0]),
            m("reclaim-anon-two-cpus-wall", &[14000.0]),
        ];
        let mut costs = BTreeMap::new();
        costs.insert("ipi_delivery".to_string(), cost(8900.0));
        costs.insert("ipi_handle".to_string(), cost(11300.0));
        let mut v = Vec::new();
        checks(&ms, &costs, &mut v);
        v
    }

    fn get<'a>(v: &'a [Check], name: &str) -> &'a Check {
        v.iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no check {name}"))
    }

    #[test]
    fn the_ratios_come_from_the_simulated_pair_and_slower_ipis_raise_the_anon_one() {
        let v = run();
        let file = get(&v, "reclaim CPU time per page, two CPUs at once / one CPU");
        assert!((file.measured - 1.9).abs() < 1e-9, "median of 1.8 and 2.0");
        // Contention in the model: above 1, below the host's 2 (no speed-up at all).
        assert!(
            file.sim_default > 1.05 && file.sim_default < 2.0,
            "{file:?}"
        );
        assert!(
            file.sim_charges.contains("workload.bytes=8192K"),
            "{}",
            file.sim_charges
        );
        let anon = get(
            &v,
            "anon reclaim to zram, CPU time per page, two CPUs at once / one CPU",
        );
        // The calibrated IPIs (20 µs a round trip against 1.3 µs by default) make each cross
        // shootdown dearer: the pair's ratio goes up with them.
        assert!(anon.sim_calibrated > anon.sim_default + 0.5, "{anon:?}");
        assert!(anon.sim_charges.contains("ipi_delivery, ipi_handle"));
        let wall = get(
            &v,
            "anon reclaim to zram, two CPUs at once, wall time per page (the slower)",
        );
        let one = get(&v, "anon reclaim to zram, one CPU, CPU time per page");
        assert!(wall.sim_calibrated > one.sim_calibrated, "{wall:?} {one:?}");
        assert!(v.iter().all(|c| c.sim_calibrated.is_finite()));
    }

    #[test]
    fn without_the_size_a_full_runs_is_assumed() {
        let ms = vec![m("reclaim-file-one-cpu", &[500.0])];
        assert_eq!(Setup::of(&ms, "file").pages, DEFAULT_PAGES);
        assert_eq!(Setup::of(&[], "anon").pages, DEFAULT_PAGES);
    }
}
