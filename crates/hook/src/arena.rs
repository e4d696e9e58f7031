//! The per-event binary's allocator: small allocations are carved one
//! after another from one region and never freed; large ones, and
//! everything once the region is full, go to the system allocator.
//!
//! One `memhook hook` process handles one event and exits within a few
//! milliseconds, and most of its ~1,500 allocations are small strings and
//! vectors that live until the end. glibc's `malloc` and `free` spent about
//! 210,000 of the ~930,000 instructions of a whole tool-event call
//! (callgrind, docs/benchmarks.md, "One policy, an arena, no libm, no clap for session start"); carving costs a
//! few instructions, and freeing nothing costs nothing at exit.
//!
//! Bounds: the region is [`REGION`] bytes of address space, reserved once
//! (`mmap`, `MAP_NORESERVE`: pages are only backed as they are touched);
//! only allocations of at most [`SMALL`] bytes are carved, so the memory
//! the process can hold without freeing is at most the region. Past it,
//! allocation falls back to the system allocator, which frees as usual, so
//! an unusual event (a large payload with many small pieces) costs memory
//! as before, never correctness. A `realloc` of the most recent carving
//! grows in place; a shrink keeps the block. Thread-safe (one atomic offset), though the hook starts
//! no thread of its own.
//!
//! Only the per-event binary installs it (`crates/cli/src/bin/memhook.rs`);
//! `memhook-cli`, whose drainer and server run for long, keeps the system
//! allocator. On other systems than Unix it passes everything through.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Address space reserved for carving.
pub const REGION: usize = 8 << 20;
/// The largest allocation that is carved; larger ones go to the system.
pub const SMALL: usize = 4096;

/// Carves small allocations from one region; see the module docs.
pub struct Arena {
    /// Start of the region; 0 before the first allocation, [`FAILED`] when
    /// it could not be reserved.
    base: AtomicUsize,
    /// Bytes carved so far.
    used: AtomicUsize,
}

const FAILED: usize = usize::MAX;

impl Arena {
    pub const fn new() -> Arena {
        Arena {
            base: AtomicUsize::new(0),
            used: AtomicUsize::new(0),
        }
    }

    /// The region's start, reserving it on first use.
    #[cfg(unix)]
    fn region(&self) -> Option<usize> {
        match self.base.load(Ordering::Acquire) {
            FAILED => return None,
            0 => {}
            b => return Some(b),
        }
        // SAFETY: an anonymous private mapping at an address of the
        // kernel's choosing; nothing else is affected.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                REGION,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        let mine = if p == libc::MAP_FAILED {
            FAILED
        } else {
            p as usize
        };
        match self
            .base
            .compare_exchange(0, mine, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => (mine != FAILED).then_some(mine),
            Err(theirs) => {
                // Another thread reserved it first: give ours back.
                if mine != FAILED {
                    // SAFETY: `p` is the mapping made above, unused.
                    unsafe { libc::munmap(p, REGION) };
                }
                (theirs != FAILED).then_some(theirs)
            }
        }
    }

    #[cfg(not(unix))]
    fn region(&self) -> Option<usize> {
        None
    }

    /// Carve `layout` from the region, or `None` when it does not fit.
    fn carve(&self, layout: Layout) -> Option<*mut u8> {
        if layout.size() > SMALL {
            return None;
        }
        let base = self.region()?;
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            // `align` is a power of two no larger than SMALL's neighbourhood
            // for carved sizes; the addition cannot overflow in the region.
            let start = (base + used).next_multiple_of(layout.align()) - base;
            let end = start.checked_add(layout.size())?;
            if end > REGION {
                return None;
            }
            match self
                .used
                .compare_exchange_weak(used, end, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Some((base + start) as *mut u8),
                Err(now) => used = now,
            }
        }
    }

    /// Is `ptr` one of the region's carvings?
    fn owns(&self, ptr: *mut u8) -> bool {
        let base = self.base.load(Ordering::Acquire);
        base != 0 && base != FAILED && (ptr as usize).wrapping_sub(base) < REGION
    }
}

impl Default for Arena {
    fn default() -> Self {
        Arena::new()
    }
}

// SAFETY: every pointer returned is either a carving of at least
// `layout.size()` bytes at `layout.align()` inside the region, never handed
// out twice (the offset only grows), or the system allocator's; each is
// released by whichever made it.
unsafe impl GlobalAlloc for Arena {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match self.carve(layout) {
            Some(p) => p,
            // SAFETY: the caller's contract (a non-zero size) passes on.
            None => unsafe { System.alloc(layout) },
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        match self.carve(layout) {
            // A fresh carving is zero: the mapping's pages start zeroed and
            // no carving is ever reused.
            Some(p) => p,
            // SAFETY: as in `alloc`.
            None => unsafe { System.alloc_zeroed(layout) },
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if !self.owns(ptr) {
            // SAFETY: not a carving, so the system allocator made it.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if !self.owns(ptr) {
            // SAFETY: the system allocator's block, with the caller's
            // contract.
            return unsafe { System.realloc(ptr, layout, new_size) };
        }
        let base = self.base.load(Ordering::Acquire);
        let start = ptr as usize - base;
        if new_size <= layout.size() {
            // Shrinking keeps the block (no carving is ever reused, which is
            // what keeps fresh carvings zeroed).
            return ptr;
        }
        // The latest carving grows in place.
        if new_size <= SMALL
            && start + new_size <= REGION
            && self
                .used
                .compare_exchange(
                    start + layout.size(),
                    start + new_size,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_ok()
        {
            return ptr;
        }
        // SAFETY: `new_size` is non-zero and, with the old alignment, a
        // valid layout (the caller's contract).
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: as in `alloc`.
        let new = unsafe { self.alloc(new_layout) };
        if !new.is_null() {
            // SAFETY: both blocks are valid for the old size (the new one is
            // larger) and distinct.
            unsafe { std::ptr::copy_nonoverlapping(ptr, new, layout.size()) };
        }
        new
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn layout(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size, align).unwrap()
    }

    #[test]
    fn carvings_are_aligned_distinct_and_zeroed_and_large_ones_go_to_the_system() {
        let a = Arena::new();
        let mut seen = Vec::new();
        for (size, align) in [(1, 1), (24, 8), (3, 1), (64, 64), (SMALL, 16), (7, 2)] {
            let p = unsafe { a.alloc_zeroed(layout(size, align)) };
            assert!(a.owns(p));
            assert_eq!(p as usize % align, 0, "{size}/{align}");
            assert!(unsafe { std::slice::from_raw_parts(p, size) }
                .iter()
                .all(|&b| b == 0));
            unsafe { p.write_bytes(0xAB, size) };
            seen.push((p as usize, size));
        }
        seen.sort();
        for w in seen.windows(2) {
            assert!(w[0].0 + w[0].1 <= w[1].0, "overlap: {w:?}");
        }
        let big = unsafe { a.alloc(layout(SMALL + 1, 8)) };
        assert!(!big.is_null() && !a.owns(big));
        unsafe { a.dealloc(big, layout(SMALL + 1, 8)) };
    }

    #[test]
    fn the_latest_carving_grows_in_place_and_others_move_with_their_bytes() {
        let a = Arena::new();
        let p = unsafe { a.alloc(layout(8, 8)) };
        unsafe { p.copy_from(b"abcdefgh".as_ptr(), 8) };
        let q = unsafe { a.realloc(p, layout(8, 8), 100) };
        assert_eq!(p, q, "the latest carving grows in place");
        let _other = unsafe { a.alloc(layout(8, 8)) };
        let r = unsafe { a.realloc(q, layout(100, 8), 200) };
        assert_ne!(q, r);
        assert_eq!(unsafe { std::slice::from_raw_parts(r, 8) }, b"abcdefgh");
        // Growing past SMALL leaves the region, bytes kept.
        let s = unsafe { a.realloc(r, layout(200, 8), SMALL * 4) };
        assert!(!a.owns(s));
        assert_eq!(unsafe { std::slice::from_raw_parts(s, 8) }, b"abcdefgh");
        let t = unsafe { a.realloc(s, layout(SMALL * 4, 8), SMALL * 8) };
        assert_eq!(unsafe { std::slice::from_raw_parts(t, 8) }, b"abcdefgh");
        unsafe { a.dealloc(t, layout(SMALL * 8, 8)) };
    }

    #[test]
    fn a_shrink_never_gives_bytes_back_so_zeroed_carvings_stay_zero() {
        let a = Arena::new();
        let p = unsafe { a.alloc(layout(64, 8)) };
        unsafe { p.write_bytes(0xFF, 64) };
        let q = unsafe { a.realloc(p, layout(64, 8), 8) };
        assert_eq!(p, q);
        let z = unsafe { a.alloc_zeroed(layout(56, 8)) };
        assert!(unsafe { std::slice::from_raw_parts(z, 56) }
            .iter()
            .all(|&b| b == 0));
    }

    #[test]
    fn a_full_region_falls_back_to_the_system_allocator() {
        let a = Arena::new();
        let n = REGION / SMALL;
        for _ in 0..n {
            let p = unsafe { a.alloc(layout(SMALL, 1)) };
            assert!(a.owns(p));
        }
        let p = unsafe { a.alloc(layout(16, 8)) };
        assert!(!p.is_null() && !a.owns(p), "past the region: the system's");
        unsafe { a.dealloc(p, layout(16, 8)) };
        // SAFETY: the test's own region, no carving used afterwards.
        unsafe { libc::munmap(a.base.load(Ordering::Relaxed) as *mut libc::c_void, REGION) };
    }

    #[test]
    fn threads_never_get_the_same_carving() {
        let a = std::sync::Arc::new(Arena::new());
        let handles: Vec<_> = (0..4)
            .map(|t| {
                let a = a.clone();
                std::thread::spawn(move || {
                    (0..2000)
                        .map(|_| {
                            let p = unsafe { a.alloc(layout(16, 8)) };
                            unsafe { p.write_bytes(t, 16) };
                            p as usize
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut all: Vec<usize> = handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), 8000);
    }
}
