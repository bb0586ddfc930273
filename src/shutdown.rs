//! What a dropped [`Context`] does: waits for its work, frees its staging, and logs what it
//! still held (the leak report, with where each leak was allocated under
//! [`DebugSettings::backtraces`](crate::DebugSettings::backtraces)). No call follows to return
//! an error to, so errors are logged.

use crate::backend::Backend;
use crate::types::lock;
use crate::Context;

impl<B: Backend> Drop for Context<B> {
    fn drop(&mut self) {
        // No call follows to return an error to: errors are logged. They mean the device is
        // gone, and its memory with it; blocks whose work may still run are leaked, not freed.
        let waited = self
            .backend
            .submit()
            .and_then(|last| self.backend.wait(last))
            .and_then(|()| self.backend.check_device());
        if let Err(e) = waited {
            log::warn!("vramkit: context {} dropped after an error: {e}", self.id);
        }
        let mut staging = lock(&self.staging);
        let mut mem = self.manager();
        let staging = &mut *staging;
        for ring in [&mut staging.upload, &mut staging.readback] {
            if let Err(e) = ring.clear(&self.backend, &mut mem) {
                log::warn!("vramkit: context {}: staging not freed: {e}", self.id);
            }
        }
        if let Err(e) = mem.check_deferred() {
            log::warn!("vramkit: context {} dropped after an error: {e}", self.id);
        }
        for leak in mem.shutdown(&self.backend) {
            log::warn!(
                "vramkit: context {} dropped with `{}`{} alive: {} B of {:?} memory{}",
                self.id,
                leak.label,
                leak.tag.map_or(String::new(), |t| format!(" [{t}]")),
                leak.size,
                leak.kind,
                leak.allocated_at.map_or_else(
                    || " (DebugSettings::backtraces says where it was allocated)".into(),
                    |b| format!(", allocated at:\n{b}")
                )
            );
        }
    }
}
