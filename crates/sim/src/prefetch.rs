//! A cache prefetch hint: start loading a value that will be read a while later, so its cache
//! miss overlaps other work. No effect on any result.

/// Prefetch the cache line holding `r` (a no-op off x86_64).
#[inline]
pub fn prefetch<T>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch only hints the cache and never faults; `r` is a valid reference,
        // and SSE (which has the instruction) is part of every x86_64 CPU.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(r as *const T as *const i8) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}
