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
