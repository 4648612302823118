//! Foreign load on the machine (`machine.background_load`): tasks of other programs that wake
//! every `period`, run for `duty` of it and sleep again, on the given CPUs. Each is a process
//! of its own (an mm with nothing mapped that matters here), so running it switches the CPU
//! away from the workload's mm: it competes for CPUs, takes part in load balancing and
//! wake-up placement, and its CPU drops out of flush IPIs for the workload's mms while it
//! runs (should_flush_tlb). A quiet machine is `tasks = 0` (the default). The tasks run at
//! `nice` in `groups` sessions of their own (autogroups at `group_nice`, autogroup.rs).
//! `machine.background_other` is a second such set beside it (the machine's other user tasks,
//! in sessions after the load's): the two differ only in who runs them on the host.
//!
//! Kernel threads that run on the machine's CPUs (`machine.background_kthreads`: per-CPU
//! kworkers such as the block layer's kblockd on a device's interrupt CPU) are the same
//! periodic bursts, one task bound to each CPU given a share (kthread_bind: a per-CPU
//! worker pool's threads run only there), in the root task group, with no mm of their own:
//! context_switch's enter_lazy_tlb keeps the previous mm loaded and the CPU lazy. So they do
//! not take a CPU out of a flush's IPI set the way a process does, but they make it busy for
//! wake-up placement and preempt what runs there.
//!
//! The system workqueue's per-CPU kworkers (workqueue.rs) are such threads too, woken by the
//! items queued on their CPU instead of a duty cycle.

use super::autogroup::{nice_to_weight, WORKLOAD_GROUP};
use super::{Class, RunQueues};
use crate::cpumask::CpuMask;
use crate::cputime::Spent;
use crate::kernel::{Backing, CpuId, Kernel, TaskId};

/// The longest stretch of a background burst taken in one engine step: below an IPI's round
/// trip (~2 us bare metal, ~20 us in a KVM guest), so a flush sent during a burst sees it.
const BURST_SLICE_NS: u64 = 2_000;

pub use reclaimlab_core::background::{BackgroundLoad, MAX_TASKS};

/// A background task's burst in progress.
#[derive(Clone, Debug, Default)]
pub struct BgState {
    pub task: TaskId,
    /// Start of the current period.
    pub period_start: u64,
    /// Run time left in this period's burst.
    pub left_ns: u64,
    /// Its CPU time (sum_exec_runtime, the running stretch included) at the end of its last
    /// step: what the CPU was charged while it stayed current in between (interrupts it
    /// took) is burst time too.
    pub seen_runtime: u64,
    /// The load it belongs to.
    pub set: BgSet,
    /// The block layer's kworker on a one-queue swap device's interrupt CPU: woken by that
    /// device's completions (kblockd_wake), not by a timer of its own.
    pub on_completion: bool,
    /// A workqueue kworker between its wake-up and its next sleep.
    pub awake: bool,
}

/// Which foreign load a background task belongs to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BgSet {
    /// `machine.background_load`.
    #[default]
    Load,
    /// `machine.background_other`.
    Other,
    /// `machine.background_kthreads`: its index in `Sched::kthreads`.
    Kthreads(usize),
    /// A system workqueue pool's kworker (workqueue.rs): it runs the items queued on its
    /// CPU, not bursts of a duty cycle.
    Workqueue,
    /// A kblockd pool's kworker (kblockd.rs): it runs the hardware queue runs queued on its
    /// CPU.
    Kblockd,
    /// ksoftirqd (softirq.rs): it runs the softirqs left pending on its CPU.
    Ksoftirqd,
}

impl Kernel {
    /// Create the background tasks, asleep, their first wake-ups staggered over one period.
    pub fn background_spawn(&mut self) {
        for (set, b) in self.sched.kthreads.clone().into_iter().enumerate() {
            let cpu = b
                .cpus
                .as_ref()
                .and_then(|l| l.first().copied())
                .unwrap_or(0);
            // A per-CPU worker: bound to its CPU, no mm (kthreads run on the borrowed one).
            // A timer-wheel thread (the RCU grace-period kthread) is unbound: it starts there.
            let timer = set >= self.sched.timer_kthreads_from;
            let t = self.task_new(usize::MAX, (!timer).then_some(cpu), 0, 1);
            self.tasks[t].kthread = true;
            self.tasks[t].timer_wheel = timer;
            self.background_task_init(t, &b, cpu, BgSet::Kthreads(set), 0);
            if self.swap_irq_fixed_cpu() == Some(cpu) && !timer {
                // Armed from time 0; the first completion on its CPU wakes it.
                self.sched.timers.remove(&(0, t));
                self.sched
                    .bg_state
                    .last_mut()
                    .expect("just added")
                    .on_completion = true;
            }
        }
        // The foreign sessions follow the workload's (autogroup.rs): the load's, then the
        // other tasks'.
        let mut first_group = WORKLOAD_GROUP + 1;
        let sets = [
            (BgSet::Load, self.sched.background.clone()),
            (BgSet::Other, self.sched.other.clone()),
        ];
        for (set, b) in sets {
            if let Some(b) = b {
                self.background_spawn_user(&b, set, first_group);
                first_group += b.groups;
            }
        }
    }

    /// One user-task load's processes, each in one of `b.groups` sessions from `first_group`.
    /// The load was started before the workload, at a time unrelated to it: where in its
    /// period it is when the workload starts is drawn from `run.seed` (its own stream, so the
    /// workload's draws do not move); its tasks keep their stagger within the period.
    fn background_spawn_user(&mut self, b: &BackgroundLoad, set: BgSet, first_group: usize) {
        use rand::{Rng, SeedableRng};
        let n = self.nr_cpus();
        let salt = match set {
            BgSet::Load => 0x6c6f_6164,
            _ => 0x6f74_6872,
        };
        let phase = rand_chacha::ChaCha8Rng::seed_from_u64(self.seed ^ salt)
            .gen_range(0..b.period_ns.max(1));
        for i in 0..b.tasks {
            let mm = self.mm_alloc(1, Backing::Anon, false);
            let t = self.task_new(mm, None, 0, 1);
            self.sched.se[t].group = first_group + i % b.groups;
            let first_cpu = match &b.cpus {
                Some(l) => {
                    let mut m = CpuMask::new(n);
                    l.iter().for_each(|&c| m.set(c));
                    self.sched.se[t].allowed = Some(m);
                    // Its first CPU: spread over the allowed ones.
                    l[i % l.len()]
                }
                None => i % n,
            };
            let first = phase + b.period_ns * i as u64 / b.tasks as u64;
            self.background_task_init(t, b, first_cpu, set, first);
        }
    }

    /// A background task's scheduler state: asleep until `first`, at `b`'s nice, last on
    /// `cpu`.
    fn background_task_init(
        &mut self,
        t: TaskId,
        b: &BackgroundLoad,
        cpu: CpuId,
        set: BgSet,
        first: u64,
    ) {
        let se = &mut self.sched.se[t];
        se.class = Class::Background;
        se.sleeping = true;
        se.avg.avg = 0;
        se.weight = nice_to_weight(b.nice);
        se.last_cpu = Some(cpu);
        self.sched.bg_state.push(BgState {
            task: t,
            period_start: first,
            left_ns: b.run_ns(),
            seen_runtime: 0,
            set,
            on_completion: false,
            awake: false,
        });
        self.sched.timers.insert((first, t));
    }

    /// A workqueue pool's kworker for `cpu` (workqueue.rs, kblockd.rs): bound there, no mm, at
    /// `nice` in the root task group, asleep until work is queued.
    pub(crate) fn kworker_spawn(&mut self, cpu: CpuId, nice: i32, set: BgSet) -> TaskId {
        let t = self.task_new(usize::MAX, Some(cpu), 0, 1);
        self.tasks[t].kthread = true;
        let se = &mut self.sched.se[t];
        se.class = Class::Background;
        se.sleeping = true;
        se.avg.avg = 0;
        se.weight = nice_to_weight(nice);
        se.last_cpu = Some(cpu);
        self.sched.bg_state.push(BgState {
            task: t,
            set,
            ..Default::default()
        });
        t
    }

    /// One engine step of a workqueue kworker: worker_thread runs the pool's items one by one
    /// (process_one_work), in slices as a burst runs, and sleeps when the list is empty. The
    /// first item after a wake-up carries the worker loop's own time (`kworker_run`).
    fn kworker_step(&mut self, rqs: &mut RunQueues, cpu: CpuId, i: usize) {
        if self.sched.bg_state[i].left_ns == 0 {
            let woke = !self.sched.bg_state[i].awake;
            let Some(ns) = self.process_one_work(cpu) else {
                self.sched.bg_state[i].awake = false;
                self.block_task(rqs, cpu, None);
                return;
            };
            let st = &mut self.sched.bg_state[i];
            st.awake = true;
            st.left_ns = ns + if woke { self.cost.kworker_run } else { 0 };
        }
        let run = self.background_slice(cpu, self.sched.bg_state[i].left_ns);
        self.charge(cpu, run, Spent::Workqueue);
        self.sched.bg_state[i].left_ns -= run;
    }

    /// How much of `left` ns a kernel thread's step runs: to the tick, in slices.
    pub(crate) fn background_slice(&self, cpu: CpuId, left: u64) -> u64 {
        let now = self.cpus[cpu].clock;
        let to_tick = match self.cpus[cpu].next_tick.saturating_sub(now) {
            0 => BURST_SLICE_NS,
            d => d,
        };
        left.min(to_tick).min(BURST_SLICE_NS)
    }

    /// One engine step of a background task: run until its burst ends or the tick, then
    /// sleep to the next period (or at once, if it fell a whole period behind); with
    /// `duty = 1` it never sleeps.
    pub fn background_step(&mut self, rqs: &mut RunQueues, cpu: CpuId, t: TaskId) {
        let i = self
            .sched
            .bg_state
            .iter()
            .position(|s| s.task == t)
            .expect("background state");
        let b = match self.sched.bg_state[i].set {
            BgSet::Workqueue => return self.kworker_step(rqs, cpu, i),
            BgSet::Kblockd => return self.kblockd_step(rqs, cpu, i),
            BgSet::Ksoftirqd => return self.ksoftirqd_step(rqs, cpu, i),
            BgSet::Kthreads(set) => self.sched.kthreads[set].clone(),
            BgSet::Load => self.sched.background.clone().expect("background task"),
            BgSet::Other => self.sched.other.clone().expect("background task"),
        };
        let now = self.cpus[cpu].clock;
        // Past the tick only inside a reclaimer's step (sched/cond_resched.rs): the tick waits
        // for the step's end, so the burst goes on in slices.
        let to_tick = match self.cpus[cpu].next_tick.saturating_sub(now) {
            0 => BURST_SLICE_NS,
            d => d,
        };
        // In slices: while the burst runs its CPU has the task's mm loaded and is not lazy, so
        // another CPU's flushes in that window must see it (and an IPI still in flight when the
        // burst ends meets an idle CPU: flush_tlb_func sends it to init_mm). A burst taken in
        // one step would hide that window from every other CPU.
        //
        // A burst is CPU time as the task's own clock counts it (CLOCK_THREAD_CPUTIME_ID, what
        // bench's foreign-load tasks time their bursts by): on a kernel without
        // CONFIG_IRQ_TIME_ACCOUNTING (the test machine's) the interrupts a task takes while it
        // runs (call-function handlers, their flushes) are its time, so they shorten what is
        // left of its burst instead of stretching it.
        let runtime = {
            let se = &self.sched.se[t];
            se.sum_exec_runtime + now.saturating_sub(se.run_start)
        };
        let st = &mut self.sched.bg_state[i];
        let taken = runtime.saturating_sub(st.seen_runtime).min(st.left_ns);
        st.left_ns -= taken;
        let run = st.left_ns.min(to_tick).min(BURST_SLICE_NS);
        self.charge(cpu, run, Spent::Other);
        let st = &mut self.sched.bg_state[i];
        st.left_ns -= run;
        st.seen_runtime = runtime + run;
        if st.left_ns > 0 {
            return;
        }
        let now = self.cpus[cpu].clock;
        if b.duty >= 1.0 {
            // A CPU hog (stress-ng --cpu) never sleeps: its next burst follows at once.
            st.period_start = now;
            st.left_ns = b.run_ns();
            return;
        }
        let mut next = st.period_start + b.period_ns;
        while next + b.period_ns <= now {
            next += b.period_ns;
        }
        st.period_start = next;
        st.left_ns = b.run_ns();
        if st.on_completion {
            // Asleep until a completion after `next` queues work for it (kblockd_wake).
            self.block_task(rqs, cpu, None);
            return;
        }
        let wake = next.max(now);
        self.block_task(rqs, cpu, Some(wake));
    }

    /// A completion of the disk (a swap-in, or a page-cache read on the same device) on `cpu`
    /// at `now` has just woken the task waiting for it; the same completion wakes the block
    /// layer's kworker there if its period has come round.
    ///
    /// blk-mq ends the request in BLOCK_SOFTIRQ on the interrupt's CPU (a one-queue device
    /// raises it there: blk_mq_complete_request_remote): the bio's end_io first
    /// (end_swap_bio_read → folio_end_read wakes the waiter), then freeing the request, whose
    /// blk_mq_sched_restart reruns a queue that had to wait asynchronously
    /// (blk_mq_run_hw_queue(hctx, true) → kblockd_mod_delayed_work_on(WORK_CPU_UNBOUND): on a
    /// per-CPU workqueue, this CPU). So the waiter is placed before the kworker is runnable,
    /// and both are runnable before the CPU leaves the interrupt: one pick decides which runs
    /// first (EEVDF's earliest deadline; kblockd is WQ_HIGHPRI, nice -20, so its deadline comes
    /// first). How often the queue needs the
    /// restart the model does not know: the kworker keeps its share and slice, only the start
    /// of each run is tied to a completion.
    pub(crate) fn kblockd_wake(&mut self, rqs: &mut RunQueues, cpu: CpuId, now: u64) -> bool {
        let Some(t) = self
            .sched
            .bg_state
            .iter()
            .find(|s| {
                s.on_completion
                    && s.period_start <= now
                    && self.sched.se[s.task].sleeping
                    && self.sched.se[s.task].last_cpu == Some(cpu)
            })
            .map(|s| s.task)
        else {
            return false;
        };
        self.try_to_wake_up(rqs, t, cpu, now);
        let fresh = self.cpus[cpu]
            .curr
            .is_some_and(|c| c != t && self.sched.se[c].run_start >= now);
        if fresh {
            // The CPU was idle when the interrupt came: it picks among everything it woke,
            // with no running entity to protect.
            self.cancel_protect_slice(cpu);
            self.resched(rqs, cpu, true);
        }
        true
    }
}
