//! Checks a kernel family's Rust params struct against naga's layout of its WGSL mirror (the
//! `shaders/params/*.wgsl` preludes): same fields in the same order, same offsets, same size.

/// Panics, naming the difference, unless the struct `name` of `wgsl` has exactly `fields`
/// (name, byte offset) in order and spans `size` bytes.
pub(crate) fn check_layout(wgsl: &str, name: &str, size: usize, fields: &[(&str, usize)]) {
    let module =
        naga::front::wgsl::parse_str(wgsl).unwrap_or_else(|e| panic!("{}", e.emit_to_string(wgsl)));
    let (members, span) = module
        .types
        .iter()
        .find_map(|(_, ty)| match &ty.inner {
            naga::TypeInner::Struct { members, span } if ty.name.as_deref() == Some(name) => {
                Some((members, *span))
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("no struct {name} in the WGSL prelude"));
    let wgsl_fields: Vec<(String, usize)> = members
        .iter()
        .map(|m| (m.name.clone().unwrap_or_default(), m.offset as usize))
        .collect();
    let rust_fields: Vec<(String, usize)> = fields.iter().map(|&(n, o)| (n.into(), o)).collect();
    assert_eq!(
        rust_fields, wgsl_fields,
        "{name}: Rust fields vs WGSL fields"
    );
    assert_eq!(size, span as usize, "{name}: Rust size vs WGSL size");
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
