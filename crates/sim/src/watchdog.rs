//! A lockup detector for the engine (the simulator's kernel/watchdog.c): the engine loop must
//! make progress. Every [`CHECK_EVERY`] iterations it samples what the tasks have done (pages
//! touched, sweep positions, passes, finished tasks); if nothing moved over [`STALL_CHECKS`]
//! samples in a row the run is stuck — e.g. a scheduler tick costlier than `sim.tick`, so a CPU
//! does nothing but ticks while its clock runs on — and the engine stops with a report that
//! names the state instead of spinning for ever.

use crate::kernel::Kernel;

/// Engine iterations between two samples.
pub const CHECK_EVERY: u64 = 1 << 20;
/// Samples without progress before the run is declared stuck (~16M iterations, well under a second: a healthy run
/// makes progress every few iterations; ticks alone cannot take more than one per tick).
pub const STALL_CHECKS: u32 = 16;

#[derive(Default)]
pub struct Watchdog {
    iterations: u64,
    ticks: u64,
    last: Option<u64>,
    stalled_checks: u32,
}

/// A fingerprint of the tasks' progress: it changes whenever any task touches a page, moves its
/// sweep, completes a pass or finishes.
fn progress(k: &Kernel) -> u64 {
    k.tasks.iter().fold(0u64, |h, t| {
        h.wrapping_mul(0x100000001b3)
            .wrapping_add(t.pages_touched)
            .wrapping_add(t.cursor.rotate_left(17))
            .wrapping_add((t.phase as u64).rotate_left(34))
            .wrapping_add(t.passes.rotate_left(41))
            .wrapping_add(u64::from(t.done) << 63)
    })
}

impl Watchdog {
    /// Count one engine iteration (`tick`: it was a scheduler tick). Returns the report when
    /// the run is stuck.
    pub fn touch(&mut self, k: &Kernel, tick: bool) -> Option<String> {
        self.iterations += 1;
        self.ticks += u64::from(tick);
        if !self.iterations.is_multiple_of(CHECK_EVERY) {
            return None;
        }
        let p = progress(k);
        if self.last == Some(p) {
            self.stalled_checks += 1;
        } else {
            self.stalled_checks = 0;
            self.ticks = 0;
        }
        self.last = Some(p);
        (self.stalled_checks >= STALL_CHECKS).then(|| self.report(k))
    }

    fn report(&self, k: &Kernel) -> String {
        let window = u64::from(self.stalled_checks) * CHECK_EVERY;
        let mut s = format!(
            "simulation stuck: no task made progress in {window} engine steps ({} of them \
             scheduler ticks; sim.tick = {} ns)",
            self.ticks, k.cfg.tick_ns
        );
        if self.ticks * 2 > window {
            s.push_str(
                "\n  mostly ticks: a tick's own work (context switch, mm switch) outlasts \
                 sim.tick, so the CPU never reaches the task; use a longer sim.tick",
            );
        }
        for (i, c) in k.cpus.iter().enumerate().take(16) {
            s.push_str(&format!(
                "\n  CPU {i}: clock {} ns, next tick {} ns, running {}",
                c.clock,
                c.next_tick,
                c.curr.map_or("idle".to_string(), |t| format!("task {t}"))
            ));
        }
        for (i, t) in k.tasks.iter().enumerate().take(16) {
            let waits = if t.done {
                "done".to_string()
            } else if let Some(c) = t.cpu {
                format!("running on CPU {c}")
            } else {
                "waiting on a run queue".to_string()
            };
            s.push_str(&format!(
                "\n  task {i}{}: {waits}, page {} of [{}, {}), phase {}, {} pages touched",
                if t.kthread { " (kswapd)" } else { "" },
                t.cursor,
                t.start,
                t.end,
                t.phase,
                t.pages_touched
            ));
        }
        if k.tasks.len() > 16 {
            s.push_str(&format!("\n  ... and {} more tasks", k.tasks.len() - 16));
        }
        s
    }
}
