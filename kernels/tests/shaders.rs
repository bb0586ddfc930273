//! Every kernel vramkit registers (`vramkit_kernels::shaders::ALL`: WGSL files from `shaders/`,
//! image kernels composed of an io prelude and a body; and the WGSL-only `TEXTURE_KERNELS`) parses
//! and validates with naga (all validation flags), binds storage buffers read-write
//! (sub-allocations share a buffer; see shaders/scale.wgsl), every kernel of `ALL` has a CUDA
//! twin with its entry point and one parameter per binding, and every file in `shaders/` and
//! `shaders/cuda/` is used. No GPU.

use naga::valid::{Capabilities, ValidationFlags, Validator};

fn shader_files(dir: &std::path::Path, ext: &[&str], out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir)
        .expect("shaders/")
        .filter_map(|e| e.ok())
    {
        let path = entry.path();
        if path.is_dir() {
            shader_files(&path, ext, out);
        } else if path
            .extension()
            .is_some_and(|x| ext.iter().any(|e| x == *e))
        {
            let src = std::fs::read_to_string(&path).expect("read shader");
            out.push((path.display().to_string(), src));
        }
    }
}

#[test]
fn every_kernel_validates() {
    let mut failures = Vec::new();
    for k in vramkit_kernels::shaders::ALL
        .iter()
        .chain(vramkit_kernels::shaders::TEXTURE_KERNELS)
        .chain(vramkit_kernels::shaders::FEATURE_KERNELS)
    {
        let module = match naga::front::wgsl::parse_str(k.wgsl()) {
            Ok(m) => m,
            Err(e) => {
                failures.push(e.emit_to_string_with_path(k.wgsl(), k.label()));
                continue;
            }
        };
        let mut v = Validator::new(ValidationFlags::all(), Capabilities::all());
        if let Err(e) = v.validate(&module) {
            failures.push(e.emit_to_string_with_path(k.wgsl(), k.label()));
            continue;
        }
        assert!(
            module.entry_points.iter().any(|e| e.name == k.entry()),
            "{}: no entry point `{}`",
            k.label(),
            k.entry()
        );
        for (_, var) in module.global_variables.iter() {
            if let naga::AddressSpace::Storage { access } = var.space {
                assert!(
                    access.contains(naga::StorageAccess::STORE),
                    "{}: storage binding `{}` must be read_write",
                    k.label(),
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
    let dir = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/shaders"));
    let mut files = Vec::new();
    shader_files(dir, &["wgsl"], &mut files);
    assert!(!files.is_empty(), "no shaders found");
    for (path, src) in files {
        assert!(
            vramkit_kernels::shaders::ALL
                .iter()
                .chain(vramkit_kernels::shaders::TEXTURE_KERNELS)
                .chain(vramkit_kernels::shaders::FEATURE_KERNELS)
                .any(|k| k.wgsl().contains(src.as_str())),
            "{path} is in no kernel of vramkit_kernels::shaders::ALL, TEXTURE_KERNELS or FEATURE_KERNELS"
        );
    }
    let mut twins = Vec::new();
    shader_files(&dir.join("cuda"), &["cu", "cuh"], &mut twins);
    assert!(twins.len() >= 13, "CUDA twins missing: {}", twins.len());
    for (path, src) in twins {
        assert!(
            vramkit_kernels::shaders::ALL
                .iter()
                .any(|k| k.cuda().contains(src.as_str())),
            "{path} is in no CUDA twin of vramkit_kernels::shaders::ALL"
        );
    }
}

/// The cooperative f16 matmul validates with exactly the capabilities the wgpu backend enables
/// for it (not all of naga's), and naga writes it as SPIR-V, as wgpu does on Vulkan: the
/// cooperative matrix types, loads, stores and multiply-adds all pass naga's SPIR-V backend.
#[test]
fn the_cooperative_matmul_validates_with_its_features_and_writes_spirv() {
    for k in vramkit_kernels::shaders::FEATURE_KERNELS {
        cooperative_kernel_validates_and_writes_spirv(k);
    }
}

fn cooperative_kernel_validates_and_writes_spirv(k: &vramkit::backend::KernelSource) {
    let module = naga::front::wgsl::parse_str(k.wgsl())
        .unwrap_or_else(|e| panic!("{}", e.emit_to_string(k.wgsl())));
    // SHADER_FLOAT16_IN_FLOAT32 (unpack2x16float) comes with every Vulkan device.
    let base = Capabilities::SHADER_FLOAT16
        | Capabilities::SUBGROUP
        | Capabilities::SHADER_FLOAT16_IN_FLOAT32;
    let caps = base | Capabilities::COOPERATIVE_MATRIX;
    let info = Validator::new(ValidationFlags::all(), caps)
        .validate(&module)
        .unwrap_or_else(|e| panic!("{}", e.emit_to_string(k.wgsl())));
    // Without cooperative matrices it is refused (so the feature is really what it needs).
    assert!(Validator::new(ValidationFlags::all(), base)
        .validate(&module)
        .is_err());
    let options = naga::back::spv::Options {
        lang_version: (1, 6),
        capabilities: None,
        ..Default::default()
    };
    let words = naga::back::spv::write_vec(&module, &info, &options, None)
        .unwrap_or_else(|e| panic!("SPIR-V: {e}"));
    assert_eq!(words[0], 0x0723_0203, "SPIR-V magic");
}

/// The CUDA backend launches `entry` with one pointer per storage binding, then the params
/// struct: each twin must declare that function with that many parameters.
#[test]
fn every_kernel_has_a_cuda_twin_with_the_same_signature() {
    for k in vramkit_kernels::shaders::ALL {
        let module = naga::front::wgsl::parse_str(k.wgsl()).expect("validated above");
        let storage = module
            .global_variables
            .iter()
            .filter(|(_, v)| matches!(v.space, naga::AddressSpace::Storage { .. }))
            .count();
        let uniform = module
            .global_variables
            .iter()
            .filter(|(_, v)| v.space == naga::AddressSpace::Uniform)
            .count();
        let (start, params) = cuda_signature(k.cuda(), k.entry())
            .unwrap_or_else(|| panic!("{}: no CUDA function `{}`", k.label(), k.entry()));
        assert!(
            k.cuda()[..start].contains("extern \"C\" __global__"),
            "{}: `{}` must be extern \"C\" __global__",
            k.label(),
            k.entry()
        );
        let params: Vec<&str> = params.split(',').map(str::trim).collect();
        assert_eq!(
            params.len(),
            storage + uniform,
            "{}: `{}({params:?})` must take {storage} bindings and {uniform} params struct",
            k.label(),
            k.entry()
        );
        // Bindings as `BUF(T)`, so that a safe dispatch's build clamps every index into them.
        assert!(
            params[..storage].iter().all(|p| p.starts_with("BUF(")),
            "{}: bindings of `{}` must be declared `BUF(T)`: {params:?}",
            k.label(),
            k.entry()
        );
    }
}

/// A twin whose source defines several kernels guards each with `#ifdef VRAMKIT_ENTRY_<name>`
/// (the CUDA backend defines the one it builds), so NVRTC and the driver translate the kernel
/// asked for, not all of them: with only its entry's macro defined, every kernel's source keeps
/// that kernel and no other, and its conditionals balance.
#[test]
fn a_twin_with_several_kernels_compiles_only_the_one_asked_for() {
    let entries: std::collections::BTreeSet<&str> = vramkit_kernels::shaders::ALL
        .iter()
        .map(|k| k.entry())
        .collect();
    let mut shared = 0;
    for k in vramkit_kernels::shaders::ALL {
        let src = k.cuda();
        let kept = kept_lines(src, &format!("VRAMKIT_ENTRY_{}", k.entry()))
            .unwrap_or_else(|e| panic!("{}: {e}", k.label()));
        let line_of = |at: usize| src[..at].matches('\n').count();
        let sites: Vec<(&str, usize)> = entries
            .iter()
            .filter_map(|&e| kernel_site(src, e).map(|at| (e, at)))
            .collect();
        for &(e, at) in &sites {
            // Every line of the kernel, from its first to its closing brace (or the macro
            // call's closing parenthesis).
            let (first, last) = (line_of(at), line_of(kernel_end(src, at)));
            for (line, &on) in kept.iter().enumerate().take(last + 1).skip(first) {
                let how = if on { "compiled too" } else { "left out" };
                assert_eq!(
                    on,
                    e == k.entry(),
                    "{}: with VRAMKIT_ENTRY_{} defined, line {} of `{e}` is {how}",
                    k.label(),
                    k.entry(),
                    line + 1
                );
            }
        }
        assert!(
            sites.iter().any(|&(e, _)| e == k.entry()),
            "{}: no definition of `{}`",
            k.label(),
            k.entry()
        );
        shared += usize::from(sites.len() > 1);
    }
    // The blur, resize and colour families share sources.
    assert!(shared >= 20, "only {shared} kernels share a source");
}

/// Which lines of `src` the preprocessor keeps with `defined` the only `VRAMKIT_ENTRY_` macro:
/// `#ifdef`/`#ifndef` of such a macro (and its `#else`) decide; other conditionals keep every
/// branch. An error for an `#endif` or `#else` without its `#if`, an `#if` not closed, or an
/// entry macro tested any other way (`#if defined(...)`, `#elif`), which this does not follow.
fn kept_lines(src: &str, defined: &str) -> Result<Vec<bool>, String> {
    // Per open conditional: whether its lines are kept, and whether it tests an entry macro.
    let mut open: Vec<(bool, bool)> = Vec::new();
    let mut kept = Vec::new();
    for (i, line) in src.lines().enumerate() {
        let outer = open.last().is_none_or(|&(k, _)| k);
        // `# ifdef` is `#ifdef`.
        let directive = line.trim_start().strip_prefix('#').map(str::trim_start);
        let words: Vec<&str> = directive.map_or(Vec::new(), |d| d.split_whitespace().collect());
        let entry_test = words
            .first()
            .is_some_and(|w| w.starts_with("if") || *w == "elif")
            && line.contains("VRAMKIT_ENTRY_");
        match words.as_slice() {
            ["ifdef" | "ifndef", name] if name.starts_with("VRAMKIT_ENTRY_") => {
                let on = (*name == defined) == (words[0] == "ifdef");
                open.push((outer && on, true));
            }
            _ if entry_test => {
                return Err(format!(
                    "line {}: test an entry macro with `#ifdef NAME` alone",
                    i + 1
                ))
            }
            [w, ..] if w.starts_with("if") => open.push((outer, false)),
            ["elif", ..] if open.last().is_none_or(|&(_, entry)| entry) => {
                return Err(format!(
                    "line {}: #elif of an entry guard or of none",
                    i + 1
                ));
            }
            ["elif", ..] => {}
            ["else", ..] => {
                let (was, entry) = open
                    .pop()
                    .ok_or(format!("line {}: #else without #if", i + 1))?;
                let outer = open.last().is_none_or(|&(k, _)| k);
                open.push((if entry { outer && !was } else { outer }, entry));
            }
            ["endif", ..] => {
                open.pop()
                    .ok_or(format!("line {}: #endif without #if", i + 1))?;
            }
            _ => {}
        }
        kept.push(open.last().is_none_or(|&(k, _)| k));
    }
    if !open.is_empty() {
        return Err(format!("{} #if without #endif", open.len()));
    }
    Ok(kept)
}

/// Where the kernel whose definition starts at `at` ends: past its parenthesised groups (the
/// `__launch_bounds__`, the parameters; or a macro call's arguments), at the closing brace of
/// its body where one follows.
fn kernel_end(src: &str, at: usize) -> usize {
    let bytes = src.as_bytes();
    let matching = |from: usize, open: u8, close: u8| {
        let mut depth = 0usize;
        for (i, &b) in bytes.iter().enumerate().skip(from) {
            if b == open {
                depth += 1;
            } else if b == close {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i;
                }
            }
        }
        src.len() - 1
    };
    let mut end = at;
    loop {
        let Some(open) = src[end..].find('(').map(|i| end + i) else {
            return end;
        };
        end = matching(open, b'(', b')');
        let rest = src[end + 1..].trim_start();
        let next = src.len() - rest.len();
        if rest.starts_with('{') {
            return matching(next, b'{', b'}');
        }
        // The name and parameters after `__launch_bounds__(...)` go on; anything else ends it.
        if !rest.starts_with(|c: char| c.is_alphanumeric() || c == '_') {
            return end;
        }
    }
}

/// Where the line defining kernel `name` starts: `extern "C" __global__ void name(` (or
/// `__launch_bounds__(...)` before `name(` on the next line), or the invocation
/// `MACRO(name, ...)` of a macro that defines it.
fn kernel_site(src: &str, name: &str) -> Option<usize> {
    let line_start = |at: usize| src[..at].rfind('\n').map_or(0, |i| i + 1);
    if let Some(at) = src.find(&format!("__global__ void {name}(")) {
        return Some(line_start(at));
    }
    // `extern "C" __global__ void __launch_bounds__(...)` on the line before `name(`.
    if let Some(at) = src.find(&format!("\n{name}(")) {
        let head = line_start(at);
        if src[head..at].contains("__global__") {
            return Some(head);
        }
    }
    let mut from = 0;
    while let Some(i) = src[from..].find(&format!("({name},")) {
        let at = line_start(from + i);
        let line = &src[at..from + i];
        if !line.starts_with("#define") && !line.is_empty() && !line.contains(char::is_whitespace) {
            return Some(at);
        }
        from += i + 1;
    }
    None
}

#[test]
fn a_broken_shader_is_reported_with_its_span() {
    let src = "@compute @workgroup_size(1) fn main() { let x: u32 = 1.5; }";
    let err = naga::front::wgsl::parse_str(src).expect_err("a type error must be reported");
    let text = err.emit_to_string_with_path(src, "broken.wgsl");
    assert!(text.contains("broken.wgsl"), "{text}");
}

/// Where `name`'s definition starts and its parameter list: a plain definition
/// (`void name(...)`, or the name starting a line after `__launch_bounds__`), or an invocation
/// `MACRO(name, ...)` of a `#define MACRO(name, ...)` that declares `void name(...)`.
fn cuda_signature<'a>(src: &'a str, name: &str) -> Option<(usize, &'a str)> {
    let params = |at: usize| {
        let rest = &src[at..];
        let open = rest.find('(')? + 1;
        let mut depth = 0;
        let close = rest[open..].find(|c| {
            depth += match c {
                '(' => 1,
                ')' => -1,
                _ => 0,
            };
            depth < 0
        })?;
        Some(&rest[open..open + close])
    };
    for head in [format!("void {name}("), format!("\n{name}(")] {
        if let Some(at) = src.find(&head) {
            return Some((at, params(at)?));
        }
    }
    let call = src.find(&format!("({name},"))?;
    let line = src[..call].rfind('\n').map_or(0, |i| i + 1);
    let define = src.find(&format!("#define {}(name", &src[line..call]))?;
    let at = define + src[define..].find("void name(")?;
    Some((at, params(at)?))
}

/// The workgroup memory the staged horizontal blur pass declares (every workgroup variable its
/// entry point uses, laid out by naga) is at most `BLUR_STAGED_WORKGROUP_BYTES`, the bytes the
/// blur asks of the device before it launches the pass, and the largest of its compositions
/// needs all of them (the constant is not stale).
#[test]
fn the_staged_blur_declares_the_workgroup_memory_the_blur_checks_for() {
    use vramkit_kernels::image::BLUR_STAGED_WORKGROUP_BYTES;
    use vramkit_kernels::shaders;
    let mut largest = 0;
    for k in [
        shaders::BLUR_HORIZONTAL_STAGED,
        shaders::BLUR_HORIZONTAL_RGBA8_STAGED,
        shaders::BLUR_HORIZONTAL_SRGBA8_STAGED,
        shaders::BLUR_HORIZONTAL_SRGBA8_TO_HALF_STAGED,
    ] {
        let module = naga::front::wgsl::parse_str(k.wgsl()).expect("parses");
        let info = Validator::new(ValidationFlags::all(), Capabilities::all())
            .validate(&module)
            .expect("validates");
        let mut layouter = naga::proc::Layouter::default();
        layouter.update(module.to_ctx()).expect("layout");
        let index = module
            .entry_points
            .iter()
            .position(|e| e.name == k.entry())
            .expect("entry point");
        let uses = info.get_entry_point(index);
        let bytes: u32 = module
            .global_variables
            .iter()
            .filter(|(h, v)| v.space == naga::AddressSpace::WorkGroup && !uses[*h].is_empty())
            .map(|(_, v)| layouter[v.ty].size)
            .sum();
        eprintln!("{}: {bytes} bytes of workgroup memory", k.label());
        assert!(
            bytes <= BLUR_STAGED_WORKGROUP_BYTES,
            "{}: {bytes} bytes of workgroup memory, more than BLUR_STAGED_WORKGROUP_BYTES",
            k.label()
        );
        largest = largest.max(bytes);
    }
    assert_eq!(largest, BLUR_STAGED_WORKGROUP_BYTES);
}

/// No horizontal blur pass reads the f16 intermediate: its raw reads' unit, 2^-112, squared
/// (the unit of the horizontal passes' premultiplied raw reads) is 0 in f32, and the weights
/// would be infinite.
#[test]
fn horizontal_blur_passes_never_read_the_half_source() {
    for k in vramkit_kernels::shaders::ALL
        .iter()
        .chain(vramkit_kernels::shaders::TEXTURE_KERNELS)
    {
        if k.entry().starts_with("horizontal") {
            assert!(
                !k.label().contains("(half ->"),
                "{}: a horizontal pass composed with the half source",
                k.label()
            );
        }
    }
}
