//! `include/cuckoo_sst.h` is what cbindgen generates from this crate today: a change to the C
//! interface that did not regenerate the header fails here. `CKSST_BLESS=1 cargo test -p
//! cuckoo-sst-c --test header` rewrites it.

use std::path::Path;

#[test]
fn the_committed_header_is_current() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(dir)
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header")
        .write(&mut generated);
    let generated = String::from_utf8(generated).expect("the header is UTF-8");
    let path = dir.join("include/cuckoo_sst.h");
    if std::env::var_os("CKSST_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write the header");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "include/cuckoo_sst.h is not current: run `CKSST_BLESS=1 cargo test -p cuckoo-sst-c --test header`"
    );
}

#[test]
fn every_function_is_prefixed_and_every_handle_documents_its_threads() {
    let header =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("include/cuckoo_sst.h"))
            .expect("the header");
    let mut functions = 0;
    for line in header.lines() {
        // A declaration's name follows its return type: `int cksst_x(`, `void cksst_x(`.
        if let Some(open) = line.find('(') {
            if line.starts_with(' ') || line.starts_with('/') || line.starts_with('#') {
                continue;
            }
            let name = line[..open].rsplit([' ', '*']).next().unwrap();
            assert!(
                name.starts_with("cksst_"),
                "{name} in `{line}` is not prefixed cksst_"
            );
            functions += 1;
        }
    }
    assert!(functions >= 40, "only {functions} functions declared");
    for handle in [
        "cksst_builder",
        "cksst_view",
        "cksst_view_set",
        "cksst_mapped",
        "cksst_growable",
        "cksst_run_index",
        "cksst_mapped_run_index",
    ] {
        let decl = format!("typedef struct {handle} {handle};");
        let at = header
            .find(&decl)
            .unwrap_or_else(|| panic!("{handle} is not declared"));
        let doc = &header[..at];
        let doc = &doc[doc.rfind("\n\n").unwrap_or(0)..];
        assert!(
            doc.contains("Thread safety"),
            "{handle}'s comment does not say who may use it"
        );
    }
}

/// The comment before `decl` in the header (the block of `//` lines above it).
fn doc_of<'h>(header: &'h str, decl: &str) -> &'h str {
    let at = header
        .find(decl)
        .unwrap_or_else(|| panic!("{decl} is not declared"));
    let before = &header[..at];
    &before[before.rfind("\n\n").unwrap_or(0)..]
}

fn header() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("include/cuckoo_sst.h"))
        .expect("the header")
}

/// Issue 40, finding 3: a C caller reads only the header, so the mapped-file contract that the
/// Rust docs state (a mapped file must not be written or truncated: wrong answers, false
/// negatives included, or SIGBUS) is stated there, with the open that copies the file instead.
#[test]
fn the_header_states_the_mapped_file_contract_and_offers_a_copy() {
    let header = header();
    let doc = doc_of(&header, "typedef struct cksst_mapped cksst_mapped;");
    for words in [
        "must not",
        "truncat",
        "SIGBUS",
        "false negatives",
        "cksst_mapped_read",
    ] {
        assert!(
            doc.contains(words),
            "cksst_mapped's comment lacks {words:?}:\n{doc}"
        );
    }
    assert!(header.contains("int cksst_mapped_read(const char *path, cksst_mapped **mapped);"));
}

/// Issue 40, finding 9: the comments agree with what the functions do.
#[test]
fn the_comments_agree_with_the_functions() {
    let header = header();
    // Every function that hands out bytes (a `uint8_t **` output) is named where they are freed.
    let free = doc_of(&header, "void cksst_bytes_free(");
    let mut givers = 0;
    for line in header.lines().filter(|l| l.contains("uint8_t **")) {
        let name = line[..line.find('(').unwrap()].rsplit(' ').next().unwrap();
        assert!(
            free.contains(name),
            "cksst_bytes_free's comment omits {name}"
        );
        givers += 1;
    }
    assert!(givers >= 3, "{givers}");
    // A set copies what it needs of its views: freeing a view does not end a set made from it
    // (the C suite frees them first), which both comments say.
    let view_free = doc_of(&header, "void cksst_view_free(");
    assert!(!view_free.contains("nor by a set"), "{view_free}");
    assert!(
        view_free.contains("A set made from it does not need it"),
        "{view_free}"
    );
    assert!(doc_of(&header, "int cksst_view_set_new(").contains("The views may be freed"));
    // The growable filter: its lookups may run at once on several threads (every handle is
    // Send and Sync, asserted in lib.rs), as its functions' comments say; only changes need it
    // to themselves.
    let growable = doc_of(&header, "typedef struct cksst_growable cksst_growable;");
    assert!(
        !growable.contains("one thread at a time for every function"),
        "{growable}"
    );
    assert!(
        growable.contains("any number of threads may look up"),
        "{growable}"
    );
}
