// The allocator of the standard plugins: during permhost_decide, a bump
// arena emptied when the call returns; otherwise (and when the arena is
// full) the system allocator. A decision allocates a few hundred small
// strings and vectors and frees them all at its end; dlmalloc's
// bookkeeping made that most of a decision's time (RATIONALE.md).
//
// What outlives a call (the caches of the config) must be allocated
// outside it: [persistent] runs a closure with the arena off.

use std::alloc::{GlobalAlloc, Layout, System};

pub struct Arena;

/// The arena's size; a call that needs more gets the rest from the system.
const SIZE: usize = 256 * 1024;

// One thread: the module is single-threaded wasm.
static mut BASE: usize = 0;
static mut END: usize = 0;
static mut TOP: usize = 0;
static mut ON: bool = false;
/// Whether the current call allocated outside the arena (it was full).
static mut SPILLED: bool = false;

fn inside(a: usize) -> bool {
    unsafe { a >= BASE && a < END }
}

unsafe impl GlobalAlloc for Arena {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if ON {
            let p = (TOP + l.align() - 1) & !(l.align() - 1);
            if p <= END && END - p >= l.size() {
                TOP = p + l.size();
                return p as *mut u8;
            }
            SPILLED = true;
        }
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        let a = p as usize;
        if inside(a) {
            // The last allocation gives its bytes back; the others wait
            // for the end of the call.
            if a + l.size() == TOP {
                TOP = a;
            }
            return;
        }
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let a = p as usize;
        if !inside(a) {
            return System.realloc(p, l, new);
        }
        if a + l.size() == TOP && END - a >= new {
            TOP = a + new;
            return p;
        }
        let q = self.alloc(Layout::from_size_align_unchecked(new, l.align()));
        if !q.is_null() {
            std::ptr::copy_nonoverlapping(p, q, l.size().min(new));
        }
        q
    }
}

/// Runs f with the arena, emptied afterwards: nothing f allocates may
/// outlive it, except through [persistent].
pub fn call<T>(f: impl FnOnce() -> T) -> T {
    unsafe {
        if BASE == 0 {
            let p = System.alloc(Layout::from_size_align_unchecked(SIZE, 16)) as usize;
            if p != 0 {
                BASE = p;
                END = p + SIZE;
            }
        }
        TOP = BASE;
        ON = BASE != 0;
        SPILLED = false;
    }
    let out = f();
    unsafe {
        ON = false;
        TOP = BASE;
    }
    out
}

/// Runs f with the arena off: what it allocates can be kept across calls.
pub fn persistent<T>(f: impl FnOnce() -> T) -> T {
    unsafe {
        let on = ON;
        ON = false;
        let out = f();
        ON = on;
        out
    }
}

/// Ends the life of v, a value made during the current call: when all of
/// it is in the arena, which the call's end empties anyway, without running
/// its destructors (walking a request's tree to free nothing costs more than
/// reading it did); otherwise dropped as usual. Only for values whose drop
/// frees memory and nothing else, and holds nothing made by [persistent].
pub fn discard<T>(v: T) {
    if unsafe { ON && !SPILLED } {
        std::mem::forget(v);
    } else {
        drop(v);
    }
}
