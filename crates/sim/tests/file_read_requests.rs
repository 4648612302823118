//! Page-cache reads as device requests: folios of adjacent blocks read in one pass share a
//! request (ext4_mpage_readpages' bio, the plug's merge), each request costs the reading task
//! `readpages_request` and the device `file_read_request`, and a lone request's round trip is
//! its transfer and latency whatever its fixed service (the latency is measured with one
//! request in flight).

mod common;

use reclaimlab_sim::config::Policy;
use reclaimlab_sim::cputime::Spent;
use reclaimlab_sim::kernel::{File, Kernel};
use reclaimlab_sim::mm::vmstat::VmEventItem::FILE_READ_REQUESTS;

const SUBMIT: u64 = 3000;

/// A file whose every block holds data, on a device of 1 ns a page, so that the page-cache
/// CPU time a fill costs is the request's submission (and, with no task to sleep, the
/// nanosecond its read is waited for).
fn written_file(pages: usize) -> Kernel {
    let mut k = Kernel::new(common::cfg(0), Policy::linux_6_18(), 2, 1 << 20, 0, 60, 1);
    k.files.push(File::new(pages));
    k.cost.file_read_page = 1;
    k.cost.file_read_latency = 0;
    k.cost.file_read_request = 0;
    k.cost.readpages_request = SUBMIT;
    k
}

#[test]
fn adjacent_folios_in_one_pass_are_one_request() {
    let mut k = written_file(64);
    k.read_plug_start();
    for p in 0..4 {
        k.file_fill(0, 0, p, 1);
    }
    assert_eq!(k.vmstat[FILE_READ_REQUESTS], 1);
    let spent = k.cpu_time.get(Spent::PageCache);
    assert!((SUBMIT..SUBMIT + 10).contains(&spent), "{spent}");
    // A gap (a cached page skipped, a hole zeroed) starts another request.
    k.file_fill(0, 0, 5, 1);
    assert_eq!(k.vmstat[FILE_READ_REQUESTS], 2);
    // So does another fault's pass, even at the next block.
    k.read_plug_start();
    k.file_fill(0, 0, 6, 1);
    assert_eq!(k.vmstat[FILE_READ_REQUESTS], 3);
    let spent = k.cpu_time.get(Spent::PageCache);
    assert!((3 * SUBMIT..3 * SUBMIT + 10).contains(&spent), "{spent}");
}

#[test]
fn a_request_stops_at_the_devices_largest() {
    let mut k = written_file(64);
    k.cfg.writeback_request_pages = 8;
    k.read_plug_start();
    for p in 0..4 {
        k.file_fill(0, 0, 4 * p, 4);
    }
    // 16 adjacent pages, at most 8 a request.
    assert_eq!(k.vmstat[FILE_READ_REQUESTS], 2);
}

#[test]
fn the_fixed_service_delays_only_the_requests_behind_it() {
    let mut k = written_file(8);
    let (fixed, transfer, latency) = (9_000, 2_000, 30_000);
    // An idle device: the measured round trip, transfer + latency.
    assert_eq!(
        k.blk_submit(0, fixed, transfer, latency, fixed),
        transfer + latency
    );
    // Queued behind it: starts when the first's service (fixed + transfer) ends.
    let second = k.blk_submit(0, fixed, transfer, latency, fixed);
    assert_eq!(second, (fixed + transfer) + transfer + latency);
    // A folio joining that request adds its transfer and no service: the request ends one
    // transfer later.
    let joined = k.blk_submit(0, 0, transfer, latency, fixed);
    assert_eq!(joined, second + transfer);
    // A batch of three requests (block swap: a run of adjacent slots each) served at once
    // completes after its three services, one of them inside the latency.
    let mut k = written_file(8);
    assert_eq!(
        k.blk_submit(0, 3 * fixed, transfer, latency, fixed),
        2 * fixed + transfer + latency
    );
}
