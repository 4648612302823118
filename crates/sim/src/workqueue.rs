//! The system workqueue (kernel/workqueue.c, system_wq, "events") for the work items the
//! model queues: vmpressure's (mm/vmpressure.rs).
//!
//! system_wq is a per-CPU workqueue: __queue_work puts an item queued with WORK_CPU_UNBOUND
//! on the pool of the CPU that queues it (raw_smp_processor_id), unless the item is still
//! running on another CPU's pool, where it then goes to keep it non-reentrant. Queueing sets
//! WORK_STRUCT_PENDING and fails while it is set; the worker clears it when it starts the
//! item (process_one_work). kick_pool wakes the pool's idle kworker (kworker/N:M-events),
//! a thread bound to that CPU, which runs the pool's items one after another and sleeps when
//! the list is empty.
//!
//! The kworker is a `machine.background_kthreads`-style task (sched/background.rs: a kernel
//! thread with no mm, in the root task group, at nice 0), created at the first item queued on
//! its CPU. Its wake-up is a try_to_wake_up from the queueing CPU at the time of queueing (a
//! timer due then, so the engine wakes it in time order: inside a reclaim preemption window
//! at the reclaimer's next cond_resched, sched/cond_resched.rs); whether it preempts the
//! task running there is the scheduler's decision (check_preempt_wakeup_fair). Each item
//! costs its measured time; each run of the worker between two sleeps also costs the
//! worker loop's own time (`kworker_run`).

use std::collections::VecDeque;

use crate::kernel::{CpuId, Kernel, TaskId};
use crate::mm::vmpressure::Vmpr;
use crate::mm::vmstat::VmEventItem::*;
use crate::sched::background::BgSet;

/// A work item the model queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Work {
    /// A vmpressure struct's work (vmpressure_work_fn).
    Vmpressure(Vmpr),
}

/// Each work item's state bits.
#[derive(Clone, Debug, Default)]
struct WorkState {
    /// WORK_STRUCT_PENDING.
    pending: bool,
    /// The CPU whose pool is executing it (find_worker_executing_work).
    running_on: Option<CpuId>,
}

/// system_wq's per-CPU pools and the model's work items.
#[derive(Clone, Debug, Default)]
pub struct Workqueue {
    /// Per CPU: the pool's worklist.
    worklist: Vec<VecDeque<Work>>,
    /// Per CPU: the pool's kworker, once an item has been queued there.
    pub worker: PoolWorkers,
    /// Per CPU: the item its kworker is executing.
    current: Vec<Option<Work>>,
    /// The state of vmpressure's items (memcg, root).
    state: [WorkState; 2],
}

fn slot(w: Work) -> usize {
    match w {
        Work::Vmpressure(Vmpr::Memcg) => 0,
        Work::Vmpressure(Vmpr::Root) => 1,
    }
}

/// Per CPU: a workqueue pool's kworker, once work was queued there.
#[derive(Clone, Debug, Default)]
pub struct PoolWorkers(pub Vec<Option<TaskId>>);

impl PoolWorkers {
    /// Whether `t` is one of the pools' kworkers (the result's placement calls them so).
    pub fn is_worker_task(&self, t: TaskId) -> bool {
        self.0.contains(&Some(t))
    }

    /// Whether `t` is `cpu`'s pool's kworker.
    #[inline]
    pub fn is_worker(&self, cpu: CpuId, t: TaskId) -> bool {
        self.0.get(cpu) == Some(&Some(t))
    }
}

impl Kernel {
    /// schedule_work → queue_work_on(WORK_CPU_UNBOUND, system_wq, work) from `cpu`. Returns
    /// false if the item was already pending.
    pub fn schedule_work(&mut self, cpu: CpuId, work: Work) -> bool {
        let n = self.nr_cpus();
        let wq = &mut self.workqueue;
        if wq.worklist.is_empty() {
            wq.worklist = vec![VecDeque::new(); n];
            wq.worker = PoolWorkers(vec![None; n]);
            wq.current = vec![None; n];
        }
        let st = &mut wq.state[slot(work)];
        if st.pending {
            return false;
        }
        st.pending = true;
        // __queue_work: the local CPU's pool, or the pool still executing the item.
        let target = st.running_on.unwrap_or(cpu);
        wq.worklist[target].push_back(work);
        let first = wq.worklist[target].len() == 1;
        self.vmstat.count_vm_event(WORKQUEUE_ITEMS);
        let t = match self.workqueue.worker.0[target] {
            Some(t) => t,
            None => {
                let t = self.kworker_spawn(target, 0, BgSet::Workqueue);
                self.workqueue.worker.0[target] = Some(t);
                t
            }
        };
        // kick_pool: an idle worker is woken; a busy one finds the item when its current
        // one ends, and an asleep one with items already queued has its wake-up coming.
        if first && self.sched.se[t].sleeping {
            let now = self.cpus[cpu].clock;
            self.sched.timers.insert((now, t));
        }
        true
    }

    /// worker_thread's next item on `cpu`'s pool: process_one_work clears PENDING, marks
    /// the item executing here and runs its function. Returns the item's cost, or None when
    /// the list is empty (the worker goes to sleep).
    pub fn process_one_work(&mut self, cpu: CpuId) -> Option<u64> {
        let wq = &mut self.workqueue;
        if let Some(done) = wq.current[cpu].take() {
            wq.state[slot(done)].running_on = None;
        }
        let work = wq.worklist[cpu].pop_front()?;
        let st = &mut wq.state[slot(work)];
        st.pending = false;
        st.running_on = Some(cpu);
        wq.current[cpu] = Some(work);
        self.vmstat.count_vm_event(WORKQUEUE_RUNS);
        match work {
            Work::Vmpressure(v) => {
                self.vmpressure_work_fn(v);
                Some(self.cost.vmpressure_work)
            }
        }
    }

    /// A kworker whose wake-up just preempted the task on its CPU runs its items now, whole,
    /// as at a reclaimer's cond_resched (sched/cond_resched.rs). Its CPU's clock is usually
    /// ahead of the wake-up (the queueing step went on), so left to the engine's order the
    /// kworker would stay current, its CPU lazy to every other CPU's flush, until the others
    /// caught up: far longer than the few microseconds it runs.
    pub(crate) fn kworker_run_now(&mut self, t: TaskId) {
        let Some(cpu) = self.tasks[t].pinned else {
            return;
        };
        if self.workqueue.worker.is_worker(cpu, t) && self.cpus[cpu].curr == Some(t) {
            self.run_woken_kthread(cpu, None);
        }
    }

    /// Whether a work item is pending (queued and not yet started).
    pub fn work_pending(&self, work: Work) -> bool {
        self.workqueue.state[slot(work)].pending
    }

    /// Items waiting on `cpu`'s pool.
    pub fn worklist_len(&self, cpu: CpuId) -> usize {
        self.workqueue.worklist.get(cpu).map_or(0, |l| l.len())
    }
}
