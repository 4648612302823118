//! Device drivers reclaim goes through, named after drivers/ in the kernel tree.

pub mod virtio_blk;
pub mod zram;
