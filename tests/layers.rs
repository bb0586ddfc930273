//! The crate's layers, checked from its source: every `crate::` and `super::` path of every
//! file under `src/` (outside `lib.rs`'s re-exports, test modules and comments) is resolved to
//! the module it names, and
//! - no module imports from a layer above its own (the table in [`LAYERS`], bottom first);
//! - the graph of components has no cycle, where a component is a top-level module, the
//!   context's files (its face and views) are one, and `memory/`'s submodules are each one.
//!
//! ARCHITECTURE.md draws the same layers.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Top-level modules by layer, lowest first. A module missing here fails the test: place it.
const LAYERS: &[(&str, &[&str])] = &[
    ("ground", &["types"]),
    ("seam and backends", &["backend"]),
    ("manager", &["memory"]),
    (
        "face",
        &[
            "context",
            "device_ptr",
            "dispatch",
            "kernel_builds",
            "interop",
            "memory_view",
            "observe",
            "owned",
            "queue",
            "shutdown",
            "signature",
            "staging_buffer",
            "texture",
            "transfers",
            "typed",
            "vendor",
        ],
    ),
    ("device sets", &["devices"]),
];

type Module = Vec<String>;

fn module_of(src: &Path, file: &Path) -> Module {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: Module = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The text with test modules and comments taken out.
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every path that starts with `crate::` or `super::`, use-groups expanded.
fn paths(code: &str) -> Vec<String> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !code.is_char_boundary(i) {
            i += 1;
            continue;
        }
        let rest = &code[i..];
        let boundary = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        if boundary && (rest.starts_with("crate::") || rest.starts_with("super::")) {
            let (used, mut found) = path_at(rest);
            out.append(&mut found);
            i += used.max(1);
        } else {
            i += 1;
        }
    }
    out
}

/// The paths of the path (or use-group) at the start of `s`, and the bytes it spans.
fn path_at(s: &str) -> (usize, Vec<String>) {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(s.len());
    let head = s[..end].trim_end_matches(':').to_string();
    if s[end..].starts_with('{') && s[..end].ends_with("::") {
        // A group: split at depth-0 commas.
        let mut depth = 0;
        let mut close = end;
        for (k, c) in s[end..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        close = end + k;
                        break;
                    }
                }
                _ => {}
            }
        }
        let inner = &s[end + 1..close];
        let mut items = Vec::new();
        let (mut depth, mut start) = (0, 0);
        for (k, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    items.push(&inner[start..k]);
                    start = k + 1;
                }
                _ => {}
            }
        }
        items.push(&inner[start..]);
        let mut out = Vec::new();
        for item in items {
            let item = item.trim();
            let item = item.split(" as ").next().unwrap_or("").trim();
            if item.is_empty() || item == "self" {
                out.push(head.clone());
                continue;
            }
            let (_, sub) = path_at(&format!("x::{item}"));
            for p in sub {
                out.push(format!("{head}::{}", p.trim_start_matches("x::")));
            }
            if !item.contains('{') && !item.contains("::") {
                out.push(format!("{head}::{item}"));
            }
        }
        (close + 1, out)
    } else {
        (end, vec![head])
    }
}

/// The module a path names from `from`, the longest known prefix; re-exports of the root
/// are followed to where they are defined.
fn resolve(
    from: &Module,
    path: &str,
    modules: &BTreeSet<Module>,
    reexports: &BTreeMap<String, Module>,
) -> Module {
    let mut parts: Vec<&str> = path.split("::").collect();
    let mut base: Module = Vec::new();
    if parts.first() == Some(&"crate") {
        parts.remove(0);
    } else {
        base = from.clone();
        while parts.first() == Some(&"super") {
            base.pop();
            parts.remove(0);
        }
    }
    let mut full: Module = base;
    full.extend(parts.iter().map(|s| s.to_string()));
    if full.len() == 1 || (!full.is_empty() && !modules.contains(&full[..1].to_vec())) {
        if let Some(target) = full.first().and_then(|n| reexports.get(n)) {
            let mut f = target.clone();
            f.extend(full[1..].iter().cloned());
            full = f;
        }
    }
    for n in (0..=full.len()).rev() {
        if modules.contains(&full[..n].to_vec()) {
            return full[..n].to_vec();
        }
    }
    Vec::new()
}

fn layer(m: &Module) -> Option<usize> {
    let top = m.first()?;
    LAYERS
        .iter()
        .position(|(_, mods)| mods.contains(&top.as_str()))
}

fn component(m: &Module) -> String {
    match (m.first().map(String::as_str), layer(m)) {
        (Some("memory"), _) if m.len() > 1 => m[..2].join("::"),
        (_, Some(l)) if LAYERS[l].0 == "face" => "face".into(),
        _ => m.first().cloned().unwrap_or_default(),
    }
}

#[test]
fn imports_point_down_and_make_no_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let modules: BTreeSet<Module> = all.iter().map(|f| module_of(&src, f)).collect();
    // The root's `pub use a::b::{C, D};` and `pub use a::b::C;`.
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs");
    let mut reexports = BTreeMap::new();
    for p in paths(&lib.replace("pub use ", "pub use crate::")) {
        let parts: Vec<&str> = p.split("::").skip(1).collect();
        if let Some((name, path)) = parts.split_last() {
            reexports.insert(
                name.to_string(),
                path.iter().map(|s| s.to_string()).collect(),
            );
        }
    }

    let mut upward = Vec::new();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &all {
        let from = module_of(&src, file);
        if from.is_empty() {
            continue; // lib.rs: declarations and re-exports
        }
        let Some(lf) = layer(&from) else {
            panic!("src/{} is in no layer: add it to LAYERS", from.join("/"));
        };
        let text = std::fs::read_to_string(file).expect("read");
        for p in paths(&code(&text)) {
            let to = resolve(&from, &p, &modules, &reexports);
            if to.is_empty() {
                continue; // the root's own helpers
            }
            let lt = layer(&to).unwrap_or(0);
            if lt > lf {
                upward.push(format!(
                    "{} ({}) -> {} ({}) by `{p}`",
                    file.display(),
                    LAYERS[lf].0,
                    to.join("::"),
                    LAYERS[lt].0
                ));
            }
            let (a, b) = (component(&from), component(&to));
            if a != b {
                edges.entry(a).or_default().insert(b);
            }
        }
    }
    upward.sort();
    upward.dedup();
    assert!(
        upward.is_empty(),
        "imports from a higher layer:\n{}",
        upward.join("\n")
    );

    // A cycle: a component that reaches itself.
    for start in edges.keys() {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<(String, Vec<String>)> = vec![(start.clone(), vec![start.clone()])];
        while let Some((node, trail)) = stack.pop() {
            for next in edges.get(&node).into_iter().flatten() {
                if next == start {
                    panic!("a cycle: {} -> {start}", trail.join(" -> "));
                }
                if seen.insert(next.clone()) {
                    let mut t = trail.clone();
                    t.push(next.clone());
                    stack.push((next.clone(), t));
                }
            }
        }
    }
    eprintln!(
        "{} files, {} components, {} edges between them, none upward, no cycle",
        all.len(),
        edges.len(),
        edges.values().map(BTreeSet::len).sum::<usize>()
    );
}

/// The checker sees what it must: an upward import and a cycle in made-up sources.
#[test]
fn the_checker_sees_groups_and_super_paths() {
    let p =
        paths("use crate::{memory::{Manager, pool::Pool}, types::Label};\nuse super::super::x::Y;");
    assert!(p.contains(&"crate::memory::Manager".to_string()), "{p:?}");
    assert!(
        p.contains(&"crate::memory::pool::Pool".to_string()),
        "{p:?}"
    );
    assert!(p.contains(&"crate::types::Label".to_string()), "{p:?}");
    assert!(p.contains(&"super::super::x::Y".to_string()), "{p:?}");
    let modules: BTreeSet<Module> = [
        vec!["memory".to_string()],
        vec!["memory".into(), "pool".into()],
    ]
    .into_iter()
    .collect();
    let from: Module = vec!["memory".into(), "pool".into(), "tlsf".into()];
    assert_eq!(
        resolve(
            &from,
            "super::super::pool::Chunks",
            &modules,
            &BTreeMap::new()
        ),
        vec!["memory".to_string(), "pool".into()]
    );
    assert_eq!(layer(&vec!["devices".to_string()]), Some(4));
    assert_eq!(component(&vec!["queue".to_string()]), "face");
}
