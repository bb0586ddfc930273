//! `parse_chain` on arbitrary text: `Ok` or a typed error, never a panic; what parses writes
//! back to text that parses to the same chain, and makes a pipeline.

#![no_main]

#[allow(dead_code, reason = "this target uses only the chain checks")]
#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::parse_chain_checks(data));
