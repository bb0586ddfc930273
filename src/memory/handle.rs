//! Generational handles.
//!
//! A handle is a slotmap key (index + generation) plus the id of the context that made it, so a
//! released, double-released or foreign handle is a typed error, never a panic or a wrong buffer.
//! Handles are indirect: the memory behind one can move without the user noticing.

use std::sync::atomic::{AtomicU32, Ordering};

slotmap::new_key_type! {
    /// Key of a live buffer allocation inside one context.
    pub(crate) struct BufferKey;
}

slotmap::new_key_type! {
    /// Key of a live texture inside one context.
    pub(crate) struct TextureKey;
}

/// A handle to a texture allocated by a [`Context`](crate::Context), with the same rules as a
/// [`BufferHandle`]: released, double-released or foreign handles are typed errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TextureHandle {
    pub(crate) key: TextureKey,
    pub(crate) context: u32,
}

/// A handle to a buffer allocated by a [`Context`](crate::Context). `Copy`, cheap, and checked
/// on every use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BufferHandle {
    pub(crate) key: BufferKey,
    pub(crate) context: u32,
}

/// A process-unique id for a new context.
pub(crate) fn next_context_id() -> u32 {
    static NEXT: AtomicU32 = AtomicU32::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}
