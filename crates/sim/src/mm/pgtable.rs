//! Page tables: one 32-bit PTE per virtual page of an mm's single VMA.
//!
//! Present PTE: P | young | dirty | write | pfn. A non-present anon PTE holds a swap entry; the
//! swap slot is identified by (mm, vpage) itself, so the entry stores what the swap cache would
//! hold there: either the pfn of the folio still in the swap cache, or the workingset shadow.

use super::folio::Pfn;

pub type Pte = u32;

pub const PTE_PRESENT: u32 = 1 << 31;
pub const PTE_YOUNG: u32 = 1 << 30;
pub const PTE_DIRTY: u32 = 1 << 29;
pub const PTE_WRITE: u32 = 1 << 28;
/// Non-present: a swap entry.
pub const PTE_SWP: u32 = 1 << 27;
/// Swap entry whose folio is still in the swap cache (low bits = pfn), else low bits = shadow.
pub const PTE_SWPCACHE: u32 = 1 << 26;
pub const PTE_LOW_MASK: u32 = (1 << 26) - 1;
pub const PTE_NONE: Pte = 0;
/// The shared zero page a read fault on untouched anon memory maps (never allocated, never on
/// an LRU, never charged).
pub const ZERO_PFN: u32 = PTE_LOW_MASK;
pub fn is_zero_pte(p: Pte) -> bool {
    pte_present(p) && pte_pfn(p) == ZERO_PFN
}

pub fn pte_present(p: Pte) -> bool {
    p & PTE_PRESENT != 0
}
pub fn pte_pfn(p: Pte) -> Pfn {
    p & PTE_LOW_MASK
}
pub fn mk_pte(pfn: Pfn, write: bool, dirty: bool) -> Pte {
    assert!(pfn <= PTE_LOW_MASK, "pfn {pfn} does not fit the PTE");
    PTE_PRESENT
        | PTE_YOUNG
        | pfn
        | if write { PTE_WRITE } else { 0 }
        | if dirty { PTE_DIRTY } else { 0 }
}
pub fn swp_entry_swapcache(pfn: Pfn) -> Pte {
    PTE_SWP | PTE_SWPCACHE | pfn
}
pub fn swp_entry_shadow(shadow: u32) -> Pte {
    PTE_SWP | (shadow & PTE_LOW_MASK)
}
pub fn is_swap_pte(p: Pte) -> bool {
    !pte_present(p) && p & PTE_SWP != 0
}
