pub mod pgtable;
pub mod tlb;
