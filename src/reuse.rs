//! `Clone` whose `clone_from` reuses the target's allocations, field by field.
//!
//! `#[derive(Clone)]` leaves `clone_from` at its default, a fresh `clone` assigned over the
//! target, which frees every buffer the target held and allocates each again. The
//! exhaustive checker clones its controllers for each of millions of transitions
//! (`checker::cmp`), and most of the clones are dropped again at once as states it has
//! seen; with its spent states handed back, a `clone_from` that copies into their buffers
//! takes most of the allocator's work out of the search.

/// Implements `Clone` for a struct from the list of its fields: `clone` clones each,
/// `clone_from` calls each field's own `clone_from` (a `Vec`'s copies into the buffer it
/// has when that is large enough). Both destructure the struct without `..`, so a field
/// added to the struct and not to the list fails to compile instead of going uncopied.
macro_rules! clone_by_fields {
    ($ty:ident $(<$g:ident>)? { $($f:ident),* $(,)? }) => {
        impl$(<$g: Clone>)? Clone for $ty$(<$g>)? {
            fn clone(&self) -> Self {
                let $ty { $($f),* } = self;
                $ty { $($f: $f.clone()),* }
            }

            fn clone_from(&mut self, source: &Self) {
                let $ty { $($f),* } = self;
                $( $f.clone_from(&source.$f); )*
            }
        }
    };
}

pub(crate) use clone_by_fields;

#[cfg(test)]
mod tests {
    /// Two fields with buffers and one plain.
    #[derive(Debug, PartialEq)]
    struct Pair {
        a: Vec<u64>,
        b: Vec<u8>,
        n: u32,
    }

    clone_by_fields!(Pair { a, b, n });

    /// `clone_from` leaves the target equal to the source, whatever either held before,
    /// and keeps the target's buffer where it is large enough.
    #[test]
    fn clone_from_copies_every_field_into_the_buffers_it_has() {
        let source = Pair {
            a: vec![1, 2, 3],
            b: vec![9; 40],
            n: 7,
        };
        let mut target = Pair {
            a: Vec::with_capacity(16),
            b: vec![1],
            n: 0,
        };
        target.a.extend([5; 10]);
        let a_buf = target.a.as_ptr();
        target.clone_from(&source);
        assert_eq!(target, source);
        assert_eq!(target.a.as_ptr(), a_buf, "the larger buffer is kept");
        assert_eq!(source.clone(), source);
    }
}
