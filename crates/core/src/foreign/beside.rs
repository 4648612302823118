//! The machine's other tasks beside a declared foreign load (`validate --background-from-host`
//! on a configuration that sets `machine.background_load`).
//!
//! bench starts the declared load on the host for each run, so the run's foreign record
//! (`runs[].foreign`) counts its tasks (threads named `rl-load-N`) with every other task outside
//! the memcg; given to the model as it is, the declared load would run twice. Here bench's load
//! tasks are taken out of the user class, and what is left (bench's own threads, the machine's
//! agents, other users' shells and builds) becomes `machine.background_other`, beside the
//! declared load; the kernel threads stay `machine.background_kthreads`.
//!
//! The record keeps the busiest tasks' CPU time (`top`) but not their timeslices, so a load
//! task's runs are not known exactly: it is put on a CPU at least once for each period it wakes
//! in, and that many are taken out. Preemptions of its bursts add runs the record cannot
//! separate, so the other tasks' runs derived here are an upper bound (their period a lower
//! bound).

use super::{background_load, median, records, BackgroundFromHost, ForeignLoad};
use crate::background::{is_load_comm, BackgroundLoad};

/// `f` less bench's tasks of `load` that it lists (a run's record can miss one: then only the
/// listed ones are taken out).
pub fn without_load(f: &ForeignLoad, load: &BackgroundLoad) -> ForeignLoad {
    let mut out = f.clone();
    let u = &mut out.user;
    let (ours, rest): (Vec<_>, Vec<_>) = u.top.drain(..).partition(|(c, _)| is_load_comm(c));
    u.top = rest;
    let n = ours.len() as u64;
    let cpu: f64 = ours.iter().map(|(_, s)| s).sum();
    u.tasks_ran = u.tasks_ran.saturating_sub(n);
    u.cpu_seconds = (u.cpu_seconds - cpu).max(0.0);
    u.timeslices = u
        .timeslices
        .saturating_sub(n * wakeups(load, f.window_seconds));
    // The load's tasks are spread round-robin over its own sessions.
    u.groups = u.groups.saturating_sub(n.min(load.groups as u64));
    // The record does not say on which CPU the load tasks' time was.
    u.cpu_seconds_by_last_cpu.clear();
    out
}

/// The fewest times a task of `load` is put on a CPU in `window` seconds: once a period it
/// wakes in (a hog, duty 1, never sleeps: once).
fn wakeups(load: &BackgroundLoad, window: f64) -> u64 {
    if load.duty >= 1.0 {
        return 1;
    }
    (window.max(0.0) * 1e9 / load.period_ns as f64).floor() as u64
}

/// The median of a document's records (valid runs', as [`super::of_doc`]) each without
/// `load`'s tasks; None when no run has a record.
pub fn of_doc(d: &crate::ResultDoc, load: &BackgroundLoad) -> Option<ForeignLoad> {
    let rest: Vec<ForeignLoad> = records(d)
        .into_iter()
        .map(|f| without_load(f, load))
        .collect();
    median(&rest.iter().collect::<Vec<_>>())
}

/// The other tasks of `f` (already without the load) as the simulator's foreign load:
/// the user tasks as `machine.background_other`, the kernel threads as
/// `machine.background_kthreads` (see [`background_load`]). None when nothing else ran.
pub fn background_beside(f: &ForeignLoad) -> Option<BackgroundFromHost> {
    background_load(f).map(|b| BackgroundFromHost {
        beside_load: true,
        ..b
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::foreign::ForeignClass;

    fn load() -> BackgroundLoad {
        BackgroundLoad {
            tasks: 2,
            duty: 0.3,
            period_ns: 20_000_000,
            cpus: None,
            groups: 2,
            nice: 0,
            group_nice: 0,
            kthread: false,
        }
    }

    /// A 15-s window with bench's two load tasks (4.5 CPU-s each) and three other tasks.
    fn record() -> ForeignLoad {
        ForeignLoad {
            window_seconds: 15.0,
            user: ForeignClass {
                tasks_ran: 5,
                cpu_seconds: 9.3,
                timeslices: 2000,
                groups: 4,
                cpu_seconds_by_last_cpu: vec![4.6, 4.7],
                top: vec![
                    ("rl-load-0".into(), 4.5),
                    ("rl-load-1".into(), 4.5),
                    ("rl-loaded".into(), 0.2),
                    ("bash".into(), 0.1),
                ],
                ..Default::default()
            },
            kthreads: ForeignClass {
                tasks_ran: 10,
                cpu_seconds: 0.06,
                timeslices: 2400,
                cpu_seconds_by_last_cpu: vec![0.015, 0.045],
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn benchs_load_tasks_leave_the_user_class_and_the_rest_stays() {
        let f = without_load(&record(), &load());
        let u = &f.user;
        assert_eq!(u.tasks_ran, 3);
        assert!((u.cpu_seconds - 0.3).abs() < 1e-9, "{}", u.cpu_seconds);
        // 15 s / 20 ms = 750 wake-ups each.
        assert_eq!(u.timeslices, 2000 - 1500);
        assert_eq!(u.groups, 2);
        assert_eq!(u.top.len(), 2);
        assert!(u.cpu_seconds_by_last_cpu.is_empty());
        // Kernel threads are not bench's: untouched.
        assert_eq!(f.kthreads, record().kthreads);
        let b = background_beside(&f).unwrap();
        assert!(b.beside_load && b.kthreads.is_some());
        // 0.3 CPU-s over 3 tasks x 15 s; 15 s x 3 / 500 runs = 90 ms.
        assert_eq!(b.tasks, 3);
        assert!((b.duty - 0.3 / 45.0).abs() < 1e-12);
        assert_eq!(b.period_ns, 90_000_000);
        let sets = b.sets();
        assert_eq!(sets[0], "machine.background_other.tasks=3");
        assert!(
            sets.iter()
                .all(|s| !s.starts_with("machine.background_load")),
            "the declared load is left as it is: {sets:?}"
        );
    }

    #[test]
    fn a_record_that_missed_a_load_task_loses_only_the_listed_one() {
        let mut r = record();
        r.user.top.remove(1);
        r.user.tasks_ran = 4;
        r.user.cpu_seconds = 4.8;
        r.user.timeslices = 1250;
        let u = without_load(&r, &load()).user;
        assert_eq!(u.tasks_ran, 3);
        assert!((u.cpu_seconds - 0.3).abs() < 1e-9);
        assert_eq!(u.timeslices, 500);
        // A record with fewer runs than the load's wake-ups does not underflow.
        r.user.timeslices = 100;
        assert_eq!(without_load(&r, &load()).user.timeslices, 0);
    }

    #[test]
    fn only_the_load_leaves_nothing_but_the_kernel_threads() {
        let mut r = record();
        r.user.top.truncate(2);
        r.user.tasks_ran = 2;
        r.user.cpu_seconds = 9.0;
        let b = background_beside(&without_load(&r, &load())).unwrap();
        assert_eq!(b.tasks, 0);
        assert_eq!(b.sets()[0], "machine.background_other.tasks=0");
        r.kthreads = Default::default();
        assert_eq!(background_beside(&without_load(&r, &load())), None);
    }
}
