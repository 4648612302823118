//! kswapd (mm/vmscan.c: wakeup_kswapd, kswapd, kswapd_try_to_sleep, balance_pgdat,
//! kswapd_shrink_node): the node's background reclaimer, a kernel thread.
//!
//! kswapd is a task with `kthread = true`. The scheduler runs it like any other task, so it
//! shares a CPU with a reader (round-robin at the tick); a context switch to it is
//! enter_lazy_tlb, so its CPU keeps the previous task's mm loaded and is lazy: batched
//! (mm = NULL) flushes skip it, and its own flushes go out as IPIs to the CPUs in the unmapped
//! mms' cpumasks. A pass of balance_pgdat's priority loop is one shrink_node; between passes
//! the node is rechecked, as balance_pgdat does at the top of each. With reclaim's preemption
//! points (`sim.interleave = "folio"`, classic LRU) one engine step of kswapd is one round of
//! shrink_lruvec's loop, which ends in cond_resched(): the pass is kept in [`KswapdPass`] and
//! the engine's tick and wake-up checks decide, as at any step's end, whether kswapd goes on
//! or another task runs first. Otherwise a whole pass is one step. One node, so one kswapd;
//! its cpumask (cpumask_of_node) is every CPU.

use crate::config::{Interleave, Patch};
use crate::kernel::{CpuId, Kernel, TaskId};
use crate::mm::memcontrol::MAX_RECLAIM_RETRIES;
use crate::mm::vmpressure::Vmpr;
use crate::mm::vmscan::{LruvecScan, ScanControl, DEF_PRIORITY, SWAP_CLUSTER_MAX};
use crate::mm::vmstat::{Place, VmEventItem::*};
use crate::sched::RunQueues;

#[derive(Clone, Debug, Default)]
pub struct Kswapd {
    /// The kswapd task (None: no kswapd, e.g. memcg-only workloads).
    pub task: Option<TaskId>,
    /// Woken: on a run queue or running (not waiting on kswapd_wait).
    pub running: bool,
    /// wakeup_kswapd ran while kswapd slept; the engine places it after the current step.
    pub wake_pending: bool,
    /// The CPU kswapd last ran on (the wakeup places it there: select_task_rq's prev_cpu).
    pub prev_cpu: CpuId,
    /// balance_pgdat state: sc.priority and sc.nr_reclaimed of the current call.
    pub priority: i32,
    pub run_reclaimed: u64,
    /// pgdat->kswapd_failures: balance_pgdat calls that reclaimed nothing in a row.
    pub failures: u32,
    /// The current wakeup's time (its counters are KSWAPD_*, mm/vm_event_item.rs).
    pub woken_at: u64,
    /// The shrink_node pass kswapd was preempted in (or stepped out of) at shrink_lruvec's
    /// cond_resched(); its next step resumes it.
    pub pass: Option<KswapdPass>,
}

/// A kswapd pass between two rounds of shrink_lruvec's loop: kswapd_shrink_node's
/// scan_control and the loop's state.
#[derive(Clone, Debug)]
pub struct KswapdPass {
    pub sc: ScanControl,
    pub scan: LruvecScan,
}

impl Kernel {
    /// Create the node's kswapd thread (asleep; kthread_run at boot, on CPU 0).
    pub fn kswapd_run(&mut self) -> TaskId {
        let t = self.task_new(usize::MAX, None, 0, 0);
        self.tasks[t].kthread = true;
        self.sched.se[t].class = crate::sched::Class::Kthread;
        self.sched.se[t].sleeping = true;
        self.kswapd = Kswapd {
            task: Some(t),
            priority: DEF_PRIORITY,
            ..Default::default()
        };
        t
    }

    /// wakeup_kswapd from the allocator's slow path on `cpu`: nothing if kswapd is awake,
    /// the node is hopeless (kswapd_failures ≥ MAX_RECLAIM_RETRIES) or already balanced.
    pub fn wakeup_kswapd(&mut self, _cpu: CpuId) {
        let k = &self.kswapd;
        if k.task.is_none() || k.running || k.wake_pending {
            return;
        }
        if k.failures >= MAX_RECLAIM_RETRIES || self.pgdat_balanced() {
            return;
        }
        self.kswapd.wake_pending = true;
        self.vmstat.count_vm_event(KSWAPD_WAKEUPS);
    }

    /// try_to_wake_up for a pending kswapd wakeup (called by the engine between steps, the
    /// allocating CPU `waker` being the waker): select_task_rq_fair places it (sched/fair.rs)
    /// and it preempts a task that has had its slice there.
    pub fn kthread_wakeups(&mut self, rqs: &mut RunQueues, waker: CpuId, now: u64) {
        if !self.kswapd.wake_pending {
            return;
        }
        let t = self.kswapd.task.expect("a pending wakeup has a kswapd");
        self.kswapd.wake_pending = false;
        self.kswapd.running = true;
        self.kswapd.priority = DEF_PRIORITY;
        self.kswapd.run_reclaimed = 0;
        self.vmstat.count_vm_event(PAGEOUTRUN);
        self.kswapd.woken_at = now;
        if self.sched.se[t].last_cpu.is_none() {
            // kthread_run at boot: its first CPU.
            self.sched.se[t].last_cpu = Some(self.kswapd.prev_cpu);
        }
        self.try_to_wake_up(rqs, t, waker, now);
    }

    /// One engine step of kswapd on `cpu`: sleep if the node is balanced, else a pass of
    /// balance_pgdat's priority loop, or (preemption points on) one round of it.
    pub fn kswapd_step(&mut self, rqs: &mut RunQueues, cpu: CpuId) {
        let t0 = self.cpus[cpu].clock;
        self.vmstat.count_vm_event(KSWAPD_STEPS);
        if self.cpus[cpu].is_lazy {
            self.vmstat.count_vm_event(KSWAPD_STEPS_LAZY);
        }
        self.kswapd.prev_cpu = cpu;
        let mut pass = match self.kswapd.pass.take() {
            Some(pass) => pass,
            None => {
                if self.pgdat_balanced() {
                    self.kswapd_try_to_sleep(rqs, cpu);
                    return;
                }
                // kswapd_age_node would deactivate anon pages here when the inactive anon
                // list is low; the workload that runs kswapd has no anon pages, so it is not
                // modelled. kswapd_shrink_node: reclaim up to the high watermark (one zone).
                let mut sc = ScanControl::new(
                    self.pgdat.wmark_high.max(SWAP_CLUSTER_MAX),
                    self.kswapd.priority,
                );
                // Global reclaim: the root memcg's vmpressure (memcg_to_vmpressure(NULL)).
                sc.vmpr = Vmpr::Root;
                if !self.kswapd_preemptible() {
                    let (scanned, stolen) = self.shrink_node_counted(cpu, &mut sc);
                    self.vmstat.count_vm_events(PGSCAN_KSWAPD, scanned);
                    self.vmstat.count_vm_events(PGSTEAL_KSWAPD, stolen);
                    self.vmstat
                        .count_vm_events(KSWAPD_CPU_NS, self.cpus[cpu].clock - t0);
                    self.kswapd_pass_done(rqs, cpu, &sc);
                    self.kswapd_whole_pass_tick(rqs, cpu, self.cpus[cpu].clock - t0);
                    return;
                }
                self.prepare_scan_control(&mut sc);
                let scan = self.shrink_lruvec_start(&sc);
                KswapdPass { sc, scan }
            }
        };
        // One round of shrink_lruvec's loop; it ends in cond_resched(), where the step ends.
        let scanned = self.vmstat[PGSCAN_ANON] + self.vmstat[PGSCAN_FILE];
        let stolen = self.vmstat[PGSTEAL_ANON] + self.vmstat[PGSTEAL_FILE];
        let more = self.shrink_lruvec_round(cpu, &mut pass.sc, &mut pass.scan);
        if !more {
            self.shrink_lruvec_finish(cpu, &mut pass.sc, &pass.scan);
            // The rest of shrink_node after the lruvec (the pass's sc started at zero).
            self.shrink_node_vmpressure(cpu, &pass.sc, 0, 0);
        }
        let scanned = self.vmstat[PGSCAN_ANON] + self.vmstat[PGSCAN_FILE] - scanned;
        let stolen = self.vmstat[PGSTEAL_ANON] + self.vmstat[PGSTEAL_FILE] - stolen;
        self.vmstat.count_vm_events(PGSCAN_KSWAPD, scanned);
        self.vmstat.count_vm_events(PGSTEAL_KSWAPD, stolen);
        self.vmstat
            .count_vm_events(KSWAPD_CPU_NS, self.cpus[cpu].clock - t0);
        if more {
            self.kswapd.pass = Some(pass);
        } else {
            self.kswapd_pass_done(rqs, cpu, &pass.sc);
        }
    }

    /// Whether kswapd's pass stops at shrink_lruvec's cond_resched() (reclaim's preemption
    /// points on; MGLRU's loop is not split, so its pass stays one step).
    fn kswapd_preemptible(&self) -> bool {
        self.cfg.interleave == Interleave::Folio && !self.has(Patch::Mglru)
    }

    /// The end of a shrink_node pass (balance_pgdat's loop body after kswapd_shrink_node):
    /// raise the priority, and at its end count a failure or sleep if the node is hopeless.
    fn kswapd_pass_done(&mut self, rqs: &mut RunQueues, cpu: CpuId, sc: &ScanControl) {
        self.kswapd.run_reclaimed += sc.nr_reclaimed;
        // Raise the priority if the pass scanned less than the target or reclaimed nothing.
        if sc.nr_scanned < sc.nr_to_reclaim || sc.nr_reclaimed == 0 {
            self.kswapd.priority -= 1;
        }
        if self.kswapd.priority < 1 {
            // balance_pgdat returns; kswapd_try_to_sleep finds the node unbalanced and kswapd
            // calls it again from DEF_PRIORITY.
            if self.kswapd.run_reclaimed == 0 {
                self.kswapd.failures += 1;
            }
            self.snapshot_refaults();
            self.kswapd.priority = DEF_PRIORITY;
            self.kswapd.run_reclaimed = 0;
            self.vmstat.count_vm_event(PAGEOUTRUN);
        }
        if self.kswapd.failures >= MAX_RECLAIM_RETRIES {
            // Hopeless: direct reclaim is left to do the work.
            self.kswapd_try_to_sleep(rqs, cpu);
        }
    }

    /// A whole pass in one step (no preemption points) may overrun the tick.
    fn kswapd_whole_pass_tick(&mut self, rqs: &mut RunQueues, cpu: CpuId, ran: u64) {
        if self.kswapd.running && self.cpus[cpu].curr == self.kswapd.task {
            self.long_step_tick(rqs, cpu, ran);
        }
    }

    /// kswapd_try_to_sleep: the end of balance_pgdat (snapshot_refaults, the flusher for
    /// dirty folios it tagged), then sleep on kswapd_wait until the next wakeup_kswapd. The
    /// kernel first naps HZ/10 and sleeps fully only if the node is still balanced then; a
    /// wakeup_kswapd during the nap wakes it just as in the full sleep, so the model sleeps at
    /// once (KSWAPD_*_WMARK_HIT_QUICKLY are not counted).
    fn kswapd_try_to_sleep(&mut self, rqs: &mut RunQueues, cpu: CpuId) {
        self.snapshot_refaults();
        if !self.writeback_queue.is_empty() {
            self.wakeup_flusher_threads(cpu);
        }
        self.kswapd.running = false;
        self.vmstat.count_vm_events(
            KSWAPD_AWAKE_NS,
            self.cpus[cpu].clock.saturating_sub(self.kswapd.woken_at),
        );
        self.schedule(rqs, cpu);
    }
}

/// The kswapd / global-reclaim figures of a run, under `extra` (only when the node model ran).
pub fn report(
    k: &Kernel,
    secs: f64,
    extra: &mut std::collections::BTreeMap<String, serde_json::Value>,
) {
    if !k.pgdat.enabled {
        return;
    }
    let j = |v: u64| serde_json::Value::from(v);
    let f = serde_json::Value::from;
    let p = &k.pgdat;
    extra.extend(k.vmstat.json(Place::Kswapd));
    let secs_of = |ns: u64| f(ns as f64 / 1e9);
    extra.insert(
        "kswapd_cpu_seconds".into(),
        secs_of(k.vmstat[KSWAPD_CPU_NS]),
    );
    extra.insert(
        "kswapd_awake_seconds".into(),
        secs_of(k.vmstat[KSWAPD_AWAKE_NS]),
    );
    extra.insert("min_free_kbytes".into(), j(p.min_free_kbytes));
    extra.insert(
        "watermarks_pages".into(),
        serde_json::json!({"managed": p.managed, "min": p.wmark_min, "low": p.wmark_low, "high": p.wmark_high}),
    );
    let tlb: u64 = k.irq.tlb_shootdowns.iter().sum();
    let cal: u64 = k.irq.function_call_interrupts.iter().sum();
    let steal = k.vmstat[PGSTEAL_ANON] + k.vmstat[PGSTEAL_FILE];
    let rate = |v: u64| f(if secs > 0.0 { v as f64 / secs } else { 0.0 });
    extra.insert("tlb_shootdowns_per_sec".into(), rate(tlb));
    extra.insert("function_call_interrupts_per_sec".into(), rate(cal));
    extra.insert("pgsteal_per_sec".into(), rate(steal));
    extra.insert(
        "tlb_shootdowns_per_pgsteal".into(),
        f(if steal > 0 {
            tlb as f64 / steal as f64
        } else {
            0.0
        }),
    );
}
