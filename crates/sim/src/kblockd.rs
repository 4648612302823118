//! kblockd (block/blk-core.c: the block layer's WQ_HIGHPRI per-CPU workqueue) running a
//! hardware queue asynchronously: blk_mq_run_hw_queue(hctx, true) queues hctx->run_work,
//! whose blk_mq_run_work_fn dispatches what the I/O scheduler holds.
//!
//! A task's own run of the queue dispatches what it submits. A write that finds virtio-blk's
//! ring full stops the queue (drivers/virtio_blk.rs), and waits with every later request
//! until a completion restarts it: virtblk_done's blk_mq_start_stopped_hw_queues, with
//! async = true, on the completion's CPU (kblockd_mod_delayed_work_on with WORK_CPU_UNBOUND
//! queues on the local CPU's pool; one hardware queue: blk_mq_hctx_next_cpu gives
//! WORK_CPU_UNBOUND). The pool's kworker (kworker/N:xH-kblockd) is bound there and runs at
//! nice -20, so it usually preempts what runs there (check_preempt_wakeup_fair), after the
//! completion's softirq has woken the task that waited for it.
//!
//! The model keeps each CPU's pending runs as the completion times that queue them, with the
//! requests each dispatches; a run queued while one is pending is the same run
//! (WORK_STRUCT_PENDING), so a wake-up takes every run due by then. A run costs
//! `kblockd_run`, `blk_dispatch_request` per request (the submitter paid the rest of
//! `swap_submit_request`) and `kworker_run` after a sleep. When the device starts the
//! requests the model does not change: it serves them in submission order
//! (page_writeback.rs `blk_submit`).
//!
//! Not modelled: runs queued by a plug flushed when its task sleeps (blk_flush_plug from
//! schedule runs the queue asynchronously, on the sleeping task's CPU) and restarts from the
//! BLOCK softirq (blk_mq_sched_restart after a dispatch that ran out of tags or budget).

use std::collections::BTreeMap;

use crate::cputime::Spent;
use crate::kernel::{CpuId, Kernel, TaskId};
use crate::mm::vmstat::VmEventItem::*;
use crate::sched::background::BgSet;
use crate::sched::RunQueues;
use crate::workqueue::PoolWorkers;

/// The kblockd pools the model has used, per CPU.
#[derive(Clone, Debug, Default)]
pub struct Kblockd {
    /// Per CPU: the pool's kworker, once a run was queued there.
    pub worker: PoolWorkers,
    /// Per CPU: when the queued runs fall due (the completions that queued them), and the
    /// requests each dispatches.
    due: Vec<BTreeMap<u64, u64>>,
    /// Per CPU: the wake-up timer armed for a sleeping worker.
    armed: Vec<Option<u64>>,
}

impl Kernel {
    /// blk_mq_run_hw_queue(hctx, async = true) from a completion on `cpu` at `at`: a run of
    /// the queue on `cpu`'s kblockd pool, which dispatches `requests` more.
    pub fn kblockd_run_hw_queue(&mut self, cpu: CpuId, at: u64, requests: u64) {
        let n = self.nr_cpus();
        let kb = &mut self.kblockd;
        if kb.worker.0.is_empty() {
            kb.worker = PoolWorkers(vec![None; n]);
            kb.due = vec![BTreeMap::new(); n];
            kb.armed = vec![None; n];
        }
        let queued = !kb.due[cpu].contains_key(&at);
        *kb.due[cpu].entry(at).or_insert(0) += requests;
        if !queued {
            return;
        }
        self.vmstat.count_vm_event(KBLOCKD_QUEUED);
        let t = match self.kblockd.worker.0[cpu] {
            Some(t) => t,
            None => {
                // WQ_HIGHPRI: the pool's workers run at nice -20.
                let t = self.kworker_spawn(cpu, -20, BgSet::Kblockd);
                self.kblockd.worker.0[cpu] = Some(t);
                t
            }
        };
        if self.sched.se[t].sleeping {
            self.kblockd_arm(cpu, t);
        }
    }

    /// A sleeping worker's one timer: at its earliest pending run.
    fn kblockd_arm(&mut self, cpu: CpuId, t: TaskId) {
        let next = self.kblockd.due[cpu].keys().next().copied();
        if next == self.kblockd.armed[cpu] {
            return;
        }
        if let Some(old) = self.kblockd.armed[cpu].take() {
            self.sched.timers.remove(&(old, t));
        }
        if let Some(at) = next {
            self.sched.timers.insert((at, t));
            self.kblockd.armed[cpu] = Some(at);
        }
    }

    /// One engine step of a kblockd kworker: every run due by now is one blk_mq_run_work_fn
    /// (the pending ones merged), taken in slices; with none due it sleeps until the next.
    pub(crate) fn kblockd_step(&mut self, rqs: &mut RunQueues, cpu: CpuId, i: usize) {
        if self.sched.bg_state[i].left_ns == 0 {
            let now = self.cpus[cpu].clock;
            let due = &mut self.kblockd.due[cpu];
            let later = due.split_off(&(now + 1));
            let ran = !due.is_empty();
            let requests: u64 = due.values().sum();
            *due = later;
            let woke = !self.sched.bg_state[i].awake;
            if !ran {
                let t = self.sched.bg_state[i].task;
                self.sched.bg_state[i].awake = false;
                self.kblockd.armed[cpu] = None;
                self.block_task(rqs, cpu, None);
                self.kblockd_arm(cpu, t);
                return;
            }
            self.vmstat.count_vm_event(KBLOCKD_RUNS);
            let st = &mut self.sched.bg_state[i];
            st.awake = true;
            st.left_ns = self.cost.kblockd_run
                + requests * self.cost.blk_dispatch_request
                + if woke { self.cost.kworker_run } else { 0 };
        }
        let run = self.background_slice(cpu, self.sched.bg_state[i].left_ns);
        self.charge(cpu, run, Spent::Workqueue);
        self.sched.bg_state[i].left_ns -= run;
    }
}
