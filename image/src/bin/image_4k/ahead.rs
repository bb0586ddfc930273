//! The chain's kernels built ahead on each device while the first frames decode
//! ([`Pipeline::prepare`]): a frame would otherwise build them one after another (on CUDA,
//! NVRTC and the driver's compile, tenths of a second each on a machine that never ran them). A device's workers run no frame before its builds are done, so the builds' small
//! frames never share the budget with a real one.

use std::sync::{Condvar, Mutex};

use vramkit::backend::Backend;
use vramkit::Context;
use vramkit_image::Pipeline;

/// One gate a device, open once that device's kernels are built (or their build failed: a
/// run meets the same error and says it for its frame).
pub struct Ahead {
    gates: Vec<(Mutex<bool>, Condvar)>,
}

/// Opens a gate when dropped: also when a build panics (the gate; the tool's run still ends
/// with that panic).
struct Opens<'a>(&'a Ahead, usize);

impl Drop for Opens<'_> {
    fn drop(&mut self) {
        self.0.open(self.1);
    }
}

impl Ahead {
    /// Gates for `devices` devices, all shut.
    pub fn new(devices: usize) -> Self {
        Ahead {
            gates: (0..devices)
                .map(|_| (Mutex::new(false), Condvar::new()))
                .collect(),
        }
    }

    /// Builds the kernels of `p` (for 16-bit frames where `wide`) on device `d`, waits for the
    /// device, and opens its gate. Errors are left to the run, which meets them for a frame.
    pub fn build<B: Backend>(&self, d: usize, p: &Pipeline, wide: bool, ctx: &Context<B>) {
        let _opens = Opens(self, d);
        let built = if wide {
            p.prepare_rgba16(ctx)
        } else {
            p.prepare(ctx)
        };
        // The small frames' memory back in the pools before a frame plans its tiles.
        let _ = ctx.wait();
        match built {
            Ok(()) => log::debug!("device {d}: kernels built ahead"),
            Err(e) => log::debug!("device {d}: kernels not built ahead: {e}"),
        }
    }

    /// Opens device `d`'s gate.
    pub fn open(&self, d: usize) {
        if let Some((open, opened)) = self.gates.get(d) {
            *open.lock().unwrap_or_else(|e| e.into_inner()) = true;
            opened.notify_all();
        }
    }

    /// Waits until device `d`'s gate is open.
    pub fn wait(&self, d: usize) {
        if let Some((open, opened)) = self.gates.get(d) {
            let mut is_open = open.lock().unwrap_or_else(|e| e.into_inner());
            while !*is_open {
                is_open = opened.wait(is_open).unwrap_or_else(|e| e.into_inner());
            }
        }
    }
}
