//! The one way into the memory manager: [`SharedManager::lock`]. Code outside `memory/`
//! reaches it through `Context::manager`, one operation at a time. A poisoned lock is taken
//! over: the manager keeps its records consistent between calls, and a panic inside one (a
//! vramkit bug) is reported where it happened.

use std::sync::{Mutex, MutexGuard};

use super::manager::Manager;
use crate::backend::Storage;
use crate::types::lock;

/// A context's memory manager, shared by its calls (and threads).
pub(crate) struct SharedManager<B: Storage>(Mutex<Manager<B>>);

impl<B: Storage> SharedManager<B> {
    pub(crate) fn new(manager: Manager<B>) -> Self {
        Self(Mutex::new(manager))
    }

    /// The manager, locked for one operation: allocation records, pools, budget, counters
    /// and timeline. Held briefly; never across a wait for the device that another thread's
    /// call could need the manager for.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Manager<B>> {
        lock(&self.0)
    }
}
