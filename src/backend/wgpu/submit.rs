//! Recording and submitting on wgpu: vramkit's one open encoder, submitted in batches of at
//! most [`MAX_RECORDED`] commands, inside error scopes, so that a submission the device refuses
//! is reported by the call that made it (naming its launches) and recorded for the manager
//! ([`Storage::refused_submissions`](crate::backend::Storage::refused_submissions)).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{WgpuBackend, WgpuBlock, WgpuKernel};
use crate::backend::Storage;
use crate::types::error::{Error, Result};
use crate::types::lock;
use crate::types::QueueIndex;

/// The open (not yet submitted) work.
pub(super) struct Recorder {
    encoder: Option<wgpu::CommandEncoder>,
    /// Index the open (not yet submitted) work will get.
    pub(super) open: QueueIndex,
    /// Labels of the kernels launched in the open work, for the message of a refusal.
    launches: Vec<String>,
    /// Commands recorded into the open encoder.
    recorded: u32,
}

/// The most commands one submission holds: [`WgpuBackend::record`] submits the open encoder
/// before recording more. Each compute pass becomes raw command buffers of its own, and wgpu
/// pools finished encoders with every command buffer they ever held, for reuse; so one
/// submission of thousands of launches (a compaction pass slides allocations in pieces, a
/// copy kernel each, holding the memory manager while no transfer submits) would leave that
/// many command buffers behind for good, in every pooled encoder it reaches, and each reuse
/// would reset them all. Bounded, the pool stays small; the extra submissions cost little
/// beside hundreds of passes.
const MAX_RECORDED: u32 = 256;

impl Recorder {
    pub(super) fn new() -> Self {
        Self {
            encoder: None,
            open: 1,
            launches: Vec::new(),
            recorded: 0,
        }
    }
}

/// Kernels named in the message of a refused submission, at most.
const MAX_NAMED_LAUNCHES: usize = 16;

/// The message of a refused submission: which one, what it held, what the device said, what
/// became of its work and what to do.
fn refusal(n: QueueIndex, launches: &[String], e: &wgpu::Error) -> String {
    let held = if launches.is_empty() {
        "copies and clears".to_string()
    } else {
        format!("the launches of {}", launches.join(", "))
    };
    format!(
        "the device refused submission {n} ({held}, with the copies vramkit recorded beside \
         them): {e}. None of its work ran: downloads of the allocations it used fail until they \
         are written again (upload them, or launch the work that writes them again)"
    )
}

impl WgpuBackend {
    pub(super) fn take_uncaptured(&self) -> Result<()> {
        let mut errors = lock(&self.uncaptured);
        if errors.is_empty() {
            return Ok(());
        }
        let message = errors.join("; ");
        errors.clear();
        drop(errors);
        self.check_lost()?;
        Err(Error::Backend { message })
    }

    /// Records one compute pass running `kernel` over `bind_group`.
    pub(super) fn launch(
        &self,
        kernel: &WgpuKernel,
        bind_group: &wgpu::BindGroup,
        workgroups: [u32; 3],
    ) -> Result<QueueIndex> {
        self.record_launch(&kernel.label, |e| {
            let mut pass = e.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some(&kernel.label),
                timestamp_writes: None,
            });
            pass.set_pipeline(&kernel.pipeline);
            pass.set_bind_group(0, bind_group, &[]);
            pass.dispatch_workgroups(workgroups[0], workgroups[1], workgroups[2]);
        })
    }

    /// Records with `f` into the open command encoder and returns the index its work will get.
    /// A full encoder ([`MAX_RECORDED`]) is submitted first; nothing is recorded on an error.
    pub(super) fn record(&self, f: impl FnOnce(&mut wgpu::CommandEncoder)) -> Result<QueueIndex> {
        self.record_launch("", f)
    }

    /// [`record`](Self::record), naming the kernel it launches (`""`: a copy or clear).
    pub(super) fn record_launch(
        &self,
        label: &str,
        f: impl FnOnce(&mut wgpu::CommandEncoder),
    ) -> Result<QueueIndex> {
        self.check_lost()?;
        if lock(&self.recorder).recorded >= MAX_RECORDED {
            // Work being recorded in pieces (a slide) must not stop half-way: a refusal of
            // the submission is recorded for the manager (its allocations become unknown),
            // and any other error comes back from the next submit.
            if let Err(e) = self.submit_now(false) {
                log::warn!("vramkit: submitting a full encoder: {e}");
                lock(&self.uncaptured).push(e.to_string());
            }
        }
        let mut rec = lock(&self.recorder);
        if !label.is_empty() && rec.launches.len() < MAX_NAMED_LAUNCHES {
            rec.launches.push(label.to_string());
        }
        let encoder = rec.encoder.get_or_insert_with(|| {
            self.device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("vramkit"),
                })
        });
        f(encoder);
        rec.recorded += 1;
        Ok(rec.open)
    }

    /// Runs `f` inside out-of-memory, validation and internal error scopes.
    pub(super) fn scoped<T>(&self, f: impl FnOnce() -> T) -> (T, Option<wgpu::Error>) {
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let internal = self.device.push_error_scope(wgpu::ErrorFilter::Internal);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let value = f();
        let v = pollster::block_on(validation.pop());
        let i = pollster::block_on(internal.pop());
        let o = pollster::block_on(oom.pop());
        (value, o.or(i).or(v))
    }

    /// Recorded work may use a block that is about to be mapped, and mapped buffers can not be
    /// submitted: submit it first (mapping then waits for it).
    pub(super) fn submit_before_map(&self, block: &WgpuBlock, write: bool) -> Result<()> {
        if !block.is_mapped(write) && lock(&self.recorder).encoder.is_some() {
            self.submit()?;
        }
        Ok(())
    }

    /// Submits the recorded work; with nothing recorded, returns the last index, or with
    /// `always`, makes an empty submission (a fence after everything submitted so far, the
    /// application's submissions on the same queue included).
    pub(super) fn submit_now(&self, always: bool) -> Result<QueueIndex> {
        self.submit_commands(always, Vec::new())
    }

    /// [`submit_now`](Self::submit_now), with the application's command buffers `app` after
    /// vramkit's recorded work in the same submission.
    pub(super) fn submit_commands(
        &self,
        always: bool,
        app: Vec<wgpu::CommandBuffer>,
    ) -> Result<QueueIndex> {
        self.check_lost()?;
        let mut rec = lock(&self.recorder);
        let encoder = rec.encoder.take();
        rec.recorded = 0;
        if encoder.is_none() && !always && app.is_empty() {
            return Ok(rec.open - 1);
        }
        let n = rec.open;
        rec.open += 1;
        let mut launches = std::mem::take(&mut rec.launches);
        if !app.is_empty() {
            launches.push(format!(
                "{} command buffers of the application's",
                app.len()
            ));
        }
        // Inside error scopes: a refusal is this submission's, and no other call's.
        let (index, error) = self.scoped(|| {
            let own = encoder.map(|e| e.finish());
            self.queue.submit(own.into_iter().chain(app))
        });
        let refused = error.map(|e| refusal(n, &launches, &e));
        lock(&self.submitted).push_back((n, refused.is_none().then_some(index)));
        let completed = Arc::clone(&self.completed);
        self.queue.on_submitted_work_done(move || {
            completed.fetch_max(n, Ordering::AcqRel);
        });
        if let Some(message) = &refused {
            // Recorded before the recorder is unlocked: no work of a later submission is
            // recorded before the manager can learn of this one.
            lock(&self.refused).push((n, message.clone()));
        }
        drop(rec);
        self.prune_submitted();
        if let Some(message) = refused {
            self.check_lost()?;
            return Err(Error::Backend { message });
        }
        self.take_uncaptured()?;
        Ok(n)
    }

    pub(super) fn prune_submitted(&self) {
        let done = self.completed.load(Ordering::Acquire);
        let mut q = lock(&self.submitted);
        while q.front().is_some_and(|(n, _)| *n <= done) {
            q.pop_front();
        }
    }
}
