//! Textures in the memory manager.
//!
//! A texture is one driver allocation, never sub-allocated from a pool's blocks (wgpu gives no
//! way to place an image in a buffer's memory), so the manager keeps textures beside the pools:
//! generational handles with the buffers' rules, kind [`MemoryKind::Texture`] in every counter
//! (requested = the texels' bytes, in use = reserved = what the texture holds in the budget),
//! tags, leaks, audits and the timeline. A texture's bytes are the driver's figure where the
//! backend reports one, and never less than the estimate (padded rows of every mip level), so
//! the budget holds whatever the driver does. A released texture is freed once the submissions
//! that used it completed; compaction never moves textures.

use std::backtrace::Backtrace;
use std::sync::Arc;

use slotmap::SlotMap;

use super::emit::Change;
use super::{is_refusal, Manager};
use crate::backend::Storage;
use crate::memory::handle::{TextureHandle, TextureKey};
use crate::memory::trace::EventKind;
use crate::memory::AllocationInfo;
use crate::types::error::{Error, Result, StaleReason};
use crate::types::texture::{TextureDesc, TextureInfo};
use crate::types::{MemoryKind, QueueIndex};

const KIND: MemoryKind = MemoryKind::Texture;

pub(crate) struct TextureEntry<T> {
    pub raw: T,
    pub desc: TextureDesc,
    /// Bytes counted in the budget.
    pub bytes: u64,
    pub driver_bytes: Option<u64>,
    /// The last submission that uses it (0: none).
    pub last_use: QueueIndex,
    tag: u32,
    seq: u64,
    backtrace: Option<Arc<Backtrace>>,
}

/// Live textures, and released ones waiting for their last submission.
pub(crate) struct Textures<T> {
    live: SlotMap<TextureKey, TextureEntry<T>>,
    pending: Vec<(QueueIndex, T, u64)>,
}

impl<T> Default for Textures<T> {
    fn default() -> Self {
        Self {
            live: SlotMap::with_key(),
            pending: Vec::new(),
        }
    }
}

impl<T> Textures<T> {
    /// Bytes and count of textures held from the device, released ones not yet freed included.
    pub fn held(&self) -> (u64, usize) {
        let live: u64 = self.live.values().map(|t| t.bytes).sum();
        let pending: u64 = self.pending.iter().map(|p| p.2).sum();
        (live + pending, self.live.len() + self.pending.len())
    }

    /// Bytes of released textures that pending work still uses.
    pub fn pending_bytes(&self) -> u64 {
        self.pending.iter().map(|p| p.2).sum()
    }

    pub fn len(&self) -> usize {
        self.live.len()
    }
}

impl<B: Storage> Manager<B> {
    /// The live texture behind a handle.
    pub fn texture(&self, h: TextureHandle) -> Result<&TextureEntry<B::Texture>> {
        if h.context != self.context {
            return Err(Error::StaleHandle {
                reason: StaleReason::ForeignContext,
            });
        }
        self.textures.live.get(h.key).ok_or(Error::StaleHandle {
            reason: StaleReason::Released,
        })
    }

    /// Records that submission `index` uses the texture.
    pub fn touch_texture(&mut self, h: TextureHandle, index: QueueIndex) {
        if let Some(t) = self.textures.live.get_mut(h.key) {
            t.last_use = t.last_use.max(index);
        }
    }

    pub fn alloc_texture(&mut self, backend: &B, desc: TextureDesc) -> Result<TextureHandle> {
        backend.check_device()?;
        self.check_deferred()?;
        desc.validate(backend.limits().max_texture_side)?;
        self.collect(backend)?;
        let estimate = desc.estimated_bytes();
        let made = self.make_texture(backend, &desc, estimate);
        let (raw, driver_bytes) = match made {
            Ok(m) => m,
            Err(e) => {
                self.count_error(KIND, &e);
                return Err(e);
            }
        };
        let bytes = estimate.max(driver_bytes.unwrap_or(0));
        if bytes > self.budget.headroom(self.counters.reserved) {
            // The driver takes more than estimated, past the budget: give it back at once (no
            // work has used it).
            // SAFETY: the texture was just made; nothing recorded uses it.
            unsafe { backend.free_texture(raw) };
            let e = self.over_budget(backend, KIND, bytes);
            self.count_error(KIND, &e);
            return Err(e);
        }
        let tag = self.counters.tag_index(desc.tag.as_ref());
        self.emit(Change::BlockMade {
            kind: KIND,
            bytes,
            label: Some(&desc.label),
        });
        self.emit(Change::Alloc {
            kind: KIND,
            tag,
            requested: desc.texel_bytes(),
            size: bytes,
            label: &desc.label,
            detail: format_args!(
                "{}×{} {:?}, {bytes} B, driver {driver_bytes:?}",
                desc.width, desc.height, desc.format
            ),
        });
        let seq = self.next_seq();
        let key = self.textures.live.insert(TextureEntry {
            raw,
            desc,
            bytes,
            driver_bytes,
            last_use: 0,
            tag,
            seq,
            backtrace: (self.settings.debug.backtraces)
                .then(|| Arc::new(Backtrace::force_capture())),
        });
        Ok(TextureHandle {
            key,
            context: self.context,
        })
    }

    /// Makes the texture within the budget, reclaiming cached memory and then compacting the
    /// buffers when the budget or the device is short.
    fn make_texture(
        &mut self,
        backend: &B,
        desc: &TextureDesc,
        estimate: u64,
    ) -> Result<(B::Texture, Option<u64>)> {
        // Remedies in order: cached memory, then buffers gathered (as for a buffer request).
        let mut tries = 0;
        loop {
            let result = if estimate > self.budget.headroom(self.counters.reserved) {
                Err(self.over_budget(backend, KIND, estimate))
            } else {
                backend.alloc_texture(desc)
            };
            match result {
                Err(e) if is_refusal(&e) && tries < 2 => {
                    tries += 1;
                    let freed = if tries == 1 {
                        self.reclaim(backend)?
                    } else {
                        self.compact_for_room(backend, estimate)?
                    };
                    if !freed && tries == 2 {
                        return Err(e);
                    }
                }
                r => return r,
            }
        }
    }

    pub fn release_texture(&mut self, backend: &B, h: TextureHandle) -> Result<()> {
        self.texture(h)?;
        let Some(t) = self.textures.live.remove(h.key) else {
            return Err(Error::Internal {
                message: "a texture vanished between its check and its release".into(),
            });
        };
        self.emit(Change::Release {
            kind: KIND,
            tag: t.tag,
            requested: t.desc.texel_bytes(),
            size: t.bytes,
            label: &t.desc.label,
        });
        if t.last_use == 0 || backend.is_done(t.last_use)? {
            self.free_texture(backend, t.raw, t.bytes);
        } else {
            self.textures.pending.push((t.last_use, t.raw, t.bytes));
        }
        Ok(())
    }

    /// Gives a texture whose work has finished back to the device.
    fn free_texture(&mut self, backend: &B, raw: B::Texture, bytes: u64) {
        self.emit(Change::BlockFreed { kind: KIND, bytes });
        // SAFETY: the texture's last submission has finished (checked or waited for by the
        // caller) and no handle refers to it any more.
        unsafe { backend.free_texture(raw) };
    }

    /// Frees released textures whose submissions have completed; with `wait`, all of them
    /// after waiting.
    pub(super) fn collect_textures(&mut self, backend: &B, wait: bool) -> Result<()> {
        if self.textures.pending.is_empty() {
            return Ok(());
        }
        if wait {
            if let Some(last) = self.textures.pending.iter().map(|p| p.0).max() {
                backend.wait(last)?;
            }
        }
        let mut keep = Vec::new();
        for p in std::mem::take(&mut self.textures.pending) {
            if backend.is_done(p.0)? {
                self.free_texture(backend, p.1, p.2);
            } else {
                keep.push(p);
            }
        }
        self.textures.pending = keep;
        Ok(())
    }

    /// Frees every texture at shutdown (the caller has waited for the device).
    pub(super) fn drain_textures(&mut self, backend: &B) {
        let live: Vec<_> = self
            .textures
            .live
            .drain()
            .map(|(_, t)| (t.raw, t.bytes))
            .collect();
        let pending = std::mem::take(&mut self.textures.pending);
        for (raw, bytes) in live
            .into_iter()
            .chain(pending.into_iter().map(|p| (p.1, p.2)))
        {
            self.free_texture(backend, raw, bytes);
        }
    }

    /// Logs a transfer of `bytes` to or from a texture, if tracing.
    pub fn record_texture_transfer(&mut self, what: EventKind, h: TextureHandle, bytes: u64) {
        if self.recorder.is_none() {
            return;
        }
        if let Some(t) = self.textures.live.get(h.key) {
            let label = t.desc.label.clone();
            self.emit(Change::Transfer {
                what,
                kind: KIND,
                bytes,
                label: &label,
            });
        }
    }

    pub fn texture_info(&self, h: TextureHandle) -> Result<TextureInfo> {
        let t = self.texture(h)?;
        Ok(TextureInfo {
            desc: t.desc.clone(),
            bytes: t.bytes,
            driver_bytes: t.driver_bytes,
        })
    }

    /// Live textures made after allocation number `after`, as allocation records.
    pub(super) fn textures_since(&self, after: u64, where_from: bool) -> Vec<AllocationInfo> {
        self.textures
            .live
            .values()
            .filter(|t| t.seq > after)
            .map(|t| AllocationInfo {
                label: t.desc.label.clone(),
                tag: t.desc.tag.clone(),
                kind: KIND,
                size: t.desc.texel_bytes(),
                reserved: t.bytes,
                block: u64::MAX,
                offset: 0,
                dedicated: true,
                movable: false,
                allocated_at: if where_from {
                    t.backtrace.as_ref().map(|b| b.to_string())
                } else {
                    None
                },
            })
            .collect()
    }
}
