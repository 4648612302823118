//! `limit-reclaim`: calibrate's `contention` family in the model. Each reclaimer is a process
//! in the memcg, on its own CPU (0, 1, ...), that prepares its own pages: a file's clean,
//! unmapped page cache (read once, order-0 folios) or an anonymous region written once. Then
//! all of them lower memory.limit_in_bytes at the same simulated moment and each reclaims in
//! its own context until the usage is below the new limit (mem_cgroup_resize_max). The
//! reclaimer's mm stays loaded on its CPU throughout (it is in the write), so unmapping the
//! other reclaimers' anonymous pages sends them shootdowns.
//!
//! Throughput: the slowest writer's seconds; `extra` has the figures calibrate measures (CPU
//! time of the writes added and the slowest wall time, per page of usage dropped) and the
//! contention counters over the writes alone.

use super::file_mmap::data_file;
use super::{AccessModel, Outcome};
use crate::config::SimConfig;
use crate::engine::Engine;
use crate::kernel::{Backing, CpuId, Kernel, MmId};
use crate::mm::memory::Access;
use crate::mm::vmstat::VmEventItem::{self, *};
use reclaimlab_core::scenario::{LimitPages, LimitReclaim};
use reclaimlab_core::Scenario;
use serde_json::json;

const PAGE: u64 = 4096;

impl super::Workload for LimitReclaim {
    /// No task is stepped by the engine: `run` drives the preparation and the writes.
    fn access_model(&self, _k: &Kernel) -> anyhow::Result<AccessModel> {
        Ok(AccessModel::default())
    }

    /// One process per reclaimer (tasks 0..reclaimers, reclaimer i on CPU i), each with its
    /// own pages. The tasks are not run by the engine (`done`): `run` acts for them.
    fn fork(&self, scn: &Scenario, cfg: &SimConfig, e: &mut Engine) -> anyhow::Result<()> {
        if cfg.sched.background.is_some() {
            return Err(scn
                .source
                .err(
                    "machine.background_load.tasks",
                    "limit-reclaim runs no scheduler (its reclaimers are not stepped tasks), so \
                     it cannot run a foreign load beside them",
                )
                .into());
        }
        let pages = self.bytes / PAGE / self.reclaimers as u64;
        for i in 0..self.reclaimers {
            let mm = match self.pages {
                LimitPages::File => {
                    let file = data_file(&mut e.k, cfg, pages);
                    e.k.mm_alloc(pages, Backing::File(file), false)
                }
                LimitPages::Anon => e.k.mm_alloc(pages, Backing::Anon, true),
            };
            let t = e.k.task_new(mm, Some(i), 0, pages);
            e.k.tasks[t].done = true;
        }
        Ok(())
    }

    fn run(&self, e: &mut Engine, _duration_ns: u64) -> Outcome {
        let k = &mut e.k;
        let cpus: Vec<CpuId> = (0..self.reclaimers).collect();
        let mms: Vec<MmId> = (0..self.reclaimers).map(|t| k.tasks[t].mm).collect();
        if let Err(why) = prepare(k, &mms, self.pages) {
            let mut r = Outcome::new(k.cpus[0].clock as f64 / 1e9, 0.0, "reclaim_seconds");
            r.notes.push(why);
            return r;
        }
        let start = cpus.iter().map(|&c| k.cpus[c].clock).max().unwrap_or(0);
        for &c in &cpus {
            k.cpus[c].clock = start;
        }
        let before = Snapshot::take(k);
        let usage0 = k.memcg.usage;
        let max = usage0.saturating_sub(self.reclaim_bytes / PAGE).max(1);
        let w = mem_cgroup_resize_max(k, &cpus, max);
        let dropped = usage0 - k.memcg.usage;
        let per_page = |ns: u64| ns as f64 / dropped.max(1) as f64;
        let cpu_ns: Vec<u64> = w.iter().map(|w| w.end - start).collect();
        let wall = cpu_ns.iter().copied().max().unwrap_or(0);
        let mut r = Outcome::new(
            k.cpus[0].clock as f64 / 1e9,
            wall as f64 / 1e9,
            "reclaim_seconds",
        );
        r.notes.push(format!(
            "{} reclaimer(s) lowered the limit by {} pages; usage dropped {dropped} pages: \
             {:.0} ns of CPU per page (the writes added), {:.0} ns of wall per page (the slowest)",
            self.reclaimers,
            usage0 - max,
            per_page(cpu_ns.iter().sum()),
            per_page(wall)
        ));
        let gave_up = w.iter().filter(|w| w.failed).count();
        r.extra
            .insert("limit_reclaim_gave_up".into(), json!(gave_up));
        if let Some(f) = w.iter().position(|w| w.failed) {
            r.notes.push(format!(
                "reclaimer {f} gave up (a reclaim call freed nothing): the kernel's write \
                 returns EBUSY"
            ));
        }
        let x = &mut r.extra;
        x.insert("limit_reclaim_pages".into(), json!(dropped));
        x.insert(
            "limit_reclaim_cpu_ns_per_page".into(),
            json!(per_page(cpu_ns.iter().sum())),
        );
        x.insert(
            "limit_reclaim_wall_ns_per_page".into(),
            json!(per_page(wall)),
        );
        x.insert("limit_reclaimer_cpu_ns".into(), json!(cpu_ns));
        x.insert(
            "limit_reclaimer_pages".into(),
            json!(w.iter().map(|w| w.reclaimed).collect::<Vec<_>>()),
        );
        x.insert(
            "limit_reclaim_calls".into(),
            json!(w.iter().map(|w| w.calls).collect::<Vec<_>>()),
        );
        for (key, v) in before.delta(k) {
            x.insert(format!("limit_{key}"), json!(v));
        }
        r
    }
}

/// Each reclaimer prepares its pages on its own CPU (after a first run on the next one, below),
/// all at once: the CPU with the smallest clock does its next page (so the memcg's LRU
/// interleaves them as on the host). File: a read(2) of each page (clean, unmapped page cache;
/// calibrate writes and fsyncs it, which leaves the same folios, with buffer heads). Anon: a store to each page (the first-touch fault). Fails when a
/// page could not be prepared (the memcg OOM-killed its process: too little swap).
fn prepare(k: &mut Kernel, mms: &[MmId], pages: LimitPages) -> Result<(), String> {
    let nr_cpus = k.cpus.len();
    if nr_cpus > 1 {
        for (cpu, &mm) in mms.iter().enumerate() {
            // calibrate forks each reclaimer, which runs first where fork placed it and then
            // pins itself to its CPU: traced on the test machine (sched_switch), every child
            // ran on the other CPU before its own, so x86 keeps both CPUs in its mm_cpumask
            // and reclaim's batched flushes (mm = NULL) reach whichever CPU is not lazy.
            k.switch_mm((cpu + 1) % nr_cpus, Some(mm));
        }
    }
    for (cpu, &mm) in mms.iter().enumerate() {
        // Its process runs there from now on (the write keeps its mm loaded).
        k.switch_mm(cpu, Some(mm));
    }
    for cpu in mms.len()..nr_cpus {
        // A CPU without a reclaimer goes idle: lazy TLB on the mm it ran last.
        k.switch_mm(cpu, None);
    }
    let n = k.mms[mms[0]].ptes.len() as u64;
    let mut next = vec![0u64; mms.len()];
    while let Some(cpu) = (0..mms.len())
        .filter(|&c| next[c] < n)
        .min_by_key(|&c| (k.cpus[c].clock, c))
    {
        let vp = next[cpu];
        let a = match pages {
            LimitPages::File => {
                let a = k.filemap_rw(cpu, mms[cpu], vp, false);
                if let (Backing::File(file), true) =
                    (k.mms[mms[cpu]].backing, k.cfg.file_buffer_heads)
                {
                    // calibrate writes each page with write(2) and fsyncs: on ext4 every
                    // folio keeps the buffer heads the write gave it.
                    k.files[file].set_buffers(vp as usize, 1, true);
                }
                a
            }
            LimitPages::Anon => k.user_access(cpu, mms[cpu], vp, true),
        };
        if matches!(a, Access::Killed | Access::Blocked) {
            return Err(format!(
                "reclaimer {cpu} could not prepare page {vp} ({a:?}): the pages do not fit \
                 under memcg.limit with the swap there is; nothing was reclaimed"
            ));
        }
        next[cpu] += 1;
    }
    Ok(())
}

/// One writer of memory.limit_in_bytes.
struct Writer {
    cpu: CpuId,
    drained: bool,
    /// When its write returned.
    end: u64,
    done: bool,
    failed: bool,
    reclaimed: u64,
    calls: u64,
}

/// mem_cgroup_resize_max (mm/memcontrol-v1.c) written by every CPU in `cpus` at once: each
/// loops page_counter_set_max(max), which succeeds once usage <= max; the first failure
/// drains the per-CPU stocks (drain_all_stock), later ones call
/// try_to_free_mem_cgroup_pages(memcg, 1, ...), which reclaims SWAP_CLUSTER_MAX pages, and a
/// call that frees nothing ends the write (EBUSY). The writer with the smallest clock goes
/// next, one call at a time: the locks (locking.rs) and IPIs (smp.rs) place each call's
/// sections among the other's in simulated time. memcg_max_mutex (held only around
/// page_counter_set_max) and drain_all_stock's work are not charged.
fn mem_cgroup_resize_max(k: &mut Kernel, cpus: &[CpuId], max: u64) -> Vec<Writer> {
    let mut w: Vec<Writer> = cpus
        .iter()
        .map(|&cpu| Writer {
            cpu,
            drained: false,
            end: 0,
            done: false,
            failed: false,
            reclaimed: 0,
            calls: 0,
        })
        .collect();
    while let Some(i) = (0..w.len())
        .filter(|&i| !w[i].done)
        .min_by_key(|&i| (k.cpus[w[i].cpu].clock, w[i].cpu))
    {
        let cpu = w[i].cpu;
        if k.memcg.usage <= max {
            k.memcg.limit = max;
            w[i].done = true;
        } else if !w[i].drained {
            k.memcg.drain_all_stock();
            w[i].drained = true;
        } else {
            let r = k.try_to_free_mem_cgroup_pages(cpu, 1);
            w[i].reclaimed += r;
            w[i].calls += 1;
            if r == 0 {
                w[i].done = true;
                w[i].failed = true;
            }
        }
        w[i].end = k.cpus[cpu].clock;
    }
    w
}

/// The counters whose change over the writes `extra` reports.
struct Snapshot(Vec<(&'static str, u64)>);

const EVENTS: &[VmEventItem] = &[
    PGSCAN_ANON,
    PGSCAN_FILE,
    PGSTEAL_ANON,
    PGSTEAL_FILE,
    SMP_CALLS,
    SMP_CALLS_SHARING_IRQ,
    IPI_IRQ_OFF_DELAYED,
    IPI_IRQ_OFF_DELAY_NS,
    SMP_CALL_WAIT_NS,
    SMP_CALL_HANDLER_NS,
    SMP_CALL_HANDLER_IN_WAIT_NS,
    NR_TLB_LOCAL_FLUSH_ONE,
    NR_TLB_LOCAL_FLUSH_ALL,
];

impl Snapshot {
    fn take(k: &Kernel) -> Snapshot {
        let mut v: Vec<(&'static str, u64)> =
            EVENTS.iter().map(|&e| (e.name(), k.vmstat[e])).collect();
        v.push(("tlb_shootdowns", k.irq.tlb_shootdowns.iter().sum::<u64>()));
        v.push((
            "function_call_interrupts",
            k.irq.function_call_interrupts.iter().sum::<u64>(),
        ));
        v.extend(k.lock_stats());
        Snapshot(v)
    }

    /// Each counter's change since the snapshot.
    fn delta(&self, k: &Kernel) -> Vec<(&'static str, u64)> {
        let now = Snapshot::take(k);
        self.0
            .iter()
            .zip(now.0)
            .map(|(&(name, a), (_, b))| (name, b - a))
            .collect()
    }
}

/// What calibrate's `contention` family measures, from the model: the writes' CPU time added
/// and the slowest write's wall time, each per page of usage dropped.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Figures {
    pub cpu_ns_per_page: f64,
    pub wall_ns_per_page: f64,
}

/// The shipped `limit-reclaim` scenario with `sets`, simulated with `cost` in place of the
/// scenario's cost table (calibrate holds its measurements against this).
pub fn figures(sets: &[String], cost: &crate::cost::CostTable) -> anyhow::Result<Figures> {
    let scn = Scenario::load("limit-reclaim", sets, reclaimlab_core::Target::Sim)?;
    let cfg = SimConfig::from_scenario(&scn)?;
    let policy = crate::config::Policy::from_scenario(&scn)?;
    scn.finish()?;
    let (_, doc) = crate::simulate_with(
        &scn,
        cfg,
        policy,
        &crate::SimOptions::default(),
        &|k: &mut Kernel| k.cost = cost.clone(),
    )?;
    let run = &doc.runs[0];
    let get = |key: &str| {
        run.extra
            .get(key)
            .and_then(|v| v.as_f64())
            .filter(|_| run.extra.get("limit_reclaim_gave_up") == Some(&json!(0)))
            .ok_or_else(|| {
                anyhow::anyhow!("limit-reclaim did not finish: {}", run.notes.join("; "))
            })
    };
    Ok(Figures {
        cpu_ns_per_page: get("limit_reclaim_cpu_ns_per_page")?,
        wall_ns_per_page: get("limit_reclaim_wall_ns_per_page")?,
    })
}
