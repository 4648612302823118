//! When each CPU was not lazy: the stretches, already simulated, in which
//! cpu_tlbstate_shared.is_lazy was false (a user mm loaded, or init_mm).
//!
//! should_flush_tlb reads a target's is_lazy at the moment the sender looks. The engine runs
//! CPUs in turn, so a target may already have been simulated past the sender's time: it may
//! have gone idle (lazy) after that moment, where the kernel's sender still found it running
//! and sent it the call, or come back from idle, where the kernel's sender found it lazy. The
//! sender reads the state at its own time from here.

use std::collections::VecDeque;

use crate::kernel::MmId;

/// Stretches remembered per CPU; a sender further behind than these reads the state now.
const STRETCHES: usize = 32;

/// One stretch of a CPU not being lazy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Active {
    pub from: u64,
    /// When it ended (u64::MAX: it has not).
    pub to: u64,
    /// The mm loaded (None: init_mm).
    pub mm: Option<MmId>,
    /// It ended in enter_lazy_tlb (not a switch to another mm): from `section_from`, the start
    /// of __schedule's interrupts-off section, a call reaching the CPU is taken lazy.
    pub lazy_after: bool,
    pub section_from: u64,
}

/// What a CPU's history says about time `t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StateAt {
    /// Older than what is remembered, or nothing remembered.
    Unknown,
    Lazy,
    Active(Active),
}

#[derive(Clone, Debug, Default)]
pub struct LazyHistory {
    v: VecDeque<Active>,
}

impl LazyHistory {
    /// The CPU is not lazy from `t` with `mm` loaded (switch_mm_irqs_off, or init_mm).
    pub fn begin(&mut self, t: u64, mm: Option<MmId>) {
        if let Some(last) = self.v.back_mut() {
            if last.to == u64::MAX {
                if last.mm == mm {
                    return;
                }
                last.to = t;
                last.section_from = t;
            }
        }
        self.v.push_back(Active {
            from: t,
            to: u64::MAX,
            mm,
            lazy_after: false,
            section_from: u64::MAX,
        });
        if self.v.len() > STRETCHES {
            self.v.pop_front();
        }
    }

    /// enter_lazy_tlb at `t`, __schedule having disabled interrupts at `section_from`.
    pub fn end(&mut self, t: u64, section_from: u64) {
        if let Some(last) = self.v.back_mut() {
            if last.to == u64::MAX {
                last.to = t;
                last.lazy_after = true;
                last.section_from = section_from;
            }
        }
    }

    pub fn at(&self, t: u64) -> StateAt {
        for p in self.v.iter().rev() {
            if p.from <= t {
                return if t < p.to {
                    StateAt::Active(*p)
                } else {
                    StateAt::Lazy
                };
            }
        }
        StateAt::Unknown
    }

    /// Is `p` the last stretch, ended by going lazy (the CPU is still in that lazy period)?
    pub fn lazy_since(&self, p: &Active) -> bool {
        self.v.back() == Some(p) && p.lazy_after
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_state_at_a_time() {
        let mut h = LazyHistory::default();
        assert_eq!(h.at(5), StateAt::Unknown);
        h.begin(10, Some(1));
        h.end(20, 15);
        h.begin(30, Some(1));
        assert_eq!(h.at(5), StateAt::Unknown);
        assert!(matches!(h.at(12), StateAt::Active(p) if p.to == 20 && p.section_from == 15));
        assert_eq!(h.at(25), StateAt::Lazy);
        assert!(matches!(h.at(40), StateAt::Active(p) if p.to == u64::MAX));
        // A switch to another mm without going lazy ends the stretch without a section.
        h.begin(50, Some(2));
        assert!(matches!(h.at(40), StateAt::Active(p) if p.to == 50 && !p.lazy_after));
        h.end(60, 58);
        let StateAt::Active(p) = h.at(55) else {
            panic!("active at 55")
        };
        assert!(h.lazy_since(&p));
        h.begin(70, None);
        assert!(!h.lazy_since(&p));
    }
}
