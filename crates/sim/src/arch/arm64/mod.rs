pub mod contpte;
pub mod tlb;
pub mod tlbbatch;
