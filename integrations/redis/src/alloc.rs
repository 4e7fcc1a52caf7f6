//! The module's global allocator: inside a server, every heap allocation of the module (and of
//! cuckoo-sst under it) goes through `RedisModule_Alloc`, so `INFO memory`'s `used_memory`
//! counts the filters and `maxmemory` (with its `deny-oom` commands and its eviction) sees them.
//! Outside a server (the tests, the doc examples) it is the system allocator.
//!
//! Which one serves a process is fixed before its first allocation: [`install`] runs first thing
//! in `RedisModule_OnLoad`, before the module allocates anything, and nothing uninstalls it. A
//! block is therefore always freed by the allocator that made it.
//!
//! Failure: `RedisModule_Alloc` stops the server when memory runs out. Where the server has them,
//! the allocator calls `RedisModule_TryAlloc` (Redis 7.0), `RedisModule_TryCalloc` and
//! `RedisModule_TryRealloc` (7.4) instead, which return null: a filter the machine cannot hold
//! is then the library's `OutOfMemory` and an error reply (its tables are reserved with
//! `try_reserve`), not a crash. Without `TryCalloc` a zeroed block is a `TryAlloc` cleared.
//!
//! Alignment: `RedisModule_Alloc` promises what `malloc` does (16 bytes on x86-64 and
//! aarch64), while cuckoo-sst's tables ask for 64 (a cache line). A request for more than
//! [`MIN_ALIGN`] gets `size + align` bytes, hands out the first aligned address at least 16 bytes
//! in, and keeps the block's own address in the 8 bytes before it.

#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, Ordering};

/// What `RedisModule_Alloc` and `malloc` align every block to here.
pub const MIN_ALIGN: usize = 16;

type AllocFn = unsafe extern "C" fn(usize) -> *mut c_void;
type CallocFn = unsafe extern "C" fn(usize, usize) -> *mut c_void;
type ReallocFn = unsafe extern "C" fn(*mut c_void, usize) -> *mut c_void;
type FreeFn = unsafe extern "C" fn(*mut c_void);

static ALLOC: AtomicPtr<c_void> = AtomicPtr::new(null_mut());
static CALLOC: AtomicPtr<c_void> = AtomicPtr::new(null_mut());
static REALLOC: AtomicPtr<c_void> = AtomicPtr::new(null_mut());
static FREE: AtomicPtr<c_void> = AtomicPtr::new(null_mut());

/// The server's functions, once [`install`]ed.
struct Redis {
    alloc: AllocFn,
    /// `None`: no `TryCalloc`; an allocation cleared instead.
    calloc: Option<CallocFn>,
    realloc: ReallocFn,
    free: FreeFn,
}

fn redis() -> Option<Redis> {
    let free = FREE.load(Ordering::Acquire);
    if free.is_null() {
        return None;
    }
    let calloc = CALLOC.load(Ordering::Relaxed);
    // SAFETY: `install` stored them, each null (only `CALLOC` may be) or the address of the
    // function of its type, and published them with the Release store of `FREE`, which the
    // Acquire load above saw.
    unsafe {
        Some(Redis {
            alloc: std::mem::transmute::<*mut c_void, AllocFn>(ALLOC.load(Ordering::Relaxed)),
            calloc: (!calloc.is_null())
                .then(|| std::mem::transmute::<*mut c_void, CallocFn>(calloc)),
            realloc: std::mem::transmute::<*mut c_void, ReallocFn>(REALLOC.load(Ordering::Relaxed)),
            free: std::mem::transmute::<*mut c_void, FreeFn>(free),
        })
    }
}

/// Routes the module's allocations to the server from now on: `alloc`, `calloc` and `realloc`
/// are the `Try` functions where the server has them (null returned, not a crash); `calloc` is
/// `None` when it has no `TryCalloc`.
///
/// # Safety
/// Call it once, from `RedisModule_OnLoad`, before the module has allocated anything (a block
/// made by the system allocator before it would be given to `RedisModule_Free` after it), with
/// the server's allocator functions (`RedisModule_TryAlloc` or `RedisModule_Alloc`, …,
/// `RedisModule_Free`).
pub unsafe fn install(alloc: AllocFn, calloc: Option<CallocFn>, realloc: ReallocFn, free: FreeFn) {
    ALLOC.store(alloc as *mut c_void, Ordering::Relaxed);
    CALLOC.store(
        calloc.map_or(null_mut(), |f| f as *mut c_void),
        Ordering::Relaxed,
    );
    REALLOC.store(realloc as *mut c_void, Ordering::Relaxed);
    FREE.store(free as *mut c_void, Ordering::Release);
}

/// A zeroed block of `n` bytes from the server: `TryCalloc`, or `TryAlloc` cleared.
///
/// # Safety
/// `r` is the installed allocator; `n` is not 0.
unsafe fn zeroed(r: &Redis, n: usize) -> *mut u8 {
    // SAFETY: the server's allocator; a non-null block of `n` bytes is cleared whole.
    unsafe {
        match r.calloc {
            Some(calloc) => calloc(1, n).cast(),
            None => {
                let p: *mut u8 = (r.alloc)(n).cast();
                if !p.is_null() {
                    std::ptr::write_bytes(p, 0, n);
                }
                p
            }
        }
    }
}

/// Whether the server's allocator serves this process (a test's: `false`).
pub fn installed() -> bool {
    redis().is_some()
}

/// The allocator: the server's once [`install`]ed, the system's before and outside a server.
pub struct ModuleAlloc;

/// The block under an over-aligned allocation: `size + align` bytes, of which the caller gets
/// `align`-aligned `size` from the first aligned address at least [`MIN_ALIGN`] bytes in; the
/// block's address sits in the 8 bytes before the caller's.
///
/// # Safety
/// `raw` is null or a block of at least `size + align` bytes aligned to `MIN_ALIGN`; `align` is
/// a power of two above `MIN_ALIGN`.
unsafe fn over_aligned(raw: *mut u8, align: usize) -> *mut u8 {
    if raw.is_null() {
        return raw;
    }
    // The next multiple of `align` strictly above `raw`: 16 to `align` bytes in, so the 8
    // bytes before it are in the block and the caller's `size` bytes end by `raw + size +
    // align`.
    let offset = align - (raw as usize & (align - 1));
    // SAFETY: `offset ≤ align`, within the block; `offset ≥ MIN_ALIGN ≥ 8` (raw is 16-aligned,
    // the result `align`-aligned, and they differ), so `p - 8` is in the block too and is
    // 8-aligned.
    unsafe {
        let p = raw.add(offset);
        p.cast::<*mut u8>().sub(1).write(raw);
        p
    }
}

/// The block under a pointer [`over_aligned`] gave.
///
/// # Safety
/// `p` came from [`over_aligned`].
unsafe fn block_of(p: *mut u8) -> *mut u8 {
    // SAFETY: `over_aligned` wrote the block's address there.
    unsafe { p.cast::<*mut u8>().sub(1).read() }
}

// SAFETY: every block comes from one allocator for the life of the process (see the module
// doc) and is freed by the same one; over-aligned blocks are `size + align` bytes, of which the
// caller gets `size` at an `align`-aligned address (`over_aligned`); `realloc` keeps the first
// `min(old, new)` bytes in both cases.
unsafe impl GlobalAlloc for ModuleAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let Some(r) = redis() else {
            // SAFETY: the caller's layout, passed on.
            return unsafe { System.alloc(layout) };
        };
        // SAFETY: the server's malloc; an over-aligned block gets its room (`over_aligned`).
        unsafe {
            if layout.align() <= MIN_ALIGN {
                (r.alloc)(layout.size()).cast()
            } else {
                let Some(n) = layout.size().checked_add(layout.align()) else {
                    return null_mut();
                };
                over_aligned((r.alloc)(n).cast(), layout.align())
            }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let Some(r) = redis() else {
            // SAFETY: the caller's layout, passed on.
            return unsafe { System.alloc_zeroed(layout) };
        };
        // SAFETY: the server's allocator, zeroed as asked; an over-aligned block gets its room.
        unsafe {
            if layout.align() <= MIN_ALIGN {
                zeroed(&r, layout.size())
            } else {
                let Some(n) = layout.size().checked_add(layout.align()) else {
                    return null_mut();
                };
                over_aligned(zeroed(&r, n), layout.align())
            }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let Some(r) = redis() else {
            // SAFETY: the system allocator made it (the module doc).
            return unsafe { System.dealloc(ptr, layout) };
        };
        // SAFETY: the server's allocator made it, over-aligned as its layout says.
        unsafe {
            if layout.align() <= MIN_ALIGN {
                (r.free)(ptr.cast());
            } else {
                (r.free)(block_of(ptr).cast());
            }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let Some(r) = redis() else {
            // SAFETY: the caller's arguments, passed on to the allocator that made the block.
            return unsafe { System.realloc(ptr, layout, new_size) };
        };
        if layout.align() <= MIN_ALIGN {
            // SAFETY: a block of the server's malloc.
            return unsafe { (r.realloc)(ptr.cast(), new_size).cast() };
        }
        // Over-aligned: a new block, the bytes copied, the old one freed.
        // SAFETY: `new_size` is a valid size for this alignment (the caller's promise).
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: as in `alloc`, `dealloc`; the two blocks are distinct and each holds at least
        // `min(old, new)` bytes.
        unsafe {
            let p = self.alloc(new_layout);
            if !p.is_null() {
                std::ptr::copy_nonoverlapping(ptr, p, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
            p
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The over-aligned arithmetic on the system allocator's 16-aligned blocks: every alignment
    /// from 32 to 4096 and sizes 0 to 300, each block written to its last byte (a short block
    /// would be seen by a sanitizer or the allocator's own checks) and its address found again.
    #[test]
    fn over_aligned_blocks_fit_and_find_their_block() {
        for align in [32usize, 64, 128, 4096] {
            for size in [0usize, 1, 7, 8, 15, 16, 63, 64, 65, 300] {
                let n = size + align;
                let outer = Layout::from_size_align(n, MIN_ALIGN).unwrap();
                // SAFETY: a nonzero size.
                let raw = unsafe { System.alloc(outer) };
                assert!(!raw.is_null());
                // SAFETY: `raw` is a 16-aligned block of `size + align` bytes.
                let p = unsafe { over_aligned(raw, align) };
                assert_eq!(p as usize % align, 0);
                assert!(p as usize >= raw as usize + MIN_ALIGN);
                assert!(p as usize + size <= raw as usize + n);
                // SAFETY: `p..p + size` is inside the block (asserted above).
                unsafe { std::ptr::write_bytes(p, 0xAB, size) };
                // SAFETY: `p` came from `over_aligned`.
                assert_eq!(unsafe { block_of(p) }, raw);
                // SAFETY: made above with this layout.
                unsafe { System.dealloc(raw, outer) };
            }
        }
    }

    #[test]
    fn outside_a_server_it_is_the_system_allocator() {
        assert!(!installed());
        let v: Vec<u64> = (0..1000).collect();
        assert_eq!(v.iter().sum::<u64>(), 999 * 1000 / 2);
    }
}
