//! Step-by-step replay of a reclaim schedule through the simulator's own kernel functions.
//! The engine runs a whole direct-reclaim call as one step, so no other CPU can
//! store between `pageout` and the flush that follows it; a schedule from `reclaimlab check`
//! names each `shrink_folio_list` stage and each user store, and this module runs them in that
//! order on a tiny machine, with the lost-write oracle (crate::oracle) judging the outcome.
//!
//! The machine matches the checker's anonymous layout: CPU 0 runs reclaim (on init_mm, never
//! in the mm's cpumask), CPUs 1.. run threads of one mm whose pages are present, clean,
//! writable and not in any TLB; each page is an order-0 anon folio, already isolated.

use crate::config::{Patch, Policy, SimConfig};
use crate::kernel::{Backing, CpuId, Kernel, MmId};
use crate::mm::folio::{pg, Pfn};
use crate::mm::memory::Access;
use crate::mm::mm_types_task::TlbUbc;
use crate::mm::rmap::TTU_BATCH_FLUSH;
use crate::oracle::Finding;

/// One step, named after the kernel function it runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// folio_trylock, with folio_alloc_swap (+ folio_mark_dirty) when `alloc_swap`.
    FolioTrylock {
        folio: usize,
        alloc_swap: bool,
    },
    /// try_to_unmap (TTU_BATCH_FLUSH when the policy batches).
    TryToUnmap {
        folio: usize,
    },
    TryToUnmapFlushDirty,
    /// pageout (swap_writeout: the copy is written synchronously, zram-like).
    Pageout {
        folio: usize,
    },
    /// __remove_mapping, onto the free batch.
    RemoveMapping {
        folio: usize,
    },
    TryToUnmapFlush,
    /// free_unref_folios of the free batch.
    FreeUnrefFolios,
    /// A user store by the thread on `cpu` to `page` of the mm it runs; `expect` is how the
    /// schedule says it resolves (checked against the simulator).
    Store {
        cpu: CpuId,
        page: u64,
        expect: Option<Access>,
    },
    /// enter_lazy_tlb: the CPU switches to a kernel thread.
    EnterLazyTlb {
        cpu: CpuId,
    },
    /// switch_mm_irqs_off to a thread of the mm.
    SwitchMm {
        cpu: CpuId,
    },
}

/// The tiny machine a schedule runs on.
pub struct Machine {
    pub k: Kernel,
    pub mm: MmId,
    ubc: TlbUbc,
    /// The folio list, in shrink_folio_list order.
    pub folios: Vec<Pfn>,
    free: Vec<Pfn>,
    /// The thread each user CPU runs (or ran before going lazy).
    threads: Vec<Option<usize>>,
}

/// What a replay found.
#[derive(Debug)]
pub struct Outcome {
    /// Oracle findings, in order.
    pub findings: Vec<Finding>,
    /// One line per step: what the simulator did.
    pub log: Vec<String>,
}

const RECLAIM_CPU: CpuId = 0;

impl Machine {
    /// `cpus` CPUs (CPU 0 reclaims), one anon mm of `pages` pages mapped clean and writable.
    pub fn anon(policy: Policy, cpus: usize, pages: u64) -> Machine {
        let cfg = SimConfig::default();
        let mut k = Kernel::new(cfg, policy, cpus, 1 << 20, 1 << 10, 60, 1);
        let mm = k.mm_alloc(pages, Backing::Anon, true);
        let mut folios = Vec::new();
        for vp in 0..pages {
            let pfn = k
                .folios
                .alloc(pg::ANON | pg::SWAPBACKED, mm as u32, vp as u32);
            k.memcg.usage += 1;
            k.set_pte(mm, vp, pfn, true, false);
            folios.push(pfn);
        }
        let mut threads = vec![None; cpus];
        for (cpu, slot) in threads.iter_mut().enumerate().skip(1) {
            let t = k.task_new(mm, Some(cpu), 0, pages);
            k.tasks[t].done = true;
            k.context_switch(cpu, Some(t));
            *slot = Some(t);
        }
        Machine {
            ubc: TlbUbc::new(k.arch, cpus),
            k,
            mm,
            folios,
            free: Vec::new(),
            threads,
        }
    }

    fn pfn(&self, folio: usize) -> Result<Pfn, String> {
        self.folios
            .get(folio)
            .copied()
            .ok_or_else(|| format!("no folio {folio} on the list"))
    }

    /// Run one step; returns what the simulator did.
    pub fn step(&mut self, s: &Step) -> Result<String, String> {
        let k = &mut self.k;
        let c = RECLAIM_CPU;
        Ok(match *s {
            Step::FolioTrylock { folio, alloc_swap } => {
                let pfn = self.pfn(folio)?;
                if alloc_swap && !self.k.folio_alloc_swap(c, pfn) {
                    return Err("folio_alloc_swap failed (swap full)".into());
                }
                format!(
                    "folio {folio} locked{}",
                    if alloc_swap {
                        ", in swap cache, dirty"
                    } else {
                        ""
                    }
                )
            }
            Step::TryToUnmap { folio } => {
                let pfn = self.pfn(folio)?;
                let flags = if self.k.has(Patch::TlbBatch) {
                    TTU_BATCH_FLUSH
                } else {
                    0
                };
                self.k.try_to_unmap(c, &mut self.ubc, pfn, flags);
                format!(
                    "try_to_unmap folio {folio}: flush {}",
                    if self.ubc.flush_required {
                        "pending"
                    } else {
                        "done"
                    }
                )
            }
            Step::TryToUnmapFlushDirty => {
                let pending = self.ubc.flush_required;
                k.try_to_unmap_flush_dirty(c, &mut self.ubc);
                format!(
                    "try_to_unmap_flush_dirty: {}",
                    if pending && !self.ubc.flush_required {
                        "flushed"
                    } else {
                        "no flush"
                    }
                )
            }
            Step::Pageout { folio } => {
                let pfn = self.pfn(folio)?;
                if self.k.folios.get(pfn).test(pg::MAPPED) {
                    return Err(format!(
                        "pageout of folio {folio}, which is mapped in the simulator"
                    ));
                }
                self.k.pageout(c, pfn);
                format!("pageout folio {folio}")
            }
            Step::RemoveMapping { folio } => {
                let pfn = self.pfn(folio)?;
                let f = *self.k.folios.get(pfn);
                if f.test(pg::MAPPED) || !f.test(pg::SWAPCACHE) {
                    // __remove_mapping's refcount freeze fails on a mapped folio; a folio
                    // that left the swap cache has no mapping to remove.
                    return Err(format!(
                        "__remove_mapping of folio {folio}, which the simulator has {}",
                        if f.test(pg::MAPPED) {
                            "mapped again"
                        } else {
                            "out of the swap cache"
                        }
                    ));
                }
                self.k.remove_mapping(c, pfn);
                self.free.push(pfn);
                format!("__remove_mapping folio {folio}")
            }
            Step::TryToUnmapFlush => {
                k.try_to_unmap_flush(c, &mut self.ubc);
                "try_to_unmap_flush".into()
            }
            Step::FreeUnrefFolios => {
                let n = self.free.len();
                self.k.free_folio_batch(c, &mut self.ubc, &mut self.free);
                format!("free_unref_folios: {n} folio(s)")
            }
            Step::Store { cpu, page, expect } => {
                if self.k.cpus.get(cpu).and_then(|x| x.curr).is_none() {
                    return Err(format!("cpu{cpu} runs no user thread"));
                }
                let a = self.k.user_access(cpu, self.mm, page, true);
                if let Some(e) = expect {
                    if a != e {
                        return Err(format!(
                            "cpu{cpu} store to page {page}: the schedule says {e:?}, the simulator did {a:?}"
                        ));
                    }
                }
                format!("cpu{cpu} store to page {page}: {a:?}")
            }
            Step::EnterLazyTlb { cpu } => {
                self.k.context_switch(cpu, None);
                format!("cpu{cpu} enter_lazy_tlb")
            }
            Step::SwitchMm { cpu } => {
                let t = match self.threads.get(cpu).copied().flatten() {
                    Some(t) => t,
                    None => {
                        let t = self.k.task_new(self.mm, Some(cpu), 0, 1);
                        self.k.tasks[t].done = true;
                        self.threads[cpu] = Some(t);
                        t
                    }
                };
                self.k.context_switch(cpu, Some(t));
                format!("cpu{cpu} switch_mm to mm {}", self.mm)
            }
        })
    }

    /// Run a whole schedule; stops at the first step the simulator cannot take as given.
    pub fn run(mut self, steps: &[Step]) -> Result<Outcome, String> {
        let mut log = Vec::new();
        for (i, s) in steps.iter().enumerate() {
            let line = self.step(s).map_err(|e| format!("step {}: {e}", i + 1))?;
            log.push(format!("{:>3}. {line}", i + 1));
        }
        Ok(Outcome {
            findings: self.k.oracle.findings.clone(),
            log,
        })
    }
}
