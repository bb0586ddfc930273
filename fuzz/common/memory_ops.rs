//! Random operation sequences on the host backend, from fuzzer bytes: alloc, release, upload,
//! download, trim, compact, budget queries, and bad calls, with every allocation's contents
//! checked against a model and the counters audited after each operation. Shared by the fuzz
//! target `memory_ops` and the stable test that replays its corpus (`tests/fuzz_memory.rs`).
//! Panics on any disagreement: that is the fuzzer's signal.

use vramkit::backend::host::{HostBackend, HostConfig};
use vramkit::backend::Storage;
use vramkit::{AllocDesc, BufferHandle, Context, ContextDesc, Error};

#[path = "reader.rs"]
mod reader;

use reader::{refusal, Bytes};

/// Runs the operations `data` describes. Panics where vramkit disagrees with the model.
pub fn run(data: &[u8]) {
    let mut b = Bytes(data);
    let setup = b.u8();
    let budget = (setup & 1 == 1).then(|| 64 * 1024 + b.u32() % (24 << 20));
    let desc = ContextDesc {
        budget,
        block_size: (setup & 2 == 2).then(|| 1 + b.u32() % (8 << 20)),
        staging_chunk: 1 + b.u16() * 64,
        staging_slots: usize::from(b.u8() % 5),
        release_threshold: if setup & 4 == 4 { b.u32() } else { u64::MAX },
        ..Default::default()
    };
    let backend = HostBackend::new(HostConfig {
        resizable: setup & 8 == 8,
        // Always bounded: a host "device" without a capacity grows into the fuzzer's memory.
        capacity: Some(1 + b.u32() % (64 << 20)),
        ..Default::default()
    });
    let ctx = Context::with_backend(backend, desc);
    let mut model: Vec<(BufferHandle, Vec<u8>)> = Vec::new();
    let mut released: Vec<BufferHandle> = Vec::new();
    // The index of a live allocation in the model.
    let pick = |b: &mut Bytes<'_>, m: &Vec<(BufferHandle, Vec<u8>)>| {
        (!m.is_empty()).then(|| b.u8() as usize % m.len())
    };
    let mut step = 0u32;
    while !b.done() && step < 2_000 {
        step += 1;
        match b.u8() % 10 {
            0 | 1 => {
                let size = match b.u8() % 4 {
                    0 => b.u8() as u64,
                    1 => b.u16(),
                    2 => b.u32() % (4 << 20),
                    _ => b.u32() << (b.u8() % 40),
                };
                let flags = b.u8();
                let mut desc = AllocDesc::new("fuzz", size);
                if flags & 1 == 1 {
                    desc = desc.immovable();
                }
                let uninit = flags & 2 == 2;
                if uninit {
                    desc = desc.uninit();
                }
                let max = ctx.backend().limits().max_block_size;
                if size > 8 << 20 {
                    // Too large to model: a typed answer, and no memory kept.
                    match ctx.alloc(desc) {
                        Ok(h) => ctx.release(h).expect("release"),
                        Err(Error::TooLarge { .. }) => assert!(size > max - 65536, "{size}"),
                        Err(e) if refusal(&e) => {}
                        Err(e) => panic!("step {step}: alloc {size}: {e}"),
                    }
                    continue;
                }
                match ctx.alloc(desc) {
                    Ok(h) => {
                        let bytes = vec![flags; size as usize];
                        if uninit {
                            // Undefined until written: write it whole, or drop it.
                            match ctx.upload(h, &bytes) {
                                Ok(()) => {}
                                Err(e) if refusal(&e) => {
                                    ctx.release(h).expect("release");
                                    continue;
                                }
                                Err(e) => panic!("step {step}: upload after alloc: {e}"),
                            }
                            model.push((h, bytes));
                        } else {
                            model.push((h, vec![0; size as usize]));
                        }
                    }
                    Err(Error::ZeroSize { .. }) => assert_eq!(size, 0),
                    Err(Error::TooLarge { .. }) => assert!(size > max - 65536, "{size}"),
                    Err(e) if refusal(&e) => {}
                    Err(e) => panic!("step {step}: alloc {size}: {e}"),
                }
            }
            2 => {
                if let Some(i) = pick(&mut b, &model) {
                    let (h, _) = model.swap_remove(i);
                    ctx.release(h).expect("release a live handle");
                    released.push(h);
                }
            }
            3 | 4 => {
                if let Some(i) = pick(&mut b, &model) {
                    let (h, ref mut bytes) = model[i];
                    let len = bytes.len() as u64;
                    let offset = b.u32() % (len + 8);
                    let n = b.u32() % (len + 8);
                    let byte = b.u8();
                    let data = vec![byte; n as usize];
                    match ctx.transfers().upload_at(h, offset, &data) {
                        Ok(()) => {
                            assert!(offset + n <= len, "an upload past the end succeeded");
                            bytes[offset as usize..(offset + n) as usize].fill(byte);
                        }
                        Err(Error::InvalidRange { .. }) => assert!(offset + n > len),
                        Err(e) if refusal(&e) => {}
                        Err(e) => panic!("step {step}: upload {offset}+{n} of {len}: {e}"),
                    }
                }
            }
            5 => {
                if let Some(i) = pick(&mut b, &model) {
                    let (h, ref bytes) = model[i];
                    let len = bytes.len() as u64;
                    let offset = b.u32() % (len + 4);
                    let n = b.u32() % (len + 4);
                    let mut out = vec![0; n as usize];
                    match ctx.transfers().download_into(h, offset, &mut out) {
                        Ok(()) => assert!(
                            out[..] == bytes[offset as usize..(offset + n) as usize],
                            "step {step}: bytes {offset}+{n} differ"
                        ),
                        Err(Error::InvalidRange { .. }) => assert!(offset + n > len),
                        Err(e) if refusal(&e) => {}
                        Err(e) => panic!("step {step}: download: {e}"),
                    }
                }
            }
            6 => {
                ctx.memory().trim().expect("trim");
            }
            7 => {
                ctx.memory()
                    .compact(b.u32() << (b.u8() % 16))
                    .expect("compact");
            }
            8 => {
                let item = b.u32() << (b.u8() % 48);
                match (
                    ctx.memory().max_batch(item),
                    ctx.memory().max_items_in_one(item),
                ) {
                    (Ok(_), Ok(_)) => assert!(item > 0),
                    (Err(Error::ZeroSize { .. }), Err(Error::ZeroSize { .. })) => {
                        assert_eq!(item, 0)
                    }
                    other => panic!("step {step}: max_batch({item}): {other:?}"),
                }
            }
            _ => {
                // A released handle anywhere is a typed error.
                if let Some(&h) = released.get(b.u8() as usize % released.len().max(1)) {
                    assert!(matches!(ctx.release(h), Err(Error::StaleHandle { .. })));
                    assert!(matches!(ctx.download(h), Err(Error::StaleHandle { .. })));
                    assert!(matches!(
                        ctx.upload(h, &[1]),
                        Err(Error::StaleHandle { .. })
                    ));
                }
            }
        }
        if let Err(e) = ctx.observe().audit().check() {
            panic!("step {step}: {e}");
        }
    }
    // Every allocation's contents, each released once checked; one the budget leaves no
    // staging room to read waits until the others are gone.
    let mut unread = Vec::new();
    for round in 0..2 {
        for (h, want) in std::mem::take(&mut model) {
            match ctx.download(h) {
                Ok(got) => assert!(got == want, "contents differ at the end"),
                Err(e) if refusal(&e) && round == 0 => {
                    unread.push((h, want));
                    continue;
                }
                Err(e) if refusal(&e) => {}
                Err(e) => panic!("download at the end: {e}"),
            }
            ctx.release(h).expect("release");
        }
        model = std::mem::take(&mut unread);
    }
    ctx.memory().trim().expect("trim");
    let s = ctx.stats();
    assert_eq!(s.reserved, 0, "trim left {} bytes", s.reserved);
}
