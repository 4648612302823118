//! x86 TLB and shootdowns (arch/x86/mm/tlb.c, arch/x86/include/asm/tlbflush.h).
//!
//! Each CPU has a finite set-associative TLB whose entries remember (mm, vpage) → pfn and
//! whether they were filled writable and dirty. A full flush of one address space (CR3 reload /
//! INVPCID single-context) bumps a per-(CPU, mm) epoch, so it costs O(1) and leaves other
//! address spaces' entries alone, as PCID does. The per-CPU `local_gen[mm]` is
//! `cpu_tlbstate.ctxs[asid].tlb_gen`; `Mm::tlb_gen` is mm->context.tlb_gen.

use crate::arch::x86::lazy_history::{Active, StateAt};
use crate::cpumask::CpuMask;
use crate::cputime::Spent;
use crate::kernel::{CpuId, Kernel, MmId};
use crate::mm::folio::Pfn;
use crate::mm::vmstat::VmEventItem::*;

pub const TLB_WRITABLE: u8 = 1;
pub const TLB_DIRTY: u8 = 2;
/// `end` of a full flush (TLB_FLUSH_ALL).
pub const TLB_FLUSH_ALL: u64 = u64::MAX;

/// An entry's payload; its key is in `CpuTlb::keys` (a set's keys are searched first, in two
/// cache lines, and the payload is read only on a match).
#[derive(Clone, Copy)]
struct Entry {
    pfn: Pfn,
    flags: u8,
}

/// A key: vpage in bits 0..32, mm in 32..48, and in 48..64 the tag of the mm's epoch when
/// the way was filled. A way is usable when its tag is its mm's current one, so a set's keys
/// alone say which ways a fill may take (the payloads stay unread).
const ADDR_BITS: u32 = 48;
/// The most mms a TLB key can name (its mm field is the 16 bits above the address; one value
/// is kept free).
pub const MAX_MMS: usize = (1 << (64 - ADDR_BITS)) - 1;
const ADDR_MASK: u64 = (1 << ADDR_BITS) - 1;
/// Epoch tags count 0..TAG_CYCLE and start again; STALE_TAG is never current.
const TAG_CYCLE: u16 = 0xffff;
const STALE_TAG: u64 = 0xffff;

/// Key of a never-filled or INVLPG'd way (its tag is STALE_TAG, its address no mm's).
const NO_KEY: u64 = u64::MAX;

pub struct CpuTlb {
    sets: usize,
    /// `sets - 1` when `sets` is a power of two (the set index is then a mask, not a division).
    set_mask: Option<usize>,
    ways: usize,
    /// Per way: tag << 48 | mm << 32 | vpage; NO_KEY when never filled.
    keys: Vec<u64>,
    entries: Vec<Entry>,
    victim: Vec<u8>,
    /// Per mm: the tag of its epoch (bumped by each flush of the mm; ways with another tag
    /// were flushed). When the count starts again at 0, every way of the mm (all flushed
    /// then) is retagged STALE_TAG, so an old tag never comes back as current: the same
    /// ways are usable as with an epoch that never wraps.
    tag: Vec<u16>,
    /// Per mm: cpu_tlbstate.ctxs[].tlb_gen — the mm generation this CPU's entries are current to.
    pub local_gen: Vec<u64>,
}

fn addr(mm: MmId, vp: u64) -> u64 {
    debug_assert!(vp >> 32 == 0, "vpage {vp} does not fit a TLB key");
    (mm as u64) << 32 | vp
}

fn key_mm(k: u64) -> usize {
    ((k & ADDR_MASK) >> 32) as usize
}

impl CpuTlb {
    pub fn new(entries: usize, ways: usize) -> CpuTlb {
        let sets = entries / ways;
        CpuTlb {
            sets,
            set_mask: sets.is_power_of_two().then(|| sets - 1),
            ways,
            keys: vec![NO_KEY; sets * ways],
            entries: vec![Entry { pfn: 0, flags: 0 }; sets * ways],
            victim: vec![0; sets],
            tag: Vec::new(),
            local_gen: Vec::new(),
        }
    }

    pub fn add_mm(&mut self) {
        assert!(self.tag.len() < MAX_MMS, "too many mms for a TLB key");
        self.tag.push(0);
        self.local_gen.push(0);
    }

    #[inline]
    fn set_of(&self, mm: MmId, vp: u64) -> usize {
        let h = (vp as usize).wrapping_add(mm.wrapping_mul(7919));
        match self.set_mask {
            Some(m) => h & m,
            None => h % self.sets,
        }
    }

    /// The key of (mm, vp) filled now.
    #[inline]
    fn current_key(&self, mm: MmId, vp: u64) -> u64 {
        u64::from(self.tag[mm]) << ADDR_BITS | addr(mm, vp)
    }

    /// Is a way holding key `k` usable: filled, and not flushed since (its mm's tag)?
    #[inline]
    fn valid(&self, k: u64) -> bool {
        let t = k >> ADDR_BITS;
        t != STALE_TAG && t == u64::from(self.tag[key_mm(k)])
    }

    /// A usable entry for (mm, vp): (pfn, flags).
    #[inline]
    pub fn lookup(&self, mm: MmId, vp: u64) -> Option<(Pfn, u8)> {
        let s = self.set_of(mm, vp) * self.ways;
        let k = self.current_key(mm, vp);
        let keys = &self.keys[s..s + self.ways];
        let w = keys.iter().position(|&kk| kk == k)?;
        let e = &self.entries[s + w];
        Some((e.pfn, e.flags))
    }

    /// Fill after a page walk: the way already holding (mm, vp) if one does (usable or not),
    /// else the last unusable way, else the set's round-robin victim.
    pub fn fill(&mut self, mm: MmId, vp: u64, pfn: Pfn, flags: u8) {
        let set = self.set_of(mm, vp);
        let s = set * self.ways;
        let k = self.current_key(mm, vp);
        let keys = &self.keys[s..s + self.ways];
        let slot = match keys.iter().position(|&kk| kk & ADDR_MASK == k & ADDR_MASK) {
            Some(w) => Some(s + w),
            None => keys.iter().rposition(|&kk| !self.valid(kk)).map(|w| s + w),
        };
        let i = slot.unwrap_or_else(|| {
            let v = self.victim[set] as usize;
            self.victim[set] = ((v + 1) % self.ways) as u8;
            s + v
        });
        self.keys[i] = k;
        self.entries[i] = Entry { pfn, flags };
    }

    /// INVLPG of one page of `mm`.
    pub fn flush_one(&mut self, mm: MmId, vp: u64) {
        let s = self.set_of(mm, vp) * self.ways;
        let a = addr(mm, vp);
        for kk in &mut self.keys[s..s + self.ways] {
            if *kk & ADDR_MASK == a {
                *kk = NO_KEY;
            }
        }
    }

    /// Flush every entry of `mm` (its ASID).
    pub fn flush_mm(&mut self, mm: MmId) {
        let t = (self.tag[mm] + 1) % TAG_CYCLE;
        self.tag[mm] = t;
        if t == 0 {
            // Every way of `mm` is flushed now: none may keep a tag that comes back.
            for kk in &mut self.keys {
                if *kk != NO_KEY && key_mm(*kk) == mm {
                    *kk = STALE_TAG << ADDR_BITS | (*kk & ADDR_MASK);
                }
            }
        }
    }

    /// Every usable entry (mm, vpage, pfn, flags), for invariant checks.
    pub fn valid_entries(&self) -> impl Iterator<Item = (MmId, u64, Pfn, u8)> + '_ {
        self.keys
            .iter()
            .enumerate()
            .filter(|&(_, &k)| self.valid(k))
            .map(|(i, &k)| {
                let e = &self.entries[i];
                (key_mm(k), k & 0xffff_ffff, e.pfn, e.flags)
            })
    }
}

/// struct flush_tlb_info.
#[derive(Clone, Debug)]
pub struct FlushTlbInfo {
    /// None for the batched reclaim flush (and flush_tlb_all).
    pub mm: Option<MmId>,
    pub start: u64,
    pub end: u64,
    /// None = TLB_GENERATION_INVALID.
    pub new_tlb_gen: Option<u64>,
    pub freed_tables: bool,
    /// should_trim_cpumask: also IPI CPUs that stopped running the mm, so they leave its mask.
    pub trim_cpumask: bool,
}

/// What a flush does for one target of its mask (flush_target_at).
enum Target {
    Skip,
    /// Skipped, but the engine already switched the target back in: flush its entries.
    CatchUp,
    /// Send, judged by the target's state now.
    Now,
    /// Send to a target that was not lazy at the sender's time and has changed since.
    Past(Active),
}

impl Kernel {
    /// flush_tlb_mm_range: pages [start, end) of `mm`.
    pub fn x86_flush_tlb_mm_range(
        &mut self,
        cpu: CpuId,
        mm: MmId,
        start: u64,
        end: u64,
        freed_tables: bool,
    ) {
        self.mms[mm].tlb_gen += 1;
        let new_gen = self.mms[mm].tlb_gen;
        // get_flush_tlb_info: ranges above the ceiling become full flushes.
        let (start, end) = if end - start > self.policy.settings.single_page_flush_ceiling {
            (0, TLB_FLUSH_ALL)
        } else {
            (start, end)
        };
        let mut info = FlushTlbInfo {
            mm: Some(mm),
            start,
            end,
            new_tlb_gen: Some(new_gen),
            freed_tables,
            trim_cpumask: false,
        };
        if self.invlpgb.as_ref().is_some_and(|s| s.global(mm)) {
            self.broadcast_tlb_flush(cpu, mm, start, end);
        } else if self.mms[mm].cpumask.any_but(cpu) {
            // should_trim_cpumask: at most once a second (HZ) per mm.
            let now = self.cpus[cpu].clock;
            if now >= self.mms[mm].next_trim {
                self.mms[mm].next_trim = now + 1_000_000_000;
                info.trim_cpumask = true;
            }
            let mask = self.mms[mm].cpumask.clone();
            self.flush_tlb_multi(cpu, &mask, &info);
            self.consider_global_asid(cpu, mm);
        } else if self.cpus[cpu].loaded_mm == Some(mm) {
            // Run locally with interrupts off (local_irq_disable around flush_tlb_func).
            let ns = self.flush_tlb_func(cpu, cpu, &info);
            self.irq_off_local(cpu, ns);
        }
    }

    /// should_flush_tlb: the condition of on_each_cpu_cond_mask.
    fn should_flush_tlb(&self, cpu: CpuId, info: &FlushTlbInfo) -> bool {
        let c = &self.cpus[cpu];
        if c.is_lazy {
            return false;
        }
        match info.mm {
            None => true,
            Some(m) => c.loaded_mm == Some(m) || info.trim_cpumask,
        }
    }

    /// should_flush_tlb as the sender would have read it at `at`: a target the engine has
    /// simulated past `at` is judged by its state then (lazy_history.rs).
    fn flush_target_at(&self, cpu: CpuId, info: &FlushTlbInfo, at: u64) -> Target {
        let now_says = |k: &Kernel| {
            if k.should_flush_tlb(cpu, info) {
                Target::Now
            } else {
                Target::Skip
            }
        };
        if self.cpus[cpu].clock <= at {
            return now_says(self);
        }
        match self.cpus[cpu].active.at(at) {
            StateAt::Unknown => now_says(self),
            StateAt::Lazy => Target::CatchUp,
            StateAt::Active(p) => {
                let wanted = match info.mm {
                    None => true,
                    Some(m) => p.mm == Some(m) || info.trim_cpumask,
                };
                if !wanted {
                    Target::CatchUp
                } else if p.to == u64::MAX {
                    now_says(self)
                } else {
                    Target::Past(p)
                }
            }
        }
    }

    /// A target the engine has simulated past the sender's time and switched to an mm since:
    /// in the kernel that switch found the mm's tlb_gen advanced by the sender's unmap and
    /// flushed (switch_mm_irqs_off's need_flush). Its entries are flushed now, uncharged.
    fn catch_up_tlb(&mut self, cpu: CpuId) {
        if let (false, Some(mm)) = (self.cpus[cpu].is_lazy, self.cpus[cpu].loaded_mm) {
            self.flush_if_stale(cpu, mm);
        }
    }

    /// Drop `cpu`'s entries of `mm` if its local generation is behind the mm's (a full flush
    /// of that ASID, as flush_tlb_func or switch_mm_irqs_off do); returns whether it flushed.
    fn flush_if_stale(&mut self, cpu: CpuId, mm: MmId) -> bool {
        let gen = self.mms[mm].tlb_gen;
        let tlb = &mut self.cpus[cpu].tlb;
        if tlb.local_gen[mm] >= gen {
            return false;
        }
        tlb.flush_mm(mm);
        tlb.local_gen[mm] = gen;
        true
    }

    /// flush_tlb_func on a target that was not lazy at the sender's time but that the engine
    /// has since simulated further (`p` is the stretch the sender saw). Its interrupt, due
    /// after `queued` plus a delivery, was taken while it ran, or, if due after __schedule
    /// disabled interrupts and the CPU is still in the lazy period that followed, after the
    /// switch: lazy, so it left for init_mm.
    fn flush_tlb_func_past(
        &mut self,
        cpu: CpuId,
        info: &FlushTlbInfo,
        p: &Active,
        queued: u64,
    ) -> u64 {
        self.irq.tlb_shootdowns[cpu] += 1;
        self.vmstat.count_vm_event(NR_TLB_REMOTE_FLUSH_RECEIVED);
        let due = queued + self.cost.ipi_delivery;
        if self.cpus[cpu].is_lazy && self.cpus[cpu].active.lazy_since(p) && due > p.section_from {
            self.vmstat.count_vm_event(LAZY_TLB_SWITCHES_TO_INIT_MM);
            self.switch_to_init_mm_at(cpu, p.to);
            return 0;
        }
        // Taken while it ran `p.mm`: it flushed that mm's entries (a lazy CPU still holds them).
        let Some(mm) = p.mm else {
            return 0;
        };
        if info.mm.is_some_and(|m| m != mm) || !self.flush_if_stale(cpu, mm) {
            return 0;
        }
        self.cost.local_flush_all
    }

    /// native_flush_tlb_multi: on_each_cpu_cond_mask(should_flush_tlb, flush_tlb_func, wait).
    ///
    /// A call is queued to each target that passes the condition (`ipi_send` each: csd setup,
    /// llist_add, the ICR write); the queue and its IPI, the target's interrupts-off windows
    /// and the handler are smp.rs's (`smp_queue_call`). The local flush runs with interrupts
    /// off; then the sender waits (csd_lock_wait) for the slowest target's call to return.
    /// The target is charged its handler and flush work unless it was spinning in its own
    /// csd_lock_wait or idle then (smp.rs).
    pub fn flush_tlb_multi(&mut self, sender: CpuId, mask: &CpuMask, info: &FlushTlbInfo) {
        self.vmstat.count_vm_event(NR_TLB_REMOTE_FLUSH);
        let t0 = self.cpus[sender].clock;
        let mut sent = 0u64;
        let mut last_ack = t0;
        for t in mask.iter() {
            if t == sender {
                continue;
            }
            let past = if info.freed_tables {
                None
            } else {
                match self.flush_target_at(t, info, t0) {
                    Target::Skip => continue,
                    Target::CatchUp => {
                        self.catch_up_tlb(t);
                        continue;
                    }
                    Target::Now => None,
                    Target::Past(p) => Some(p),
                }
            };
            sent += 1;
            let queued = t0 + sent * self.cost.ipi_send;
            let work = match past {
                None => self.flush_tlb_func(t, sender, info),
                Some(p) => {
                    let work = self.flush_tlb_func_past(t, info, &p, queued);
                    // What it switched to since found the mm's tlb_gen advanced.
                    self.catch_up_tlb(t);
                    work
                }
            };
            let ack = self.smp_queue_call(t, queued, work);
            last_ack = last_ack.max(ack);
        }
        self.charge(sender, sent * self.cost.ipi_send, Spent::TlbFlush);
        if mask.test(sender) && (info.freed_tables || self.should_flush_tlb(sender, info)) {
            let ns = self.flush_tlb_func(sender, sender, info);
            self.irq_off_local(sender, ns);
        }
        self.csd_lock_wait(sender, last_ack);
    }

    /// flush_tlb_func on `cpu` (remote when `cpu != sender`); returns the flush work in ns.
    pub fn flush_tlb_func(&mut self, cpu: CpuId, sender: CpuId, info: &FlushTlbInfo) -> u64 {
        let remote = cpu != sender;
        if remote {
            self.irq.tlb_shootdowns[cpu] += 1;
            self.vmstat.count_vm_event(NR_TLB_REMOTE_FLUSH_RECEIVED);
        }
        let Some(loaded) = self.cpus[cpu].loaded_mm else {
            return 0;
        };
        if let Some(m) = info.mm {
            if m != loaded {
                // Trimming: this CPU no longer runs the mm.
                self.mms[m].cpumask.clear(cpu);
                return 0;
            }
        }
        // Reload the ASID if the mm moved to a global one: INVLPGB keeps that one current.
        if self.invlpgb_load_asid(cpu, Some(loaded)) {
            return 0;
        }
        if self.cpus[cpu].is_lazy {
            // Only reached through the unconditional path: leave the borrowed mm.
            self.switch_to_init_mm(cpu);
            return 0;
        }
        let local_gen = self.cpus[cpu].tlb.local_gen[loaded];
        let mm_gen = self.mms[loaded].tlb_gen;
        if let Some(g) = info.new_tlb_gen {
            if g <= local_gen {
                return 0;
            }
        }
        if local_gen == mm_gen {
            return 0;
        }
        let partial = info.end != TLB_FLUSH_ALL
            && info.new_tlb_gen == Some(local_gen + 1)
            && info.new_tlb_gen == Some(mm_gen);
        let ns = if partial {
            let n = info.end - info.start;
            for vp in info.start..info.end {
                self.cpus[cpu].tlb.flush_one(loaded, vp);
            }
            if remote {
                // The receiver's fixed work is part of ipi_handle.
                n * self.cost.local_flush_one
            } else {
                self.vmstat.count_vm_events(NR_TLB_LOCAL_FLUSH_ONE, n);
                self.cost.flush_tlb_range_fixed + n * self.cost.local_flush_one
            }
        } else {
            self.cpus[cpu].tlb.flush_mm(loaded);
            if !remote {
                self.vmstat.count_vm_event(NR_TLB_LOCAL_FLUSH_ALL);
            }
            self.cost.local_flush_all
        };
        self.cpus[cpu].tlb.local_gen[loaded] = mm_gen;
        ns
    }

    /// switch_mm_irqs_off(NULL, &init_mm, NULL), as leave_mm() and flush_tlb_func's lazy path
    /// call it: init_mm is loaded and the CPU is no longer lazy (switch_mm_irqs_off clears
    /// is_lazy). The CPU's bit stays in the old mm's cpumask (6.18 does not clear it on
    /// switch-away), and enter_lazy_tlb leaves a CPU on init_mm non-lazy, so an idle CPU in
    /// this state takes every mm = NULL flush (arch_tlbbatch_flush) whose mask holds its bit.
    pub fn switch_to_init_mm(&mut self, cpu: CpuId) {
        let at = self.cpus[cpu].clock;
        self.switch_to_init_mm_at(cpu, at);
    }

    /// `switch_to_init_mm` as of time `at`.
    fn switch_to_init_mm_at(&mut self, cpu: CpuId, at: u64) {
        self.cpus[cpu].loaded_mm = None;
        self.cpus[cpu].is_lazy = false;
        self.cpus[cpu].active.begin(at, None);
    }

    /// switch_mm_irqs_off (next = Some) or enter_lazy_tlb (next = None: the idle task or a
    /// kernel thread). `irqs_off` is how long __schedule has had interrupts off before it
    /// (local_irq_disable to enter_lazy_tlb; 0 outside the scheduler).
    pub fn x86_switch_mm(&mut self, cpu: CpuId, next: Option<MmId>, irqs_off: u64) {
        let Some(next) = next else {
            // enter_lazy_tlb: nothing to do on init_mm (the CPU stays non-lazy there), nor on
            // a CPU already lazy (a kernel thread going idle: no call was sent to it since).
            if self.cpus[cpu].loaded_mm.is_some() && !self.cpus[cpu].is_lazy {
                self.cpus[cpu].is_lazy = true;
                // A flush call queued while this CPU still ran a task (should_flush_tlb saw it
                // non-lazy) whose interrupt would be taken after __schedule disabled
                // interrupts is taken only after the switch and finds the CPU lazy:
                // flush_tlb_func leaves the borrowed mm for init_mm, where the idle CPU stays
                // non-lazy and takes every mm = NULL batch flush of the mms whose cpumask
                // still holds it.
                let now = self.cpus[cpu].clock;
                let section_from = now.saturating_sub(irqs_off);
                self.vmstat.count_vm_event(LAZY_TLB_SWITCHES);
                self.cpus[cpu].active.end(now, section_from);
                if self.smp.call_irq_after(cpu, now, section_from) {
                    self.vmstat.count_vm_event(LAZY_TLB_SWITCHES_TO_INIT_MM);
                    self.switch_to_init_mm(cpu);
                }
            }
            return;
        };
        let was_lazy = self.cpus[cpu].is_lazy;
        let prev = self.cpus[cpu].loaded_mm;
        self.cpus[cpu].is_lazy = false;
        if prev == Some(next) && !was_lazy {
            return;
        }
        let now = self.cpus[cpu].clock;
        self.cpus[cpu].active.begin(now, Some(next));
        // Set the cpumask bit before reading tlb_gen, as the kernel orders them.
        self.mms[next].cpumask.set(cpu);
        self.cpus[cpu].loaded_mm = Some(next);
        if self.invlpgb_load_asid(cpu, Some(next)) {
            // choose_new_asid: a global ASID is always up to date (need_flush = 0).
            return;
        }
        if self.flush_if_stale(cpu, next) {
            // TLB_FLUSH_ON_TASK_SWITCH.
            self.cpus[cpu].clock += self.cost.local_flush_all;
            self.cpu_time
                .add(Spent::TlbFlush, self.cost.local_flush_all);
        }
    }

    /// Can `cpu` still use a stale entry of `mm`? Not if it will flush before using it.
    fn tlb_entry_usable(&self, cpu: CpuId, mm: MmId) -> bool {
        let c = &self.cpus[cpu];
        let will_flush = c.tlb.local_gen[mm] < self.mms[mm].tlb_gen;
        !(will_flush && (c.is_lazy || c.loaded_mm != Some(mm)))
    }

    /// Invariant: with no flush pending, no usable TLB entry disagrees with its PTE.
    pub fn check_tlb_coherent(&mut self, when: &str) {
        let mut errs = Vec::new();
        for cpu in 0..self.nr_cpus() {
            for (mm, vp, pfn, flags) in self.cpus[cpu].tlb.valid_entries() {
                let pte = self.mms[mm].ptes[vp as usize];
                let ok =
                    crate::mm::pgtable::pte_present(pte) && crate::mm::pgtable::pte_pfn(pte) == pfn;
                // A zero-page entry replaced by a private folio after a write fault would be
                // flushed by the kernel's ptep_clear_flush in wp_page_copy; we model that flush
                // as free and exact (see user_access), so stale zero-page entries are harmless.
                let ok = ok || pfn == crate::mm::pgtable::ZERO_PFN;
                // LUF owes read-only entries a flush at the frame's reallocation.
                let ok = ok || (flags & TLB_WRITABLE == 0 && self.luf.owed(pfn));
                if !ok && self.tlb_entry_usable(cpu, mm) {
                    errs.push(format!(
                        "{when}: CPU {cpu} holds a usable TLB entry for mm {mm} page {vp} (pfn {pfn}) whose PTE is {pte:#x}"
                    ));
                }
            }
        }
        for e in errs {
            self.invariant_fail(e);
        }
    }

    /// Invariant: nothing may map a folio being freed (called at free time when paranoid).
    pub fn check_no_tlb_maps(&mut self, mm: MmId, vp: u64, pfn: Pfn) {
        for cpu in 0..self.nr_cpus() {
            if let Some((p, flags)) = self.cpus[cpu].tlb.lookup(mm, vp) {
                let luf = flags & TLB_WRITABLE == 0 && self.luf.owed(pfn);
                if p == pfn && self.tlb_entry_usable(cpu, mm) && !luf {
                    self.invariant_fail(format!(
                        "CPU {cpu} holds a usable TLB entry for freed pfn {pfn} (mm {mm} page {vp})"
                    ));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entry filled before a flush stays unusable however many flushes follow: its tag
    /// never comes back as current, also across the tag count's restart.
    #[test]
    fn flushed_entry_stays_flushed_across_tag_restarts() {
        let mut tlb = CpuTlb::new(64, 4);
        tlb.add_mm();
        tlb.add_mm();
        tlb.fill(1, 7, 70, TLB_WRITABLE);
        tlb.fill(0, 7, 71, 0);
        assert_eq!(tlb.lookup(1, 7), Some((70, TLB_WRITABLE)));
        for n in 1..=3 * u32::from(TAG_CYCLE) {
            tlb.flush_mm(1);
            assert_eq!(tlb.lookup(1, 7), None, "usable after {n} flushes");
        }
        // The other mm's entry is untouched; a refill of the flushed one reuses its way.
        assert_eq!(tlb.lookup(0, 7), Some((71, 0)));
        tlb.fill(1, 7, 72, 0);
        assert_eq!(tlb.lookup(1, 7), Some((72, 0)));
        assert_eq!(tlb.valid_entries().count(), 2);
        tlb.flush_one(1, 7);
        assert_eq!(tlb.lookup(1, 7), None);
        assert_eq!(tlb.valid_entries().count(), 1);
    }
}
