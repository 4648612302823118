pub mod contpte;
pub mod tlb;
