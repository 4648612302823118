//! What a page-cache fill from an unwritten block costs, folio by folio (fs/ext4/readpage.c
//! ext4_mpage_readpages): ext4_map_blocks for every block that does not map, the folio's own
//! handling once, and one folio_zero_segment, a single memset over the whole folio; and what a
//! file-mmap-rw access costs in user time (bench's worker touches one byte of the page).

mod common;

use reclaimlab_sim::config::Policy;
use reclaimlab_sim::kernel::{File, Kernel};

fn fallocated_file(pages: usize) -> Kernel {
    let mut k = Kernel::new(common::cfg(0), Policy::linux_6_18(), 2, 1 << 20, 0, 60, 1);
    k.files.push(File::new(pages));
    k.file_fallocated(0);
    k.cost.zero_page = 1000;
    k.cost.zero_page_long = 300;
    k.cost.fs_map_block = 70;
    k.cost.fs_read_folio = 500;
    k
}

#[test]
fn a_large_folio_is_one_clear_and_one_folio_of_filesystem_work() {
    let mut k = fallocated_file(1024);
    // An order-9 folio: one clear's start, 511 pages of a long clear; 512 block lookups.
    assert_eq!(
        k.file_read_cost(0, 512, 512),
        (1000 + 511 * 300, 500 + 512 * 70, 0)
    );
    // An order-0 folio: a 4 KiB clear and one lookup, as before the split.
    assert_eq!(k.file_read_cost(0, 3, 1), (1000, 500 + 70, 0));
    // Sixteen order-0 folios cost more than one order-4 folio of the same pages.
    let small: u64 = (0..16)
        .map(|p| {
            let (z, f, _) = k.file_read_cost(0, 16 + p, 1);
            z + f
        })
        .sum();
    let (z, f, _) = k.file_read_cost(0, 32, 16);
    assert_eq!(small - (z + f), 15 * (1000 - 300) + 15 * 500);
}

#[test]
fn a_page_with_data_is_a_device_read_without_zeroing() {
    let mut k = fallocated_file(64);
    k.ra.unwritten[0].clear();
    let read = k.cost.file_read_page;
    assert_eq!(k.file_read_cost(0, 0, 16), (0, 0, 16 * read));
}

#[test]
fn a_file_mmap_rw_access_is_a_one_byte_touch() {
    let doc = common::sim_with(
        "file-mmap-rw",
        &[
            "run.duration=200ms",
            "workload.file_bytes=16M",
            "memcg.limit=4M",
            "workload.threads=1",
            "workload.pattern=sequential",
        ],
        &[],
    );
    let v = serde_json::to_value(&doc).unwrap();
    let extra = &v["runs"][0]["extra"];
    let touched = extra["pages_touched"].as_f64().unwrap();
    let user = extra["cpu_time_ns"]["user"].as_f64().unwrap();
    assert!(touched > 1000.0, "{touched}");
    let table = reclaimlab_sim::cost::CostTable::x86();
    let per = user / touched;
    assert!(
        (per - table.touch_line as f64).abs() < 1.0,
        "{per} ns of user time a touch (touch_line {}, touch_page {})",
        table.touch_line,
        table.touch_page
    );
}
