//! Every kernel vramkit registers (`vramkit::shaders::ALL`: WGSL files from `shaders/`, image
//! kernels composed of an io prelude and a body) parses and validates with naga (all validation
//! flags), binds storage buffers read-write (sub-allocations share a buffer; see
//! shaders/scale.wgsl), and every file in `shaders/` is used. No GPU.

use naga::valid::{Capabilities, ValidationFlags, Validator};

fn shader_files(dir: &std::path::Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir)
        .expect("shaders/")
        .filter_map(|e| e.ok())
    {
        let path = entry.path();
        if path.is_dir() {
            shader_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "wgsl") {
            let src = std::fs::read_to_string(&path).expect("read shader");
            out.push((path.display().to_string(), src));
        }
    }
}

#[test]
fn every_kernel_validates() {
    let mut failures = Vec::new();
    for k in vramkit::shaders::ALL {
        let module = match naga::front::wgsl::parse_str(k.wgsl) {
            Ok(m) => m,
            Err(e) => {
                failures.push(e.emit_to_string_with_path(k.wgsl, k.label));
                continue;
            }
        };
        let mut v = Validator::new(ValidationFlags::all(), Capabilities::all());
        if let Err(e) = v.validate(&module) {
            failures.push(e.emit_to_string_with_path(k.wgsl, k.label));
            continue;
        }
        assert!(
            module.entry_points.iter().any(|e| e.name == k.entry),
            "{}: no entry point `{}`",
            k.label,
            k.entry
        );
        for (_, var) in module.global_variables.iter() {
            if let naga::AddressSpace::Storage { access } = var.space {
                assert!(
                    access.contains(naga::StorageAccess::STORE),
                    "{}: storage binding `{}` must be read_write",
                    k.label,
                    var.name.as_deref().unwrap_or("?")
                );
            }
        }
    }
    assert!(
        failures.is_empty(),
        "invalid shaders:\n{}",
        failures.join("\n")
    );
}

#[test]
fn every_shader_file_is_used() {
    let mut files = Vec::new();
    shader_files(
        std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/shaders")),
        &mut files,
    );
    assert!(!files.is_empty(), "no shaders found");
    for (path, src) in files {
        assert!(
            vramkit::shaders::ALL
                .iter()
                .any(|k| k.wgsl.contains(src.as_str())),
            "{path} is in no kernel of vramkit::shaders::ALL"
        );
    }
}

#[test]
fn a_broken_shader_is_reported_with_its_span() {
    let src = "@compute @workgroup_size(1) fn main() { let x: u32 = 1.5; }";
    let err = naga::front::wgsl::parse_str(src).expect_err("a type error must be reported");
    let text = err.emit_to_string_with_path(src, "broken.wgsl");
    assert!(text.contains("broken.wgsl"), "{text}");
}
