//! Software prefetch: a hint that a cache line will be read soon. One of the crate's two
//! places with `unsafe` (the other maps files).
#![allow(unsafe_code)]

/// Asks the CPU to bring the cache line holding `bytes[offset]` into cache. No bounds check:
/// an offset past the end (a probe's load window may reach the next line) hints at whatever is
/// there, which is harmless. A no-op where no prefetch intrinsic is available (non-x86
/// targets, x86 without SSE).
#[inline(always)]
pub(crate) fn prefetch(bytes: &[u8], offset: usize) {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse"))]
    {
        use core::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // `wrapping_add` makes a pointer without asserting it is in bounds; it is only hinted
        // at, never dereferenced.
        let at = bytes.as_ptr().wrapping_add(offset);
        // SAFETY: `_mm_prefetch` only hints the cache: it never faults and reads or writes no
        // memory visible to the program, whatever the address, mapped or not. Its one
        // requirement, the `sse` target feature, is checked by the `cfg` above.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(at.cast::<i8>()) };
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse")))]
    let _ = (bytes, offset);
}

#[cfg(test)]
mod tests {
    use super::prefetch;

    #[test]
    fn prefetch_accepts_any_offset() {
        // Empty, first byte, last byte, one past the end, far out of range, misaligned.
        let v = vec![7u8; 129];
        prefetch(&[], 0);
        prefetch(&v, 0);
        prefetch(&v, 128);
        prefetch(&v, 129);
        prefetch(&v, usize::MAX);
        prefetch(&v[1..], 63);
        assert_eq!(v[128], 7);
    }
}
