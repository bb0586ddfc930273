//! Leases, budgets, compaction and runtime-kernel checks on the host backend; see
//! `fuzz/common/edge_ops.rs`.
#![no_main]

#[path = "../common/edge_ops.rs"]
mod edge_ops;

libfuzzer_sys::fuzz_target!(|data: &[u8]| edge_ops::run(data));
