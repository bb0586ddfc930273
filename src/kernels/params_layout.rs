//! Test helper: checks a Rust `#[repr(C)]` params struct against naga's layout of its WGSL
//! twin, for every kernel family (matmul now; the image family can call it the same way).

use naga::proc::Layouter;
use naga::TypeInner;

/// Parses `wgsl` with naga, finds struct `name` and asserts that its span equals `rust_size`
/// and that it has exactly `fields`, in order, each at the given byte offset.
///
/// # Panics
/// When the source does not parse, the struct is missing, or any size, name or offset differs
/// (this is a test helper: the panic is the failure report).
pub(crate) fn check_layout(wgsl: &str, name: &str, rust_size: usize, fields: &[(&str, usize)]) {
    let module = naga::front::wgsl::parse_str(wgsl)
        .unwrap_or_else(|e| panic!("{name}: WGSL does not parse: {}", e.emit_to_string(wgsl)));
    let mut layouter = Layouter::default();
    layouter
        .update(module.to_ctx())
        .unwrap_or_else(|e| panic!("{name}: naga cannot lay out the types: {e}"));
    let (handle, ty) = module
        .types
        .iter()
        .find(|(_, t)| t.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no struct {name} in the WGSL"));
    let TypeInner::Struct { members, span } = &ty.inner else {
        panic!("{name} is not a struct in the WGSL");
    };
    assert_eq!(
        *span as usize, rust_size,
        "{name}: WGSL span vs Rust size_of"
    );
    assert_eq!(
        layouter[handle].size as usize, rust_size,
        "{name}: naga layout size"
    );
    let wgsl_fields: Vec<(&str, usize)> = members
        .iter()
        .map(|m| (m.name.as_deref().unwrap_or("?"), m.offset as usize))
        .collect();
    assert_eq!(
        wgsl_fields, fields,
        "{name}: WGSL (field, offset) vs Rust offset_of!"
    );
}
