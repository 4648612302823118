//! Breadth-first exhaustive exploration with a visited set.
//!
//! BFS rather than depth-first: with a visited set, a depth-bounded DFS can first reach a state
//! late in a long schedule, mark it visited, and then never explore its successors from a
//! shorter schedule — missing states within the bound. BFS reaches every state first at its
//! minimal depth, so a depth bound is exact, and the first violation found is a shortest one.
//! The visited set holds each state's compact key (crate::visited); the queue holds only the
//! states not yet expanded, and a parent index per state rebuilds the schedule.

use crate::model::{Choice, Model, State, Violation};
use crate::visited::{KeyLayout, KeySet};
use std::collections::VecDeque;

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
    let layout = KeyLayout::new(model);
    let run = match layout.words() {
        1 => bfs_keyed::<1>,
        2 => bfs_keyed::<2>,
        3 | 4 => bfs_keyed::<4>,
        _ => bfs_keyed::<8>,
    };
    run(model, &layout, depth, max_states, invariants)
}

/// [`bfs`] with `N`-word keys.
fn bfs_keyed<const N: usize>(
    model: &Model,
    layout: &KeyLayout,
    depth: Option<u32>,
    max_states: u64,
    invariants: bool,
) -> Outcome {
    let mut seen: KeySet<N> = KeySet::default();
    // States found but not yet expanded, in order, with their depth; the one at the front is
    // state number `i` (states are numbered as found).
    let mut queue: VecDeque<(State, u16)> = VecDeque::new();
    let mut parent: Vec<(u32, Choice)> = Vec::new();
    let initial = model.initial();
    seen.insert(layout.key(&initial));
    queue.push_back((initial, 0));
    parent.push((u32::MAX, Choice::Reclaim));
    let mut transitions = 0u64;
    let mut choices = Vec::new();
    let mut succ = Vec::new();
    let mut i = 0usize;
    let mut cut = false;
    let mut depth_reached = 0u32;
    let mut violation = None;
    let mut truncated = false;
    'outer: while let Some((cur, level)) = queue.pop_front() {
        let d = level as u32;
        depth_reached = depth_reached.max(d);
        model.choices(&cur, &mut choices);
        if depth.is_some_and(|b| d >= b) {
            // Successors would exceed the bound; note whether any exist.
            cut |= !choices.is_empty();
            i += 1;
            continue;
        }
        // Step every choice first and prefetch each successor's slot, then look them up in
        // order: the lookups' cache misses overlap instead of coming one after another.
        succ.clear();
        let mut found = None;
        for &c in &choices {
            let mut s = cur.clone();
            let (_, viol) = model.step(&mut s, c);
            if let Some(v) = viol {
                found = Some((c, v));
                break;
            }
            if invariants {
                if let Err(e) = model.invariants(&s) {
                    panic!("model invariant broken after {c:?}: {e}\n{s:?}");
                }
            }
            let k = layout.key(&s);
            seen.prefetch(&k);
            succ.push((s, k, c));
        }
        for (s, k, c) in succ.drain(..) {
            transitions += 1;
            if seen.insert(k) {
                parent.push((i as u32, c));
                queue.push_back((s, (d + 1) as u16));
                if seen.len() as u64 >= max_states {
                    truncated = true;
                    depth_reached = d + 1;
                    break 'outer;
                }
            }
        }
        if let Some((c, v)) = found {
            transitions += 1;
            let mut sched = vec![c];
            let mut j = i;
            while parent[j].0 != u32::MAX {
                sched.push(parent[j].1);
                j = parent[j].0 as usize;
            }
            sched.reverse();
            violation = Some((sched, v));
            depth_reached = d + 1;
            break;
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
