//! The binary's allocator (ADR 0009): mimalloc through `libmimalloc-sys`. Its own file so
//! that `examples/helm_bench.rs` times the phases on the allocator `kiln` runs with
//! (`#[path]`); the library sets none.

/// mimalloc, called as C calls it where that suffices. The `mimalloc` crate's allocator sends
/// every request to `mi_malloc_aligned`/`mi_realloc_aligned`, whose alignment handling costs
/// about 30 instructions more per call than `mi_malloc`'s fast path (callgrind, a nats render:
/// 20,000 allocations). Every mimalloc block is word-aligned (its size classes are multiples
/// of the word), so a request aligned to a word or less needs nothing more; a larger
/// alignment keeps the aligned entry points.
pub struct Alloc;

/// The alignment every mimalloc block has.
const WORD: usize = std::mem::size_of::<usize>();

// SAFETY: each method passes the request to the mimalloc function made for it, with the
// alignment kept where it exceeds what every block has (`WORD`); `dealloc` frees any block
// of either kind (`mi_free` takes both).
unsafe impl std::alloc::GlobalAlloc for Alloc {
    #[inline]
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        use libmimalloc_sys as mi;
        // SAFETY: plain C allocation calls; a null result is passed on as the failure.
        unsafe {
            if layout.align() <= WORD {
                mi::mi_malloc(layout.size()).cast()
            } else {
                mi::mi_malloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        use libmimalloc_sys as mi;
        // SAFETY: as `alloc`.
        unsafe {
            if layout.align() <= WORD {
                mi::mi_zalloc(layout.size()).cast()
            } else {
                mi::mi_zalloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: std::alloc::Layout) {
        // SAFETY: `ptr` came from this allocator (the trait's contract).
        unsafe { libmimalloc_sys::mi_free(ptr.cast()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        use libmimalloc_sys as mi;
        // SAFETY: `ptr` came from this allocator with `layout` (the trait's contract); the
        // block keeps its alignment as `alloc` chose it.
        unsafe {
            if layout.align() <= WORD {
                mi::mi_realloc(ptr.cast(), new_size).cast()
            } else {
                mi::mi_realloc_aligned(ptr.cast(), new_size, layout.align()).cast()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Alloc, WORD};
    use std::alloc::{GlobalAlloc, Layout};

    /// Every request gets a block with its alignment, word-aligned ones through `mi_malloc`
    /// and larger ones through the aligned calls, and `realloc` keeps contents and alignment.
    #[test]
    fn blocks_keep_their_alignment_and_contents() {
        let a = Alloc;
        for align in [1, 2, 4, WORD, 16, 64, 4096] {
            for size in [1, 3, 8, 13, 24, 40, 100, 1000, 70_000] {
                let layout = Layout::from_size_align(size, align).unwrap();
                // SAFETY: non-zero sizes; each block is freed with the layout it was made by.
                unsafe {
                    let p = a.alloc(layout);
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0, "size {size} align {align}");
                    for i in 0..size {
                        *p.add(i) = i as u8;
                    }
                    let grown = size * 3 + 5;
                    let q = a.realloc(p, layout, grown);
                    assert_eq!(q as usize % align, 0, "realloc {size} align {align}");
                    for i in 0..size {
                        assert_eq!(*q.add(i), i as u8);
                    }
                    a.dealloc(q, Layout::from_size_align(grown, align).unwrap());
                    let z = a.alloc_zeroed(layout);
                    assert_eq!(z as usize % align, 0);
                    assert!((0..size).all(|i| *z.add(i) == 0));
                    a.dealloc(z, layout);
                }
            }
        }
    }
}
