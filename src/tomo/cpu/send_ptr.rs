//! The one way a mutable buffer crosses threads in the CPU kernels: tasks that own disjoint
//! parts of it (slabs of planes of the volume) share a pointer to the whole.

use std::marker::PhantomData;

/// A mutable slice shared by parallel tasks, each of which writes only the elements it owns.
/// Making one is safe (it borrows the slice for as long as it lives); every access through it
/// is `unsafe`, with the caller's word that no two tasks touch the same elements.
#[derive(Clone, Copy)]
pub(crate) struct SendPtr<'a, T> {
    ptr: *mut T,
    len: usize,
    _slice: PhantomData<&'a mut [T]>,
}

// SAFETY: the pointer is only dereferenced by callers of the `unsafe` accessors, who guarantee
// that tasks access disjoint elements; the borrow keeps the slice alive and otherwise unused.
unsafe impl<T: Send> Send for SendPtr<'_, T> {}
unsafe impl<T: Send> Sync for SendPtr<'_, T> {}

impl<'a, T> SendPtr<'a, T> {
    /// Shares `slice` (borrowed mutably while the result lives).
    pub(crate) fn new(slice: &'a mut [T]) -> Self {
        Self {
            ptr: slice.as_mut_ptr(),
            len: slice.len(),
            _slice: PhantomData,
        }
    }

    /// The slice's first element, for kernels that take raw pointers.
    pub(crate) fn as_mut_ptr(&self) -> *mut T {
        self.ptr
    }

    /// The whole slice.
    ///
    /// # Safety
    /// While the result lives, no other task may access the elements that this task accesses
    /// through it.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn slice_mut(&self) -> &mut [T] {
        // SAFETY: `ptr` and `len` are those of the borrowed slice; exclusive access to the
        // elements used is the caller's contract.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}
