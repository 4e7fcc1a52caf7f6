//! The mutants `.cargo/mutants.toml` excludes still exist. cargo-mutants names a mutant
//! `path:line:column: replace OP with ... in FUNCTION`; an edit above a pinned line moves the
//! operator, and a rename or a rewrite removes the function, and the pattern then silently
//! excludes nothing (the mutant it meant runs again and survives) or, worse, excludes another
//! mutant. `scripts/mutants` is not part of CI; this check is.

use std::fs;

/// The patterns of `config` that name a file of `src/` (commented-out lines are not patterns).
fn src_patterns(config: &str) -> impl Iterator<Item = String> + '_ {
    config
        .lines()
        .map(str::trim)
        .filter(|line| line.starts_with("\"src/"))
        .map(|line| line.trim_end_matches(',').trim_matches('"').to_string())
}

/// `.cargo/mutants.toml`, read from the repository.
fn config() -> String {
    fs::read_to_string(".cargo/mutants.toml").expect("read .cargo/mutants.toml")
}

/// `(pattern, path, line, column, operator)` for every pattern pinned by line and column.
fn pinned(config: &str) -> Vec<(String, String, usize, usize, String)> {
    let mut out = Vec::new();
    for pattern in src_patterns(config) {
        // path:line:column: replace OP with ...
        let mut parts = pattern.splitn(4, ':');
        let (Some(path), Some(l), Some(c), Some(rest)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let (Ok(l), Ok(c)) = (l.parse::<usize>(), c.parse::<usize>()) else {
            continue; // `path:.*: ...`: not pinned
        };
        let op = rest
            .trim_start()
            .strip_prefix("replace ")
            .and_then(|r| r.split(" with ").next())
            .unwrap_or_else(|| panic!("a pinned pattern that is not `replace OP with`: {pattern}"))
            // The pattern is a regex in a TOML string: `\\+` is the operator `+`.
            .replace("\\\\", "");
        let path = path.to_string();
        out.push((pattern, path, l, c, op));
    }
    out
}

#[test]
fn every_pinned_exclusion_points_at_its_operator() {
    let pins = pinned(&config());
    assert!(
        pins.len() >= 10,
        "found only {} pinned patterns",
        pins.len()
    );
    let mut stale = Vec::new();
    for (pattern, path, l, c, op) in &pins {
        let source = fs::read_to_string(path).unwrap_or_else(|e| panic!("{pattern}: {path}: {e}"));
        let at = source
            .lines()
            .nth(l - 1)
            .and_then(|text| text.get(c - 1..))
            .unwrap_or("");
        if !at.starts_with(op.as_str()) {
            stale.push(format!("{pattern}\n    line {l} reads `{}`", at.trim_end()));
        }
    }
    assert!(
        stale.is_empty(),
        "pinned exclusions whose operator moved (find its new line and column with \
         `cargo mutants --list --file <path> --no-config`):\n{}",
        stale.join("\n")
    );
}

/// `(pattern, path, names)` for every pattern that names its file and its function: the
/// function's name (the last `::` segment) for each alternative of the pattern's regex.
fn functions(config: &str) -> Vec<(String, String, Vec<String>)> {
    let mut out = Vec::new();
    for pattern in src_patterns(config) {
        let (Some(path), Some(function)) = (
            pattern.split(':').next(),
            pattern
                .rsplit_once(" in ")
                .map(|(_, f)| f.trim_end_matches('$')),
        ) else {
            continue;
        };
        // `keep_best(_sorted)?` names keep_best_sorted (and keep_best); `(a|B::c)` names a and c.
        let plain: String = function.chars().filter(|c| !"()?".contains(*c)).collect();
        let names = plain
            .split('|')
            .map(|alt| alt.rsplit("::").next().unwrap_or(alt).to_string())
            .collect();
        let path = path.to_string();
        out.push((pattern, path, names));
    }
    out
}

#[test]
fn every_excluded_function_exists() {
    let patterns = functions(&config());
    assert!(
        patterns.len() >= 30,
        "found only {} patterns",
        patterns.len()
    );
    let mut gone = Vec::new();
    for (pattern, path, names) in &patterns {
        let source = fs::read_to_string(path).unwrap_or_else(|e| panic!("{pattern}: {path}: {e}"));
        for name in names {
            let defined = [format!("fn {name}("), format!("fn {name}<")]
                .iter()
                .any(|d| source.contains(d.as_str()));
            if !defined {
                gone.push(format!("{pattern}\n    no `fn {name}` in {path}"));
            }
        }
    }
    assert!(
        gone.is_empty(),
        "exclusions of functions that no longer exist:\n{}",
        gone.join("\n")
    );
}

#[test]
fn the_parser_reads_a_pin_and_skips_the_rest() {
    let config = r#"
        "src/radix.rs:114:50: replace - with \\+ in sort_with$",
        "src/builder.rs:.*: replace > with (>=|==|<) in first_pass$",
        "src/a.rs:3:7: replace \\+= with \\*= in f$",
        # "src/b.rs:1:1: replace < with > in g$",
    "#;
    let pins = pinned(config);
    assert_eq!(pins.len(), 2);
    assert_eq!(
        (pins[0].1.as_str(), pins[0].2, pins[0].3, pins[0].4.as_str()),
        ("src/radix.rs", 114, 50, "-")
    );
    assert_eq!(
        (pins[1].1.as_str(), pins[1].2, pins[1].3, pins[1].4.as_str()),
        ("src/a.rs", 3, 7, "+=")
    );
    let fns = functions(config);
    assert_eq!(fns.len(), 3);
    assert_eq!(fns[1].2, ["first_pass"]);
    let alternatives =
        functions(r#""src/x.rs:.*: replace \\| with \\^ in stretch::(Split::bucket|query)$","#);
    assert_eq!(alternatives[0].2, ["bucket", "query"]);
    let optional = functions(r#""src/x.rs:.*: replace \\| with \\^ in keep_best(_sorted)?$","#);
    assert_eq!(optional[0].2, ["keep_best_sorted"]);
}
