//! Memory management (mm/).
pub mod filemap;
pub mod folio;
pub mod kswapd;
pub mod lru;
pub mod lru_gen;
pub mod memcontrol;
pub mod memory;
pub mod oom_kill;
pub mod page_alloc;
pub mod page_writeback;
pub mod pgtable;
pub mod readahead;
pub mod rmap;
pub mod swap;
pub mod vmscan;
pub mod vmstat;
pub mod workingset;
