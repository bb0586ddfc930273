//! Every WGSL file in `shaders/` parses and validates with naga (all validation flags), and binds
//! storage buffers read-write (sub-allocations share a buffer; see shaders/scale.wgsl). No GPU.

use naga::valid::{Capabilities, ValidationFlags, Validator};

fn shader_files() -> Vec<(String, String)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/shaders");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("shaders/")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "wgsl"))
        .map(|p| {
            let src = std::fs::read_to_string(&p).expect("read shader");
            (p.display().to_string(), src)
        })
        .collect();
    files.sort();
    files
}

#[test]
fn every_shader_validates() {
    let files = shader_files();
    assert!(!files.is_empty(), "no shaders found");
    let mut failures = Vec::new();
    for (path, src) in &files {
        let module = match naga::front::wgsl::parse_str(src) {
            Ok(m) => m,
            Err(e) => {
                failures.push(e.emit_to_string_with_path(src, path));
                continue;
            }
        };
        let mut v = Validator::new(ValidationFlags::all(), Capabilities::all());
        if let Err(e) = v.validate(&module) {
            failures.push(e.emit_to_string_with_path(src, path));
            continue;
        }
        for (_, var) in module.global_variables.iter() {
            if let naga::AddressSpace::Storage { access } = var.space {
                assert!(
                    access.contains(naga::StorageAccess::STORE),
                    "{path}: storage binding `{}` must be read_write",
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
fn every_shader_file_is_registered() {
    let registered: Vec<&str> = vramkit::shaders::ALL.iter().map(|k| k.wgsl).collect();
    for (path, src) in shader_files() {
        assert!(
            registered.contains(&src.as_str()),
            "{path} is not in vramkit::shaders::ALL"
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
