//! Test helpers: check a kernel family's Rust `#[repr(C)]` params struct against naga's layout
//! of its WGSL twin (the `shaders/params/*.wgsl` preludes), and against the fields of its CUDA
//! twin (`shaders/cuda/params/*.cuh`).

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

/// Panics unless the struct `name` of the CUDA header `cuh` declares exactly the fields of
/// `fields`, in order, each a 4-byte `unsigned`, `int` or `float` (so that its offsets are the
/// Rust ones: every field of the params structs is 4 bytes).
pub(crate) fn check_cuda_fields(cuh: &str, name: &str, fields: &[(&str, usize)]) {
    let start = cuh
        .find(&format!("struct {name} {{"))
        .unwrap_or_else(|| panic!("no struct {name} in the CUDA header"));
    let body = &cuh[start..];
    let body = &body[body.find('{').unwrap_or(0) + 1..body.find("};").unwrap_or(body.len())];
    let body: String = body
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let mut names = Vec::new();
    for decl in body.split(';').map(str::trim).filter(|d| !d.is_empty()) {
        let (ty, rest) = decl
            .split_once(char::is_whitespace)
            .unwrap_or_else(|| panic!("{name}: cannot read `{decl}`"));
        assert!(
            ["unsigned", "int", "float"].contains(&ty),
            "{name}: field type `{ty}` is not 4 bytes"
        );
        names.extend(rest.split(',').map(|n| n.trim().to_string()));
    }
    let want: Vec<String> = fields.iter().map(|&(n, _)| n.into()).collect();
    assert_eq!(names, want, "{name}: CUDA fields vs Rust fields");
    for (i, &(field, offset)) in fields.iter().enumerate() {
        assert_eq!(offset, 4 * i, "{name}.{field}: not packed 4-byte fields");
    }
}
