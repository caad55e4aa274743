//! [`Buf`]: an array of plain numbers (weights, tables) that is either owned
//! or a view into a mapped file, so that a model prepared once
//! ([`crate::prepared`]) is used where it lies instead of being read and
//! copied by every process.

use std::marker::PhantomData;
use std::ops::Deref;
use std::sync::Arc;

use memmap2::Mmap;

/// Types whose every bit pattern is a value and which hold no pointers:
/// they can be viewed straight from a file's bytes (little-endian machines).
///
/// # Safety
/// Implement only for such types.
pub(crate) unsafe trait Plain: Copy + Default + 'static {}

// SAFETY: integers and floats of fixed size: every bit pattern is a value.
unsafe impl Plain for u8 {}
// SAFETY: as above.
unsafe impl Plain for i8 {}
// SAFETY: as above.
unsafe impl Plain for u32 {}
// SAFETY: as above.
unsafe impl Plain for i32 {}
// SAFETY: as above.
unsafe impl Plain for f32 {}
// SAFETY: an array of `u32`, laid out contiguously.
unsafe impl Plain for [u32; 3] {}

/// An owned vector or a view into a mapped file.
pub(crate) enum Buf<T: Plain> {
    Owned(Vec<T>),
    Mapped {
        map: Arc<Mmap>,
        /// Byte offset into the map (a multiple of `T`'s alignment).
        offset: usize,
        /// Number of `T`s.
        len: usize,
        _t: PhantomData<T>,
    },
}

impl<T: Plain> Buf<T> {
    /// A view of `len` values at byte `offset` of `map`; `None` when they
    /// do not fit or are not aligned for `T`.
    pub fn mapped(map: &Arc<Mmap>, offset: usize, len: usize) -> Option<Self> {
        let bytes = len.checked_mul(std::mem::size_of::<T>())?;
        let end = offset.checked_add(bytes)?;
        let addr = (map.as_ptr() as usize).checked_add(offset)?;
        (end <= map.len() && addr.is_multiple_of(std::mem::align_of::<T>())).then(|| Buf::Mapped {
            map: map.clone(),
            offset,
            len,
            _t: PhantomData,
        })
    }

    /// The values' bytes, as [`Buf::mapped`] reads them back.
    pub fn as_bytes(&self) -> &[u8] {
        let s: &[T] = self;
        // SAFETY: `T: Plain` has no padding or pointers; the byte view
        // covers exactly the slice.
        unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<u8>(), std::mem::size_of_val(s)) }
    }
}

impl<T: Plain> Default for Buf<T> {
    fn default() -> Self {
        Buf::Owned(Vec::new())
    }
}

impl<T: Plain> From<Vec<T>> for Buf<T> {
    fn from(v: Vec<T>) -> Self {
        Buf::Owned(v)
    }
}

impl<T: Plain> Deref for Buf<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        match self {
            Buf::Owned(v) => v,
            Buf::Mapped {
                map, offset, len, ..
            } => {
                // SAFETY: `mapped` checked bounds and alignment, `T: Plain`
                // accepts any bits, and the map lives as long as `self`.
                // Prepared files are replaced by rename, never rewritten in
                // place, so the bytes do not change under the view.
                unsafe { std::slice::from_raw_parts(map.as_ptr().add(*offset).cast::<T>(), *len) }
            }
        }
    }
}

impl<'a, T: Plain> IntoIterator for &'a Buf<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<T: Plain + std::fmt::Debug> std::fmt::Debug for Buf<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self {
            Buf::Owned(_) => "owned",
            Buf::Mapped { .. } => "mapped",
        };
        write!(f, "Buf({kind}, {} values)", self.len())
    }
}
