pub mod invlpgb;
pub mod pgtable;
pub mod tlb;
pub mod tlbbatch;
