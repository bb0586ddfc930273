//! Frames decoded while the devices open: after the first frame, the next ones (one a core,
//! the first frame's included, within what the host's memory holds of frames like the first)
//! are decoded on threads of their own, so the workers find their first frames ready instead
//! of decoding them only once a device is open.

use std::sync::Mutex;
use std::thread::JoinHandle;

use crate::batch::{self, Frame, Item, Job};
use crate::{host_memory, Failure};

/// Decodes the frames of `job` in order until one decodes: that one becomes its first frame
/// (the others' errors are their outcomes), and sets how many such frames the host's memory
/// holds at once.
pub fn decode_first(job: &mut Job, max_pixels: u64) {
    for (i, item) in job.items.iter().enumerate() {
        match batch::load(item, max_pixels) {
            Ok(frame) => {
                log::debug!("frame {i} decoded (the first)");
                job.held = host_memory::frames_held(&job.chain, frame.size, frame.samples.bits());
                job.first = Some((i, frame));
                return;
            }
            Err(f) => {
                log::debug!("frame {i} decoded (failed)");
                job.outcomes[i] = Some(Err(f));
            }
        }
    }
}

/// Starts decoding the frames after `job`'s first: one a core (the first frame's core
/// included) within what the host's memory holds.
pub fn ahead_of_workers(job: &Job, max_pixels: u64) -> Early {
    let Some((i, _)) = &job.first else {
        return Early::none();
    };
    let cores = std::thread::available_parallelism().map_or(4, |n| n.get());
    let count = cores.min(job.held).saturating_sub(1);
    Early::start(&job.items, i + 1, count, max_pixels)
}

/// A frame being decoded, or decoded, ahead of its worker.
type Decoding = JoinHandle<Result<Frame, Failure>>;

/// The frames `from..from + slots.len()`, each decoded on a thread of its own.
pub struct Early {
    from: usize,
    slots: Vec<Mutex<Option<Decoding>>>,
}

impl Early {
    /// Nothing decoded ahead.
    pub fn none() -> Self {
        Early {
            from: 0,
            slots: Vec::new(),
        }
    }

    /// Starts decoding `count` frames of `items` from `from` (fewer past the end). A frame whose
    /// thread cannot be started is decoded by its worker, as without this.
    pub fn start(items: &[Item], from: usize, count: usize, max_pixels: u64) -> Self {
        let end = from.saturating_add(count).min(items.len());
        let slots = items
            .get(from..end)
            .unwrap_or_default()
            .iter()
            .enumerate()
            .map(|(k, item)| {
                let (i, item) = (from + k, item.clone());
                let spawned = std::thread::Builder::new()
                    .name("image_4k-decode".into())
                    .spawn(move || {
                        let frame = batch::load(&item, max_pixels);
                        log::debug!("frame {i} decoded ahead{}", failed(&frame));
                        frame
                    });
                Mutex::new(spawned.ok())
            })
            .collect();
        Early { from, slots }
    }

    /// Frame `i`, if it was decoded ahead (waiting for its decoding to end); `None` otherwise,
    /// and for a frame taken already.
    pub fn take(&self, i: usize) -> Option<Result<Frame, Failure>> {
        let slot = self.slots.get(i.checked_sub(self.from)?)?;
        let decoding = slot.lock().unwrap_or_else(|e| e.into_inner()).take()?;
        Some(decoding.join().unwrap_or_else(|_| {
            Err(Failure::Other(
                "decoding this input panicked (an image_4k bug; please report it)".into(),
            ))
        }))
    }
}

/// What a decoding log line adds for a frame that failed.
pub fn failed(frame: &Result<Frame, Failure>) -> &'static str {
    if frame.is_err() {
        " (failed)"
    } else {
        ""
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn item(input: &str) -> Item {
        Item {
            input: Some(PathBuf::from(input)),
            output: PathBuf::from("out.png"),
        }
    }

    #[test]
    fn each_frame_is_taken_once_and_only_in_range() {
        let items = [item("a.png"), item("b.png"), item("c.png")];
        let early = Early::start(&items, 1, 5, 1 << 20);
        assert!(early.take(0).is_none(), "before the range");
        // Missing files: decoded ahead all the same, as input errors.
        assert!(matches!(early.take(1), Some(Err(Failure::Input(m))) if m.contains("b.png")));
        assert!(early.take(1).is_none(), "taken twice");
        assert!(matches!(early.take(2), Some(Err(Failure::Input(_)))));
        assert!(early.take(3).is_none(), "past the end");
        assert!(Early::none().take(0).is_none());
    }
}
