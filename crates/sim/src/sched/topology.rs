//! The machine's topology and the scheduling domains built from it (kernel/sched/topology.c:
//! sd_init, build_sched_domains; arch default_topology: SMT, MC, PKG).
//!
//! CPUs are numbered socket by socket, core by core, SMT sibling last (CPU =
//! (socket · cores + core) · threads + thread). Levels, lowest first, each kept only when it
//! spans more than its child (as the kernel degenerates a domain that adds nothing):
//! SMT (the threads of a core), MC (a socket: the last-level cache), PKG (the machine).
//! Each level's groups are its child level's spans.

use crate::cpumask::CpuMask;

/// `machine.topology`: sockets × cores per socket × SMT threads per core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Topology {
    pub sockets: usize,
    pub cores_per_socket: usize,
    pub threads_per_core: usize,
}

impl Topology {
    /// The default: one socket, no SMT (every CPU a core sharing one LLC).
    pub fn flat(nr_cpus: usize) -> Topology {
        Topology {
            sockets: 1,
            cores_per_socket: nr_cpus,
            threads_per_core: 1,
        }
    }
    pub fn nr_cpus(&self) -> usize {
        self.sockets * self.cores_per_socket * self.threads_per_core
    }
    pub fn core_of(&self, cpu: usize) -> usize {
        cpu / self.threads_per_core
    }
    pub fn socket_of(&self, cpu: usize) -> usize {
        cpu / (self.threads_per_core * self.cores_per_socket)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Smt,
    Mc,
    Pkg,
}

/// One CPU's sched_domain at one level.
#[derive(Clone, Debug)]
pub struct SchedDomain {
    pub level: Level,
    pub span: Vec<usize>,
    /// The child domains' spans (sched_group); the first holds this CPU.
    pub groups: Vec<Vec<usize>>,
    /// sd->imbalance_pct: 110 for SMT, 117 otherwise (sd_init).
    pub imbalance_pct: u64,
    /// sd->cache_nice_tries: 0 for SMT, 1 otherwise.
    pub cache_nice_tries: u32,
    /// sd->min_interval / max_interval in ms: the span's weight and twice it.
    pub min_interval_ms: u64,
    pub max_interval_ms: u64,
    /// SD_SHARE_LLC: wake-ups may look for an idle CPU anywhere in this span.
    pub share_llc: bool,
    /// The child has SD_PREFER_SIBLING (set on SMT and MC): spread tasks over the groups.
    pub prefer_sibling: bool,
}

/// Build every CPU's domains, lowest level first.
pub fn build_sched_domains(t: &Topology) -> Vec<Vec<SchedDomain>> {
    let n = t.nr_cpus();
    let span_of = |lvl: Level, cpu: usize| -> Vec<usize> {
        (0..n)
            .filter(|&c| match lvl {
                Level::Smt => t.core_of(c) == t.core_of(cpu),
                Level::Mc => t.socket_of(c) == t.socket_of(cpu),
                Level::Pkg => true,
            })
            .collect()
    };
    let mut out = Vec::with_capacity(n);
    for cpu in 0..n {
        let mut doms: Vec<SchedDomain> = Vec::new();
        let mut child: Option<Level> = None;
        let mut child_len = 1;
        for lvl in [Level::Smt, Level::Mc, Level::Pkg] {
            let span = span_of(lvl, cpu);
            if span.len() <= child_len {
                continue;
            }
            // Groups: the child level's spans (single CPUs under the lowest level), the one
            // holding `cpu` first, the rest in CPU order.
            let mut groups: Vec<Vec<usize>> = Vec::new();
            let own = match child {
                Some(c) => span_of(c, cpu),
                None => vec![cpu],
            };
            groups.push(own.clone());
            let mut seen = CpuMask::new(n);
            own.iter().for_each(|&c| seen.set(c));
            for &c in &span {
                if seen.test(c) {
                    continue;
                }
                let g = match child {
                    Some(ch) => span_of(ch, c),
                    None => vec![c],
                };
                g.iter().for_each(|&x| seen.set(x));
                groups.push(g);
            }
            let w = span.len() as u64;
            doms.push(SchedDomain {
                level: lvl,
                imbalance_pct: if lvl == Level::Smt { 110 } else { 117 },
                cache_nice_tries: if lvl == Level::Smt { 0 } else { 1 },
                min_interval_ms: w,
                max_interval_ms: 2 * w,
                share_llc: lvl != Level::Pkg || t.sockets == 1,
                prefer_sibling: child.is_some_and(|c| c != Level::Pkg),
                span,
                groups,
            });
            child = Some(lvl);
            child_len = doms.last().expect("pushed").span.len();
        }
        out.push(doms);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn flat_machine_has_one_level_of_single_cpus() {
        let d = build_sched_domains(&Topology::flat(4));
        assert_eq!(d[2].len(), 1);
        assert_eq!(d[2][0].level, Level::Mc);
        assert_eq!(d[2][0].groups, vec![vec![2], vec![0], vec![1], vec![3]]);
    }
    #[test]
    fn smt_and_sockets() {
        let t = Topology {
            sockets: 2,
            cores_per_socket: 2,
            threads_per_core: 2,
        };
        let d = build_sched_domains(&t);
        let levels: Vec<Level> = d[5].iter().map(|s| s.level).collect();
        assert_eq!(levels, vec![Level::Smt, Level::Mc, Level::Pkg]);
        assert_eq!(d[5][0].span, vec![4, 5]);
        assert_eq!(d[5][1].groups, vec![vec![4, 5], vec![6, 7]]);
        assert_eq!(d[5][2].groups, vec![vec![4, 5, 6, 7], vec![0, 1, 2, 3]]);
        assert!(!d[5][2].share_llc);
    }
}
