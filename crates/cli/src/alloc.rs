//! The process's allocator: the system allocator, with transparent huge pages asked for
//! (`madvise(MADV_HUGEPAGE)`) on the 2 MB-aligned part of every large block. A simulation's
//! folio table and oracle frame records are such blocks, read at random; on 4 KB pages each
//! of those reads can also miss the data TLB. Contents and results are unchanged: only how
//! the kernel backs the memory (on a host whose THP mode is `madvise`, the common default).

use std::alloc::{GlobalAlloc, Layout, System};

/// 2 MB: an x86_64 (and arm64 with 4 KB pages) PMD-sized huge page.
const HUGE: usize = 2 << 20;

pub struct HugeAlloc;

/// Ask for huge pages on the whole 2 MB pages inside `[p, p + len)`.
fn advise(p: *mut u8, len: usize) {
    if p.is_null() || len < 2 * HUGE {
        return;
    }
    let start = (p as usize).next_multiple_of(HUGE);
    let end = (p as usize + len) & !(HUGE - 1);
    if end > start {
        // SAFETY: the range lies inside a block this allocator just returned; MADV_HUGEPAGE
        // changes no contents and its failure (THP off, old kernel) is harmless.
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
    }
}

// SAFETY: every call goes to `System` with the caller's arguments; `advise` only adds a hint.
unsafe impl GlobalAlloc for HugeAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        advise(p, layout.size());
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        advise(p, layout.size());
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        advise(p, new_size);
        p
    }
}
