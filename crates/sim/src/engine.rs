//! The discrete-event core. Each CPU has its own virtual clock; the engine always steps the
//! busy CPU with the smallest clock (ties by CPU id), so the run is deterministic. A step is a
//! short stretch of the task's accesses: up to `sim.step_pages` pages through the TLB, ending
//! early at a page fault (which is handled in the step, including any direct reclaim on this
//! CPU) or at the CPU's next scheduler tick.
//!
//! Approximation: a step's state changes apply at once. Because the stepped CPU has the
//! minimum clock, every other CPU is at or after the step's start when an IPI reaches it; the
//! target is charged its handling time and the sender waits for the slowest ack
//! (arch/x86/tlb.rs). With `sim.interleave = "folio"` (the default), shrink_folio_list stops
//! after each folio (and after each pageout) at a preemption point where every other busy CPU
//! runs until it catches up with the reclaimer's clock ([`Kernel::reclaim_preempt`]), as it
//! would concurrently on hardware: their stores can meet the reclaimer's pending flushes
//! (what the lost-write oracle watches), and the pages they touch meanwhile are young when
//! reclaim reaches them. With `"step"` a direct-reclaim call is one step, so no other CPU
//! observes its intermediate states or runs during it (faster).

use crate::config::Interleave;
use crate::cputime::Spent;
use crate::kernel::{CpuId, Kernel, TaskId};
use crate::mm::memory::Access;
use crate::mm::vmstat::VmEventItem::*;
use crate::sched::RunQueues;
use crate::workload::{AccessModel, Sweep};
use rand::Rng;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::rc::Rc;

/// What the engine needs while the kernel runs: run queues and the workload's access model.
/// It lives in the Kernel so that a reclaim preemption point can step other CPUs.
#[derive(Default)]
pub struct Runner {
    pub rqs: RunQueues,
    pub model: Rc<AccessModel>,
    /// The run queues are lent out (a scheduler or kswapd call is in progress): no reclaim
    /// preemption window may open then, since its steps may need to schedule.
    pub rqs_out: bool,
    /// The reclaim preemption window's queue (kept to reuse its allocation).
    pub(crate) window: ClockQueue,
    /// The CPUs a window has parked, and a flag per CPU for the same set (kept across
    /// windows: a window parks CPUs often, and allocating or searching a list each time cost
    /// more than the window's steps on 48 CPUs).
    parked: Vec<CpuId>,
    is_parked: Vec<bool>,
}

pub struct Engine<'a> {
    pub k: Kernel,
    pub progress: Option<&'a dyn Fn(u64, u64)>,
}

impl<'a> Engine<'a> {
    pub fn new(mut k: Kernel, model: AccessModel) -> Engine<'a> {
        let n = k.nr_cpus();
        k.runner = Runner {
            rqs: RunQueues::new(n),
            model: Rc::new(model),
            rqs_out: false,
            window: ClockQueue::default(),
            parked: Vec::new(),
            is_parked: vec![false; n],
        };
        Engine { k, progress: None }
    }

    /// Place the tasks: pinned ones on their CPU, unpinned ones round-robin (what fork
    /// balancing, find_idlest_cpu, gives tasks that start together), then create the
    /// background load (asleep until its first period).
    pub fn place_tasks(&mut self) {
        let n = self.k.nr_cpus();
        for t in 0..self.k.tasks.len() {
            if self.k.tasks[t].done || self.k.sched.se[t].sleeping {
                // Finished, or not forked yet (a starter forks it: sched/fork.rs).
                continue;
            }
            let task = &self.k.tasks[t];
            let cpu = task.pinned.or(task.initial_cpu).unwrap_or(t % n);
            self.k.with_rqs(|k, rqs| k.enqueue(rqs, cpu, t, 0));
        }
        self.k.background_spawn();
    }

    /// Run until every busy CPU's clock reaches `until` (or no task is left).
    pub fn run_until(&mut self, until: u64, total: u64) {
        let mut next_progress = 0;
        let mut watchdog = crate::watchdog::Watchdog::default();
        let mut order = CpuOrder::default();
        loop {
            let cpu = order.next(&self.k);
            // A sleeping task's timer fires once every busy CPU has reached it.
            if let Some(at) = self.k.next_timer() {
                if at < until && cpu.is_none_or(|c| at <= self.k.cpus[c].clock) {
                    let t = self.k.sched.timers.first().map(|&(_, t)| t);
                    self.k.with_rqs(|k, rqs| k.run_next_timer(rqs));
                    if let Some(t) = t {
                        self.k.kworker_run_now(t);
                    }
                    continue;
                }
            }
            let Some(cpu) = cpu else { break };
            if until == u64::MAX && self.k.only_background_left() {
                // A run to completion ends with the workload, not with the foreign load.
                break;
            }
            let now = self.k.cpus[cpu].clock;
            if now >= until || self.k.stalled.is_some() {
                break;
            }
            let tick = now >= self.k.cpus[cpu].next_tick;
            if let Some(report) = watchdog.touch(&self.k, tick) {
                self.k.stalled = Some(report);
                break;
            }
            if now >= next_progress {
                if let Some(p) = self.progress {
                    p(now.min(total), total);
                }
                next_progress = now + self.k.cfg.progress_every_ns;
            }
            if now >= self.k.cpus[cpu].next_tick {
                self.k.with_rqs(|k, rqs| {
                    k.scheduler_tick(rqs, cpu);
                    if k.paranoid() {
                        k.check_sched(rqs, "after a tick");
                    }
                });
                continue;
            }
            // Writeback completions and the flusher's timers (mm/page_writeback.rs).
            self.k.writeback_poll(cpu);
            // The periodic memcg statistics flush (mm/memcontrol.rs).
            self.k.flush_memcg_stats_dwork(now);
            let t = self.k.cpus[cpu].curr.expect("busy CPU");
            if self.k.sched.se[t].class == crate::sched::Class::Background {
                self.k.with_rqs(|k, rqs| k.background_step(rqs, cpu, t));
            } else if self.k.sched.se[t].class == crate::sched::Class::Starter {
                self.k.with_rqs(|k, rqs| k.starter_step(rqs, cpu, t));
            } else if self.k.wb.flusher == Some(t) {
                self.k.with_rqs(|k, rqs| k.flusher_step(rqs, cpu));
            } else if self.k.tasks[t].kthread {
                self.k.with_rqs(|k, rqs| k.kswapd_step(rqs, cpu));
            } else {
                self.k.engine_step(cpu, t);
                self.k.sleep_after_engine_step(cpu, t);
            }
            // A wakeup_kswapd during the step places kswapd now (mm/kswapd.rs).
            self.k.with_rqs(|k, rqs| k.kthread_wakeups(rqs, cpu, now));
            // ... and a wakeup_flusher_threads the flusher thread.
            if self.k.wb.flusher_wake_pending {
                self.k.with_rqs(|k, rqs| k.flusher_wakeup(rqs, cpu, now));
            }
        }
        self.k.sched_account_running();
        self.k.with_rqs(|k, rqs| k.check_sched(rqs, "end of run"));
    }
}

/// Bits of a packed (clock, CPU) key that hold the CPU (machine.cpus is at most 4096).
const KEY_CPU_BITS: u32 = 16;

/// (clock, CPU) packed in one u64 that orders as the pair does: clocks stay below 2^48 ns (78
/// hours; run.duration is at most a day), so sorting and heap moves compare one word.
fn clock_key(clock: u64, cpu: CpuId) -> u64 {
    assert!(
        clock < 1 << (64 - KEY_CPU_BITS) && cpu < 1 << KEY_CPU_BITS,
        "clock {clock} or CPU {cpu} does not fit a packed key"
    );
    clock << KEY_CPU_BITS | cpu as u64
}

fn key_clock(key: u64) -> u64 {
    key >> KEY_CPU_BITS
}

fn key_cpu(key: u64) -> CpuId {
    (key & ((1 << KEY_CPU_BITS) - 1)) as CpuId
}

/// (clock, CPU) pairs in ascending order, taken from the front: a sorted vector and a cursor.
/// A CPU queued again has run ahead, so it usually goes near the back (a short move), and the
/// queue is built by sorting once: cheaper than a binary heap for the few CPUs a reclaim
/// preemption window runs, and not worse for many.
#[derive(Default)]
pub(crate) struct ClockQueue {
    v: Vec<u64>,
    head: usize,
}

impl ClockQueue {
    fn rebuild(&mut self, items: impl Iterator<Item = (u64, CpuId)>) {
        self.clear();
        self.v.extend(items.map(|(c, i)| clock_key(c, i)));
        self.v.sort_unstable();
    }

    fn clear(&mut self) {
        self.v.clear();
        self.head = 0;
    }

    /// The smallest clock queued (a lower bound: a CPU may have moved on).
    fn peek_clock(&self) -> Option<u64> {
        self.v.get(self.head).map(|&k| key_clock(k))
    }

    fn pop(&mut self) -> Option<(u64, CpuId)> {
        let k = self.v.get(self.head).copied()?;
        self.head += 1;
        Some((key_clock(k), key_cpu(k)))
    }

    fn push(&mut self, (clock, cpu): (u64, CpuId)) {
        let x = clock_key(clock, cpu);
        let at =
            self.head + crate::timeline::partition_point_back(&self.v[self.head..], |e| *e < x);
        self.v.insert(at, x);
    }
}

/// The busy CPUs by (clock, id), for the engine's "step the busy CPU with the smallest clock":
/// a lazy heap, as in the reclaim preemption window. Clocks only move forward, so an entry
/// whose CPU's clock has moved on is a lower bound and is pushed again with the clock; a CPU
/// only becomes busy in a context switch, after which the heap is built again. The same CPU
/// as a scan of every CPU, in O(log n) per step instead of O(n).
#[derive(Default)]
struct CpuOrder {
    heap: BinaryHeap<Reverse<u64>>,
    built_at: Option<u64>,
}

impl CpuOrder {
    /// The busy CPU with the smallest clock (ties by CPU id).
    fn next(&mut self, k: &Kernel) -> Option<CpuId> {
        if self.built_at != Some(k.context_switches) {
            self.built_at = Some(k.context_switches);
            self.heap.clear();
            for (i, c) in k.cpus.iter().enumerate() {
                if c.curr.is_some() {
                    self.heap.push(Reverse(clock_key(c.clock, i)));
                }
            }
        }
        while let Some(&Reverse(key)) = self.heap.peek() {
            let (clock, i) = (key_clock(key), key_cpu(key));
            let c = &k.cpus[i];
            debug_assert!(c.clock >= clock, "CPU {i}'s clock went back");
            if c.curr.is_none() {
                self.heap.pop();
            } else if c.clock != clock {
                let now = c.clock;
                // The top moves down: replace it in place.
                *self.heap.peek_mut().expect("top") = Reverse(clock_key(now, i));
            } else {
                return Some(i);
            }
        }
        None
    }
}

impl Kernel {
    /// Run `f` with the run queues (taken out of the kernel for the call).
    pub fn with_rqs<R>(&mut self, f: impl FnOnce(&mut Kernel, &mut RunQueues) -> R) -> R {
        let mut rqs = std::mem::take(&mut self.runner.rqs);
        let outer = std::mem::replace(&mut self.runner.rqs_out, true);
        let r = f(self, &mut rqs);
        self.runner.rqs_out = outer;
        self.runner.rqs = rqs;
        r
    }

    /// A preemption point inside reclaim on `cpu` (`sim.interleave = "folio"`): every other
    /// busy CPU runs its task until its clock reaches the reclaimer's, as it would have
    /// concurrently on real hardware. Reclaim entered by those CPUs meanwhile runs whole (no
    /// nested preemption), and their ticks wait until the window closes (a tick may migrate
    /// tasks, which must not move the reclaimer).
    #[inline]
    pub fn reclaim_preempt(&mut self, cpu: CpuId) {
        if self.cfg.interleave == Interleave::Folio && self.reclaim_window_may_open() {
            self.reclaim_preempt_window(cpu, false);
        }
    }

    /// The same window at shrink_folio_list's cond_resched(): a kernel thread woken on the
    /// reclaimer's own CPU meanwhile may run there too (sched/cond_resched.rs).
    #[inline]
    pub fn reclaim_cond_resched(&mut self, cpu: CpuId) {
        if self.cfg.interleave == Interleave::Folio {
            if self.reclaim_window_may_open() {
                self.reclaim_preempt_window(cpu, true);
            }
            // Also in a reclaim that runs inside another CPU's window (no nested window).
            if !self.runner.rqs_out && self.reclaim_tick_pending(cpu) {
                self.reclaim_tick_preempt(cpu);
            }
        }
    }

    /// No window inside a window (reclaim nested in one runs whole), and kswapd's passes (run
    /// with the run queues lent) stay whole. Tested before the call: most preemption points
    /// are in nested reclaim.
    #[inline]
    fn reclaim_window_may_open(&self) -> bool {
        !self.in_reclaim_preempt && !self.runner.rqs_out
    }

    #[inline(never)]
    fn reclaim_preempt_window(&mut self, cpu: CpuId, cond_resched: bool) {
        debug_assert!(self.reclaim_window_may_open());
        let Some(reclaimer) = self.cpus[cpu].curr else {
            return;
        };
        let until = self.cpus[cpu].clock;
        if self.window_idle(cpu, until) {
            return;
        }
        self.in_reclaim_preempt = true;
        // The CPUs to run, by (clock, id), smallest first: a lazy queue. Clocks only move
        // forward, so an entry whose CPU's clock has moved on since it was queued is a lower
        // bound and is queued again with the CPU's clock; an entry that matches is the
        // smallest of every CPU that may run. A CPU only becomes busy in a context switch,
        // which invalidates the queue (`context_switches`): it is built again from all CPUs.
        // Same choice, step for step, as scanning every CPU each time.
        let mut queue = std::mem::take(&mut self.runner.window);
        let mut parked = std::mem::take(&mut self.runner.parked);
        let mut is_parked = std::mem::take(&mut self.runner.is_parked);
        is_parked.resize(self.cpus.len(), false);
        let mut built_at = None;
        loop {
            if built_at != Some(self.context_switches) {
                built_at = Some(self.context_switches);
                queue.rebuild(self.cpus.iter().enumerate().filter_map(|(i, c)| {
                    (i != cpu && c.curr.is_some() && c.clock < until && !is_parked[i])
                        .then_some((c.clock, i))
                }));
            }
            // A sleeper whose sleep ends inside the window wakes in it, in time order as in
            // run_until, and runs beside the reclaimer (a worker back from its swap-in read is
            // running, not lazy, when the reclaimer's flush comes).
            if self.window_timer_due(cpu, until, queue.peek_clock()) {
                self.with_rqs(|k, rqs| k.run_next_timer(rqs));
                continue;
            }
            if let Some(c) = self.window_kthread_timer(cpu, cond_resched, until, queue.peek_clock())
            {
                self.with_rqs(|k, rqs| k.run_next_timer(rqs));
                if c == cpu {
                    self.run_in_reclaim(cpu, reclaimer);
                } else {
                    self.run_woken_kthread(c, None);
                }
                continue;
            }
            let Some((clock, c)) = queue.pop() else {
                break;
            };
            let now = self.cpus[c].clock;
            debug_assert!(now >= clock, "CPU {c}'s clock went back");
            let Some(t) = self.cpus[c].curr else {
                // Idle now; it can only become busy again through a context switch.
                continue;
            };
            if now != clock {
                if now < until {
                    queue.push((now, c));
                }
                continue;
            }
            if self.window_parks(c, t) {
                parked.push(c);
                is_parked[c] = true;
                continue;
            }
            self.engine_step(c, t);
            self.vmstat.count_vm_event(RECLAIM_PREEMPT_STEPS);
            // A step that ends in a sleep (a read, reclaim_throttle) blocks the task now, as
            // run_until does: it must not run on through its wait.
            self.sleep_after_engine_step(c, t);
            if self.swap.block.is_some() {
                // A swap-in read the step waits for puts the task to sleep now, not after
                // its next step (waits of the file paths are still taken after the window).
                self.sleep_after_engine_step(c, t);
            }
            let now = self.cpus[c].clock;
            if now < until {
                queue.push((now, c));
            }
        }
        queue.clear();
        self.runner.window = queue;
        for c in parked.drain(..) {
            is_parked[c] = false;
        }
        self.runner.parked = parked;
        self.runner.is_parked = is_parked;
        self.in_reclaim_preempt = false;
    }

    /// Whether a reclaim preemption window leaves `cpu` (running task `t`) parked until it
    /// closes: ticks wait for the window to close; kswapd is reclaim itself (no nesting); a
    /// background or starter task's step may block or fork (that needs the run queues).
    pub(crate) fn window_parks(&self, cpu: CpuId, t: TaskId) -> bool {
        self.cpus[cpu].clock >= self.cpus[cpu].next_tick
            || self.tasks[t].kthread
            || matches!(
                self.sched.se[t].class,
                crate::sched::Class::Background | crate::sched::Class::Starter
            )
    }

    /// Whether the window of `reclaimer` (whose clock is `until`) would do nothing: no timer
    /// is due by `until` and every CPU it would queue is one it parks. Nothing runs in such a
    /// window, so no CPU's state changes while it parks them one by one, and skipping it is
    /// the same (a CPU parked past a tick waits for each of the reclaimer's windows in turn:
    /// on 48 CPUs most windows are these).
    fn window_idle(&self, reclaimer: CpuId, until: u64) -> bool {
        if self
            .sched
            .timers
            .first()
            .is_some_and(|&(at, _)| at <= until)
        {
            return false;
        }
        self.cpus.iter().enumerate().all(|(i, c)| match c.curr {
            Some(t) if i != reclaimer && c.clock < until => self.window_parks(i, t),
            _ => true,
        })
    }

    /// After task `t`'s step on `cpu`: a wait its kernel work ended in (a device read,
    /// reclaim_throttle) puts it to sleep and frees its CPU (mm/page_writeback.rs), woken by
    /// the device's completion or by a timer.
    pub fn sleep_after_engine_step(&mut self, cpu: CpuId, t: TaskId) {
        if let Some((at, waker)) = self.take_sleep(cpu) {
            let c = &self.cpus[cpu];
            if c.curr == Some(t) && !self.tasks[t].done && at > c.clock {
                self.with_rqs(|k, rqs| k.block_task_woken_by(rqs, cpu, at, waker));
            }
        }
    }

    /// Whether the earliest timer fires inside the reclaim preemption window of `reclaimer`
    /// (whose clock is `until`): it is due (at or before `until` and the queued CPUs' smallest
    /// clock `head`), and its wake-up lands on an idle CPU other than the reclaimer's. A wake-up
    /// onto the reclaimer's or a busy CPU may preempt, a context switch that waits for the
    /// window to close; the timers after it wait too, in order.
    fn window_timer_due(&self, reclaimer: CpuId, until: u64, head: Option<u64>) -> bool {
        let Some(&(at, t)) = self.sched.timers.first() else {
            return false;
        };
        if at > until || head.is_some_and(|h| at > h) {
            return false;
        }
        let target = self.wake_target(&self.runner.rqs, t, self.timer_waker(t, at), at);
        target != reclaimer && self.cpus[target].curr.is_none()
    }

    /// One step of task `t` on `cpu`.
    pub fn engine_step(&mut self, cpu: CpuId, t: TaskId) {
        self.vmstat.count_vm_event(SIM_STEPS);
        let m = Rc::clone(&self.runner.model);
        let k = self;
        let mm = k.tasks[t].mm;
        let tick = k.cpus[cpu].next_tick;
        for _ in 0..k.cfg.step_pages {
            let task = &k.tasks[t];
            let n = task.end - task.start;
            let i = task.cursor - task.start;
            let (vp, write) = if let Some(y) = &m.ycsb {
                k.charge(cpu, y.op_ns, Spent::User);
                y.next_op(&mut k.rng)
            } else if m.random {
                let start = task.start;
                let vp = match k.tasks[t].retry_vp.take() {
                    Some(vp) => vp,
                    None => start + k.rng.gen_range(0..n),
                };
                (vp, m.random_write)
            } else if let Sweep::Pass(p) = m.sweeps[task.phase] {
                let rng = &mut k.rng;
                let off = p.page(i, n, &mut |n| rng.gen_range(0..n));
                (task.start + off, p.write)
            } else {
                (task.cursor, m.sweeps[task.phase].writes())
            };
            let write = match m.sweeps[k.tasks[t].phase] {
                Sweep::Mixed(p) => u64::from(k.rng.gen::<u32>()) < p,
                _ => write,
            };
            let sweep = (!m.random).then(|| m.sweeps[k.tasks[t].phase]);
            let a = match sweep {
                Some(Sweep::Populate) => k.populate_read(cpu, mm, vp),
                Some(Sweep::Pass(p)) => k.user_access_ns(cpu, mm, vp, write, u64::from(p.ns)),
                _ if m.ycsb.as_ref().is_some_and(|y| y.fd) => k.filemap_rw(cpu, mm, vp, write),
                _ if m.byte_touch => k.user_access_ns(cpu, mm, vp, write, k.cost.touch_line),
                _ => k.user_access(cpu, mm, vp, write),
            };
            if a == Access::Killed {
                if m.random && k.sleep_pending(cpu) {
                    // Not killed: the fault's charge sleeps in reclaim_throttle and the
                    // fault completes after it.
                    k.tasks[t].retry_vp = Some(vp);
                }
                // Restarted by exit_mmap; the next step starts the new process.
                break;
            }
            if a == Access::Blocked {
                // folio_lock in the fault path: the folio is under reclaim on another CPU.
                // The task waits (a short spin stands in for the sleep) and retries.
                k.charge(cpu, k.cost.folio_lock_wait, Spent::FolioLockWait);
                break;
            }
            let task = &mut k.tasks[t];
            if sweep != Some(Sweep::Populate) {
                task.pages_touched += 1;
            }
            let units = match sweep {
                Some(Sweep::WriteUnits(u)) => u64::from(u),
                Some(Sweep::Pass(p)) => u64::from(p.units_at(i, n)),
                _ if write => m.bogo_units_per_store,
                _ => 0,
            };
            task.bogo_units += units;
            if units > 0 && !m.random {
                if task.bogo_units_by_phase.len() < m.sweeps.len() {
                    task.bogo_units_by_phase.resize(m.sweeps.len(), 0);
                }
                task.bogo_units_by_phase[task.phase] += units;
            }
            if !m.random {
                task.cursor += 1;
                if task.cursor - task.start == m.sweeps[task.phase].len(n) {
                    task.cursor = task.start;
                    if task.ns_by_phase.len() < m.sweeps.len() {
                        task.ns_by_phase.resize(m.sweeps.len(), 0);
                    }
                    let now = k.cpus[cpu].clock;
                    task.ns_by_phase[task.phase] += now.saturating_sub(task.phase_entered_ns);
                    task.phase_entered_ns = now;
                    task.phase += 1;
                    if task.phase == m.sweeps.len() {
                        task.phase = 0;
                        task.passes += 1;
                        if m.one_cycle {
                            task.done = true;
                            task.done_at = Some(k.cpus[cpu].clock);
                            k.with_rqs(|k, rqs| k.schedule(rqs, cpu));
                            return;
                        }
                    }
                    let phase = task.phase;
                    k.mms[mm].data_phase = phase;
                }
            }
            if a == Access::Fault || k.cpus[cpu].clock >= tick {
                break;
            }
        }
    }
}
