//! Breadth-first exhaustive exploration with a visited set.
//!
//! BFS rather than depth-first: with a visited set, a depth-bounded DFS can first reach a state
//! late in a long schedule, mark it visited, and then never explore its successors from a
//! shorter schedule — missing states within the bound. BFS reaches every state first at its
//! minimal depth, so a depth bound is exact, and the first violation found is a shortest one.
//! The visited set is an insertion-ordered hash set: its order *is* the BFS queue, and a parent
//! index per state rebuilds the schedule.

use crate::model::{Choice, Model, State, Violation};
use indexmap::IndexSet;
use std::hash::{BuildHasherDefault, Hasher};

/// A small multiplicative hasher (FxHash-like): states are short byte strings.
#[derive(Default)]
pub struct FxHasher(u64);

const K: u64 = 0xf135_7aea_2e62_a9c5;

impl FxHasher {
    #[inline]
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(26) ^ w).wrapping_mul(K);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().unwrap()));
        }
        let mut last = 0u64;
        for (i, b) in chunks.remainder().iter().enumerate() {
            last |= (*b as u64) << (8 * i);
        }
        self.add(last);
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(i as u64);
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(i as u64);
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0.rotate_left(20)
    }
}

pub struct Outcome {
    pub states: u64,
    pub transitions: u64,
    pub depth_reached: u32,
    pub exhausted: bool,
    pub truncated: bool,
    pub violation: Option<(Vec<Choice>, Violation)>,
}

/// `invariants`: also check the model's own consistency on every new state (panics on a
/// modelling error; used by the tests).
pub fn bfs(model: &Model, depth: Option<u32>, max_states: u64, invariants: bool) -> Outcome {
    let mut seen: IndexSet<State, BuildHasherDefault<FxHasher>> = IndexSet::default();
    let mut parent: Vec<(u32, Choice)> = Vec::new();
    let mut level: Vec<u16> = Vec::new();
    seen.insert(model.initial());
    parent.push((u32::MAX, Choice::Reclaim));
    level.push(0);
    let mut transitions = 0u64;
    let mut choices = Vec::new();
    let mut i = 0usize;
    let mut cut = false;
    let mut depth_reached = 0u32;
    let mut violation = None;
    let mut truncated = false;
    'outer: while i < seen.len() {
        let d = level[i] as u32;
        depth_reached = depth_reached.max(d);
        if depth.is_some_and(|b| d >= b) {
            // Successors would exceed the bound; note whether any exist.
            model.choices(&seen[i], &mut choices);
            cut |= !choices.is_empty();
            i += 1;
            continue;
        }
        let cur = seen[i].clone();
        model.choices(&cur, &mut choices);
        for &c in &choices {
            transitions += 1;
            let mut s = cur.clone();
            let (_, viol) = model.step(&mut s, c);
            if let Some(v) = viol {
                let mut sched = vec![c];
                let mut j = i;
                while parent[j].0 != u32::MAX {
                    sched.push(parent[j].1);
                    j = parent[j].0 as usize;
                }
                sched.reverse();
                violation = Some((sched, v));
                depth_reached = d + 1;
                break 'outer;
            }
            if invariants {
                if let Err(e) = model.invariants(&s) {
                    panic!("model invariant broken after {c:?}: {e}\n{s:?}");
                }
            }
            if seen.insert(s) {
                parent.push((i as u32, c));
                level.push((d + 1) as u16);
                if seen.len() as u64 >= max_states {
                    truncated = true;
                    depth_reached = d + 1;
                    break 'outer;
                }
            }
        }
        i += 1;
    }
    Outcome {
        states: seen.len() as u64,
        transitions,
        depth_reached,
        exhausted: !cut && !truncated && violation.is_none(),
        truncated,
        violation,
    }
}
