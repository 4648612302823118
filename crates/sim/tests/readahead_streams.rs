//! Two sequential streams through one struct file (mm/readahead.c page_cache_async_ra,
//! mm/filemap.c do_sync_mmap_readahead): the threads of one process fault through one
//! mapping, so they share one file_ra_state. A stream whose PG_readahead marker is hit while
//! the state holds the other stream's window takes the interleaved branch (window from the
//! next missing page, sized from that distance plus ra_pages), ra->order ramps on whichever
//! stream hits a marker, and every asynchronous window ends on a boundary of its order.

mod common;

use reclaimlab_sim::config::Policy;
use reclaimlab_sim::kernel::{Backing, File, Kernel};
use reclaimlab_sim::mm::pgtable::{PTE_LOW_MASK, PTE_SWPCACHE};
use reclaimlab_sim::mm::readahead::ra_align_end;
use reclaimlab_sim::mm::vmstat::VmEventItem::*;

const RA_PAGES: u64 = 64;

/// A 4096-page file mapped by one mm, with a thread on CPU 0 and one on CPU 1, readahead of
/// 64 pages and large folios up to order 9; no memory pressure.
fn two_threads() -> (Kernel, usize) {
    let mut k = Kernel::new(common::cfg(0), Policy::linux_6_18(), 2, 1 << 20, 0, 60, 1);
    k.ra.ra_pages = RA_PAGES;
    k.ra.max_order = 9;
    k.files.push(File::new(4096));
    let mm = k.mm_alloc(4096, Backing::File(0), false);
    for cpu in 0..2 {
        let t = k.task_new(mm, Some(cpu), 0, 4096);
        k.context_switch(cpu, Some(t));
    }
    (k, mm)
}

fn cached(k: &Kernel, p: u64) -> bool {
    k.files[0].cache[p as usize] & PTE_SWPCACHE != 0
}

fn order_at(k: &Kernel, p: u64) -> u8 {
    k.folios
        .get(k.files[0].cache[p as usize] & PTE_LOW_MASK)
        .order
}

fn read(k: &mut Kernel, cpu: usize, mm: usize, pages: std::ops::Range<u64>) {
    for vp in pages {
        k.user_access(cpu, mm, vp, false);
    }
}

#[test]
fn window_end_is_cut_back_to_a_boundary_of_its_order() {
    // [69, 133) at order 2 ends at 132; at order 6, [132, 196) ends at 192.
    assert_eq!(ra_align_end(69, 64, 2, 64), 63);
    assert_eq!(ra_align_end(132, 64, 4, 64), 60);
    // The alignment is capped at the lowest set bit of ra_pages (ffs(max_pages) - 1).
    assert_eq!(ra_align_end(192, 64, 9, 64), 64);
    assert_eq!(ra_align_end(100, 48, 9, 48), 44);
    // Not when nothing of the window would be left.
    assert_eq!(ra_align_end(1, 2, 4, 64), 2);
}

#[test]
fn another_streams_state_sends_a_marker_hit_down_the_interleaved_branch() {
    let (mut k, mm) = two_threads();
    // Thread A misses at 0: read-around [0, 64), marker at 48. Thread B misses at 1000:
    // read-around [968, 1032) at order 0, marker at 1016; the shared state is now B's.
    read(&mut k, 0, mm, 0..1);
    read(&mut k, 1, mm, 1000..1001);
    assert_eq!(k.vmstat[PGMAJFAULT], 2);
    // A reaches its marker at 48: the state expects 1016, so page_cache_async_ra takes the
    // next miss (64) as the start and (64 - 48) + ra_pages, ramped, as the size: the whole
    // ra_pages, not the 16 cached pages after the marker ramped up (34).
    read(&mut k, 0, mm, 1..49);
    assert!((64..128).all(|p| cached(&k, p)), "A's window is [64, 128)");
    assert!(!cached(&k, 128));
    assert_eq!(order_at(&k, 64), 2);
    // B reaches its marker at 1016 with A's state: its window starts at its own next miss,
    // 1032, at A's order plus two (4: B never had an asynchronous window of its own), and
    // ends on a 16-page boundary (1088, not 1096).
    read(&mut k, 1, mm, 1001..1017);
    assert!((1032..1088).all(|p| cached(&k, p)));
    assert!(
        !cached(&k, 1088),
        "the window's end is aligned to its order"
    );
    assert_eq!(order_at(&k, 1032), 3, "1032 is only 8-aligned");
    assert_eq!(order_at(&k, 1040), 4);
    // A's next marker (64) meets B's state again: order 4 + 2 = 6, a window-sized folio at
    // 128, where a stream reading alone would be at order 4 by now.
    read(&mut k, 0, mm, 49..65);
    assert_eq!(order_at(&k, 128), 6);
    assert!(!cached(&k, 192));
    assert_eq!(k.vmstat[PGMAJFAULT], 2, "neither stream lost its readahead");
}

#[test]
fn one_stream_after_an_unaligned_read_around_reaches_aligned_large_folios() {
    let (mut k, mm) = two_threads();
    // A miss at 37: read-around [5, 69), marker at 53. The windows after it are cut back to
    // their order's boundary ([69, 132), [132, 192)), so the third starts 64-aligned and
    // is one order-6 folio; without the cut it would start at 197 and begin at order 0.
    read(&mut k, 0, mm, 37..192);
    assert_eq!(k.vmstat[PGMAJFAULT], 1);
    assert_eq!(order_at(&k, 69), 0, "69 is odd");
    assert_eq!(order_at(&k, 128), 2);
    assert_eq!(order_at(&k, 192), 6);
    assert!((192..256).all(|p| cached(&k, p)));
    assert!(!cached(&k, 256));
    // The stream took the sequential branch each time: windows back to back, no odd orders
    // beyond the alignment run at the start of [69, 132) and [132, 192).
    let o = k.ra.folios_by_order;
    assert_eq!(o[7] + o[8] + o[9], 0, "{o:?}");
}
