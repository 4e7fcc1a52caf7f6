//! The crate's layers, checked from its sources: every module of `src/` belongs to one layer
//! below, and no module uses one of a layer above its own; within a layer, no two modules use
//! each other, directly or through others (no import circle). A module is a top-level file or
//! folder of `src/` (a folder's files are one module: `table/avx2.rs` is `table`). What counts
//! as a use is any path `crate::…` in code — `use` lines, paths in expressions and types,
//! names the crate root re-exports resolved to the module that defines them — outside
//! comments and outside items marked `#[cfg(test)]` (a module's tests may drive it through
//! the layers above).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, from the bottom: a module may use its own layer's modules and those below.
const LAYERS: &[(&str, &[&str])] = &[
    ("errors and helpers", &["error", "prefetch"]),
    (
        "hashing: every derivation of a key's buckets and fingerprint",
        &["hash"],
    ),
    (
        "tables: bits, SWAR, regions, the buffer, the codecs, the geometry",
        &["table"],
    ),
    (
        "levels: classic and stretch addressing, bounds, counts, the scan of entries, copies",
        &["level", "copies"],
    ),
    ("the view: FilterRef and the batch kernels", &["view"]),
    (
        "the format: records, encoding, decoding, the file's limits",
        &["format"],
    ),
    (
        "the owners",
        &[
            "config", "persist", "radix", "compact", "filter", "builder", "stretch", "chain",
            "checks", "mmap", "index",
        ],
    ),
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file below `dir`.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module a file belongs to: its top-level file or folder under `src/` (`None` for
/// `lib.rs`, the root).
fn module_of(file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src()).unwrap();
    let first = rel.components().next()?.as_os_str().to_str()?.to_string();
    match first.strip_suffix(".rs") {
        Some("lib") => None,
        Some(name) => Some(name.to_string()),
        None => Some(first),
    }
}

/// `text` without comments (line and block), string literals and `#[cfg(test)]` items.
fn code(text: &str) -> String {
    // Comments and strings first, character by character.
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'\'' && i + 2 < b.len() && (b[i + 2] == b'\'' || b[i + 1] == b'\\') {
            // A character literal ('"', '\'', '{'): skipped, so it opens no string or brace.
            i += 1;
            while i < b.len() && b[i] != b'\'' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else {
            let c = text[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    // Then each `#[cfg(test)]` item: up to the `;` or the closing brace that ends it.
    let mut kept = String::with_capacity(out.len());
    let mut rest = out.as_str();
    while let Some(at) = rest.find("#[cfg(test)]") {
        kept.push_str(&rest[..at]);
        let item = &rest[at + "#[cfg(test)]".len()..];
        let mut depth = 0usize;
        let mut end = item.len();
        for (k, c) in item.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = k + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = k + 1;
                    break;
                }
                _ => {}
            }
        }
        rest = &item[end..];
    }
    kept.push_str(rest);
    kept
}

/// The first identifiers of the paths in a `use` tree's braces: `{a::B, c, d::{e, f}}` gives
/// `a`, `c`, `d`.
fn tree_heads(tree: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut at_start = true;
    let mut ident = String::new();
    for c in tree.chars() {
        match c {
            '{' => {
                depth += 1;
                if depth == 1 {
                    at_start = true;
                }
            }
            '}' => depth -= 1,
            ',' if depth == 1 => at_start = true,
            c if depth == 1 && at_start && (c.is_alphanumeric() || c == '_') => ident.push(c),
            _ if depth == 1 && at_start && !ident.is_empty() => {
                heads.push(std::mem::take(&mut ident));
                at_start = false;
            }
            _ => {}
        }
        if depth == 0 && c == '}' {
            break;
        }
    }
    if !ident.is_empty() {
        heads.push(ident);
    }
    heads
}

/// The names the crate root re-exports, each with the module it comes from.
fn reexports(lib: &str) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for item in lib.split(';') {
        let Some(at) = item.find("pub use ") else {
            continue;
        };
        let path = &item[at + "pub use ".len()..];
        let (module, rest) = path.split_once("::").unwrap();
        let rest = rest.trim();
        let listed: Vec<&str> = match rest.strip_prefix('{') {
            Some(list) => list.trim_end_matches('}').split(',').collect(),
            None => vec![rest],
        };
        for name in listed {
            let name = name.trim();
            if !name.is_empty() {
                names.insert(name.to_string(), module.trim().to_string());
            }
        }
    }
    names
}

/// Every module each module uses: `from → {to}`.
fn uses() -> BTreeMap<String, BTreeSet<String>> {
    let mut all = Vec::new();
    files(&src(), &mut all);
    let modules: BTreeSet<String> = all.iter().filter_map(|f| module_of(f)).collect();
    let names = reexports(&code(
        &std::fs::read_to_string(src().join("lib.rs")).unwrap(),
    ));
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &all {
        let Some(from) = module_of(file) else {
            continue;
        };
        let text = code(&std::fs::read_to_string(file).unwrap());
        let mut targets = Vec::new();
        for (at, _) in text.match_indices("crate::") {
            let after = &text[at + "crate::".len()..];
            if after.starts_with('{') {
                targets.extend(tree_heads(after));
            } else {
                let ident: String = after
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                targets.push(ident);
            }
        }
        let edges = graph.entry(from.clone()).or_default();
        for t in targets {
            let module = if modules.contains(&t) {
                t
            } else if let Some(m) = names.get(&t) {
                m.clone()
            } else {
                panic!(
                    "{}: crate::{t} is neither a module nor a re-export",
                    file.display()
                );
            };
            if module != from {
                edges.insert(module);
            }
        }
    }
    graph
}

fn layer_of(module: &str) -> usize {
    LAYERS
        .iter()
        .position(|(_, ms)| ms.contains(&module))
        .unwrap_or_else(|| panic!("module `{module}` is in no layer of tests/layers.rs"))
}

#[test]
fn no_module_uses_a_layer_above_its_own() {
    let graph = uses();
    let mut upward = Vec::new();
    for (from, tos) in &graph {
        for to in tos {
            if layer_of(to) > layer_of(from) {
                upward.push(format!(
                    "{from} ({}) uses {to} ({})",
                    LAYERS[layer_of(from)].0,
                    LAYERS[layer_of(to)].0
                ));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "uses of a layer above:\n{}",
        upward.join("\n")
    );
}

#[test]
fn no_import_circle() {
    let graph = uses();
    // Depth-first search; a back edge closes a circle, reported as its path.
    fn visit(
        m: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        circles: &mut Vec<String>,
    ) {
        if let Some(at) = path.iter().position(|p| p == m) {
            let mut circle = path[at..].to_vec();
            circle.push(m.to_string());
            circles.push(circle.join(" → "));
            return;
        }
        if done.contains(m) {
            return;
        }
        path.push(m.to_string());
        for next in graph.get(m).into_iter().flatten() {
            visit(next, graph, path, done, circles);
        }
        path.pop();
        done.insert(m.to_string());
    }
    let (mut done, mut circles) = (BTreeSet::new(), Vec::new());
    for m in graph.keys() {
        visit(m, &graph, &mut Vec::new(), &mut done, &mut circles);
    }
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
}

/// The checks above see what they should: a use through a brace tree, a re-exported name, a
/// path in an expression; and none in a comment, a string or a test module.
#[test]
fn the_scan_finds_uses_and_only_uses() {
    let text = code(
        "use crate::{error::Error, hash::{self, KeyHash}};\n\
         // crate::chain in a comment\n\
         /* crate::mmap in a block */\n\
         fn f() { let s = \"crate::builder\"; let c = '\"'; crate::table::kernel::f(); }\n\
         #[cfg(test)]\n\
         mod tests { use crate::filter::CuckooFilter; }\n\
         fn g() -> crate::FilterRef<'static> { todo!() }\n",
    );
    assert!(!text.contains("chain") && !text.contains("mmap") && !text.contains("builder"));
    assert!(!text.contains("filter::CuckooFilter"));
    assert!(text.contains("crate::table::kernel") && text.contains("crate::FilterRef"));
    assert_eq!(
        tree_heads("{error::Error, hash::{self, KeyHash}};"),
        ["error", "hash"]
    );
    let names = reexports("pub use view::FilterRef;\npub use config::{Config, MAX_LEVELS};");
    assert_eq!(names["FilterRef"], "view");
    assert_eq!(names["MAX_LEVELS"], "config");
    // Every module of src/ is in one layer, and each layer's modules exist.
    let graph = uses();
    for m in graph.keys() {
        layer_of(m);
    }
    for (_, ms) in LAYERS {
        for m in *ms {
            assert!(graph.contains_key(*m), "layer module `{m}` is not in src/");
        }
    }
}
