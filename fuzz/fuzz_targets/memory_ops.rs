//! Random operation sequences on the host backend; see `fuzz/common/memory_ops.rs`.
#![no_main]

#[path = "../common/memory_ops.rs"]
mod memory_ops;

libfuzzer_sys::fuzz_target!(|data: &[u8]| memory_ops::run(data));
