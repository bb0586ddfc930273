//! Upload and download ranges, on device and unified memory; readers that fail or run long.

use std::io::{self, Read};

use vramkit::backend::Backend;
use vramkit::{AllocDesc, BufferHandle, Context, ContextDesc, Error, MemoryKind};

use crate::check::{alloc, host, host_with, KIB};
use crate::harness::Case;

pub const CASES: &[Case] = &[
    Case::new("upload: 17 bytes into 16", upload_longer),
    Case::new("upload_at: offset 17 of 16 bytes", upload_at_past_end),
    Case::new("upload_at: 1 byte at offset 16 of 16", upload_at_end),
    Case::new("upload_at: offset u64::MAX", upload_at_u64_max),
    Case::new(
        "upload_at: 0 bytes at offset u64::MAX",
        upload_at_u64_max_empty,
    ),
    Case::new("upload_at: offset + len overflows u64", upload_at_overflow),
    Case::new(
        "upload_at (unified): offset past the end",
        unified_upload_past_end,
    ),
    Case::new("download_into: 17 bytes out of 16", download_longer),
    Case::new("download_into: offset 20 of 16 bytes", download_past_end),
    Case::new("download_into: offset u64::MAX", download_u64_max),
    Case::new(
        "download_into: offset + len overflows u64",
        download_overflow,
    ),
    Case::new(
        "download_into (unified): past the end",
        unified_download_past_end,
    ),
    Case::new(
        "upload_at: 2 bytes at offset 3 of 5 keep the rest",
        partial_words_kept,
    ),
    Case::new(
        "download_into: 3 bytes at offset 1 of 5",
        partial_words_read,
    ),
    Case::new("upload_from_reader: 15 bytes into 10", reader_longer),
    Case::new(
        "upload_from_reader: longer input across chunks",
        reader_longer_chunks,
    ),
    Case::isolated("upload_from_reader: endless reader", reader_endless),
    Case::isolated(
        "upload_from_reader: reader claiming more bytes than asked",
        reader_overclaims,
    ),
    Case::new("upload_from_reader: failing reader", reader_fails),
    Case::new(
        "upload_from_reader: reader failing midway",
        reader_fails_midway,
    ),
    Case::new(
        "upload_from_reader: interrupted reads still upload",
        reader_interrupted,
    ),
];

fn sixteen() -> (Context<vramkit::backend::host::HostBackend>, BufferHandle) {
    let ctx = host();
    let h = alloc(&ctx, "sixteen", 16);
    (ctx, h)
}

pub const PAST: &str = "transfer fewer bytes|allocate more";

fn upload_longer() {
    let (ctx, h) = sixteen();
    expect_err!(
        ctx.upload(h, &[1; 17]),
        Error::InvalidRange { .. },
        ["`sixteen`", "17", "16 bytes"],
        [PAST]
    );
}

fn upload_at_past_end() {
    let (ctx, h) = sixteen();
    expect_err!(
        ctx.transfers().upload_at(h, 17, &[1]),
        Error::InvalidRange { .. },
        ["`sixteen`", "17", "16 bytes"],
        [PAST]
    );
}

fn upload_at_end() {
    let (ctx, h) = sixteen();
    expect_err!(
        ctx.transfers().upload_at(h, 16, &[1]),
        Error::InvalidRange { .. },
        ["`sixteen`", "16+1", "16 bytes"],
        [PAST]
    );
}

fn upload_at_u64_max() {
    let (ctx, h) = sixteen();
    expect_err!(
        ctx.transfers().upload_at(h, u64::MAX, &[1]),
        Error::InvalidRange { .. },
        ["`sixteen`", "18446744073709551615"],
        [PAST]
    );
}

fn upload_at_u64_max_empty() {
    let (ctx, h) = sixteen();
    expect_err!(
        ctx.transfers().upload_at(h, u64::MAX, &[]),
        Error::InvalidRange { .. },
        ["`sixteen`", "18446744073709551615"],
        [PAST]
    );
}

fn upload_at_overflow() {
    let (ctx, h) = sixteen();
    expect_err!(
        ctx.transfers().upload_at(h, u64::MAX - 1, &[1; 4]),
        Error::InvalidRange { .. },
        ["`sixteen`", "18446744073709551614"],
        [PAST]
    );
}

pub fn unified<B: Backend>(ctx: &Context<B>) -> BufferHandle {
    ctx.alloc(AllocDesc::new("shared", 16).kind(MemoryKind::Unified))
        .expect("alloc")
}

fn unified_upload_past_end() {
    let ctx = host();
    let h = unified(&ctx);
    expect_err!(
        ctx.transfers().upload_at(h, 12, &[1; 8]),
        Error::InvalidRange { .. },
        ["`shared`", "12", "16 bytes"],
        [PAST]
    );
}

fn download_longer() {
    let (ctx, h) = sixteen();
    expect_err!(
        ctx.transfers().download_into(h, 0, &mut [0; 17]),
        Error::InvalidRange { .. },
        ["`sixteen`", "17", "16 bytes"],
        [PAST]
    );
}

fn download_past_end() {
    let (ctx, h) = sixteen();
    expect_err!(
        ctx.transfers().download_into(h, 20, &mut [0; 1]),
        Error::InvalidRange { .. },
        ["`sixteen`", "20", "16 bytes"],
        [PAST]
    );
}

fn download_u64_max() {
    let (ctx, h) = sixteen();
    expect_err!(
        ctx.transfers().download_into(h, u64::MAX, &mut [0; 1]),
        Error::InvalidRange { .. },
        ["`sixteen`", "18446744073709551615"],
        [PAST]
    );
}

fn download_overflow() {
    let (ctx, h) = sixteen();
    expect_err!(
        ctx.transfers().download_into(h, u64::MAX - 2, &mut [0; 8]),
        Error::InvalidRange { .. },
        ["`sixteen`", "18446744073709551613"],
        [PAST]
    );
}

fn unified_download_past_end() {
    let ctx = host();
    let h = unified(&ctx);
    expect_err!(
        ctx.transfers().download_into(h, 9, &mut [0; 8]),
        Error::InvalidRange { .. },
        ["`shared`", "9", "16 bytes"],
        [PAST]
    );
}

fn partial_words_kept() {
    let ctx = host();
    let h = alloc(&ctx, "five", 5);
    ctx.upload(h, &[1, 2, 3, 4, 5]).expect("upload");
    ctx.transfers().upload_at(h, 3, &[9, 9]).expect("upload_at");
    let back = ctx.download(h).expect("download");
    assert!(
        back == [1, 2, 3, 9, 9],
        "WRONG ANSWER: {back:?} after writing [9, 9] at 3 of [1, 2, 3, 4, 5]"
    );
}

fn partial_words_read() {
    let ctx = host();
    let h = alloc(&ctx, "five", 5);
    ctx.upload(h, &[1, 2, 3, 4, 5]).expect("upload");
    let mut out = [0; 3];
    ctx.transfers()
        .download_into(h, 1, &mut out)
        .expect("download_into");
    assert!(
        out == [2, 3, 4],
        "WRONG ANSWER: read {out:?} at 1..4 of [1, 2, 3, 4, 5]"
    );
}

fn reader_longer() {
    let ctx = host();
    let h = alloc(&ctx, "ten", 10);
    let input: Vec<u8> = (1..=15).collect();
    expect_err!(
        ctx.transfers().upload_from_reader(h, &input[..]),
        Error::InvalidRange { .. },
        ["`ten`", "10 bytes"],
        ["allocate"]
    );
    assert!(
        ctx.download(h).expect("download") == input[..10],
        "WRONG ANSWER: the message says the bytes that fit were written; they were not"
    );
}

/// The input passes the allocation in its second staging chunk: the message says "the bytes
/// that fit were written", so all 300 must be.
fn reader_longer_chunks() {
    let ctx = host_with(ContextDesc {
        staging_chunk: 256,
        ..Default::default()
    });
    let h = alloc(&ctx, "three-hundred", 300);
    let input: Vec<u8> = (0..600u32).map(|i| (i % 250 + 1) as u8).collect();
    let e = expect_err!(
        ctx.transfers().upload_from_reader(h, &input[..]),
        Error::InvalidRange { .. },
        ["`three-hundred`", "300 bytes"],
        ["allocate"]
    );
    let back = ctx.download(h).expect("download");
    let written = back.iter().zip(&input).take_while(|(a, b)| a == b).count();
    assert!(
        written == 300,
        "WRONG ANSWER: the error says \"{e}\", but only {written} of the 300 bytes that fit \
         were written"
    );
}

struct Failing {
    good: usize,
}

impl Read for Failing {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.good == 0 {
            return Err(io::Error::other("disk on fire"));
        }
        let n = buf.len().min(self.good);
        buf[..n].fill(7);
        self.good -= n;
        Ok(n)
    }
}

fn reader_fails() {
    let ctx = host();
    let h = alloc(&ctx, "target", 64);
    expect_err!(
        ctx.transfers().upload_from_reader(h, Failing { good: 0 }),
        Error::Io { .. },
        ["reading the upload source", "disk on fire"],
        []
    );
}

fn reader_fails_midway() {
    let ctx = host_with(ContextDesc {
        staging_chunk: 256,
        ..Default::default()
    });
    let h = alloc(&ctx, "target", 4 * KIB);
    expect_err!(
        ctx.transfers()
            .upload_from_reader(h, Failing { good: 1000 }),
        Error::Io { .. },
        ["reading the upload source", "disk on fire"],
        []
    );
}

/// Interrupted reads are retried, not errors.
struct Interrupting {
    data: Vec<u8>,
    at: usize,
    interrupt: bool,
}

impl Read for Interrupting {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.interrupt = !self.interrupt;
        if self.interrupt {
            return Err(io::ErrorKind::Interrupted.into());
        }
        let n = buf.len().min(self.data.len() - self.at).min(7);
        buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

fn reader_interrupted() {
    let ctx = host();
    let h = alloc(&ctx, "target", 100);
    let data: Vec<u8> = (0..100).collect();
    let reader = Interrupting {
        data: data.clone(),
        at: 0,
        interrupt: false,
    };
    let n = ctx
        .transfers()
        .upload_from_reader(h, reader)
        .expect("upload_from_reader");
    assert!(n == 100, "WRONG ANSWER: {n} bytes uploaded of 100");
    assert!(
        ctx.download(h).expect("download") == data,
        "WRONG ANSWER: the bytes differ"
    );
}

/// An endless input stops at the allocation's end with an error, not a hang.
fn reader_endless() {
    let ctx = host();
    let h = alloc(&ctx, "finite", 4 * KIB);
    expect_err!(
        ctx.transfers().upload_from_reader(h, io::repeat(7)),
        Error::InvalidRange { .. },
        ["`finite`", "4096 bytes"],
        ["allocate"]
    );
}

/// A broken `Read` that says it read more than the buffer holds: an I/O error naming the
/// source, not a slice-index panic.
struct Overclaiming;

impl Read for Overclaiming {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        Ok(buf.len() + 100)
    }
}

fn reader_overclaims() {
    let ctx = host_with(ContextDesc {
        staging_chunk: 256,
        ..Default::default()
    });
    let h = alloc(&ctx, "target", 4 * KIB);
    expect_err!(
        ctx.transfers().upload_from_reader(h, Overclaiming),
        Error::Io { .. },
        ["reading the upload source"],
        []
    );
}
