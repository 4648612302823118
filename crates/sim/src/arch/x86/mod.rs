pub mod invlpgb;
pub mod lazy_history;
pub mod pgtable;
pub mod tlb;
pub mod tlbbatch;
