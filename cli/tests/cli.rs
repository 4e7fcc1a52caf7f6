//! The real `cuckoo-sst` binary, run as a user would: every subcommand, and every kind of bad
//! input, with its exit code (0 success, 1 damaged file, 2 usage or I/O error) and a one-line
//! message — never a panic.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

struct Run {
    code: i32,
    /// Standard output as text (lossy: a filter written to it is binary) …
    stdout: String,
    /// … and as bytes.
    stdout_bytes: Vec<u8>,
    stderr: String,
}

const BIN: &str = env!("CARGO_BIN_EXE_cuckoo-sst");

fn run(args: &[&str], stdin: &[u8]) -> Run {
    run_in(Path::new("."), args, stdin)
}

/// [`run`] with `dir` as the working directory.
fn run_in(dir: &Path, args: &[&str], stdin: &[u8]) -> Run {
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut input = child.stdin.take().unwrap();
    // A command that does not read standard input may close it early.
    let _ = input.write_all(stdin);
    drop(input);
    let Output {
        status,
        stdout,
        stderr,
    } = child.wait_with_output().unwrap();
    let r = Run {
        code: status.code().expect("exited, not killed by a signal"),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stdout_bytes: stdout,
        stderr: String::from_utf8(stderr).unwrap(),
    };
    assert!(
        !r.stderr.contains("panicked") && !r.stderr.contains("RUST_BACKTRACE"),
        "a panic: {}",
        r.stderr
    );
    r
}

/// A failure: the exit code, and one line on standard error that contains `says`.
fn fails(r: &Run, code: i32, says: &str) {
    assert_eq!(r.code, code, "stderr: {}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "one line: {:?}", r.stderr);
    assert!(r.stderr.starts_with("cuckoo-sst: "), "{:?}", r.stderr);
    assert!(
        r.stderr.contains(says),
        "{:?} should say {says:?}",
        r.stderr
    );
}

fn path(dir: &Path, name: &str) -> String {
    dir.join(name).to_str().unwrap().to_string()
}

fn lines(range: std::ops::Range<u64>) -> Vec<u8> {
    range
        .map(|i| format!("user:{i}\n"))
        .collect::<String>()
        .into_bytes()
}

/// Builds a filter of keys `user:0 .. user:n` and returns its path.
fn built(dir: &Path, name: &str, n: u64, extra: &[&str]) -> String {
    let out = path(dir, name);
    let mut args = vec!["build", "-o", &out];
    args.extend_from_slice(extra);
    let r = run(&args, &lines(0..n));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.is_empty(),
        "no progress bar off a terminal: {:?}",
        r.stderr
    );
    out
}

#[test]
fn build_info_verify_query_on_a_million_keys() {
    let dir = tempfile::tempdir().unwrap();
    let keys_file = path(dir.path(), "keys.txt");
    std::fs::write(&keys_file, lines(0..1_000_000)).unwrap();
    let file = path(dir.path(), "keys.cuckoo");
    let r = run(&["build", &keys_file, "-o", &file], b"");
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("1000000 keys (1000000 distinct)"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("bits/key"), "{}", r.stdout);

    let info = run(&["info", &file], b"");
    assert_eq!(info.code, 0, "{}", info.stderr);
    for field in [
        "version 2",
        "single filter",
        "items         1000000",
        "checksums     ok",
    ] {
        assert!(info.stdout.contains(field), "{field}: {}", info.stdout);
    }
    assert!(
        info.stdout.contains("semi-sorted b=4 f=10"),
        "{}",
        info.stdout
    );

    let verify = run(&["verify", &file], b"");
    assert_eq!(verify.code, 0, "{}", verify.stderr);
    assert!(verify.stdout.contains(": ok"), "{}", verify.stdout);

    // Every key built in answers present; keys never added mostly answer absent, at about
    // the file's rate (1 % target; 100 000 keys: 3σ of the count is about 300 of 1000).
    let present = run(&["query", &file], &lines(0..1_000_000));
    assert_eq!(present.code, 0, "{}", present.stderr);
    assert_eq!(present.stdout.lines().count(), 1_000_000);
    assert!(present.stdout.lines().all(|l| l == "present"));
    let absent = run(&["query", &file], &lines(2_000_000..2_100_000));
    assert_eq!(absent.stdout.lines().count(), 100_000);
    let false_positives = absent.stdout.lines().filter(|&l| l == "present").count();
    assert!(
        absent
            .stdout
            .lines()
            .all(|l| l == "present" || l == "absent")
    );
    assert!(
        false_positives < 1300,
        "{false_positives} false positives in 100 000"
    );
    assert!(
        false_positives > 0,
        "a 1 % filter shows some false positives"
    );

    // Keys as arguments, answered in order.
    let args = run(&["query", &file, "user:17", "user:999999", "nobody"], b"");
    assert_eq!(args.stdout, "present\npresent\nabsent\n");
}

#[test]
fn a_damaged_copy_fails_verify_naming_the_damage() {
    let dir = tempfile::tempdir().unwrap();
    let file = built(dir.path(), "f.cuckoo", 50_000, &[]);
    let whole = std::fs::read(&file).unwrap();
    for (at, names) in [
        (whole.len() / 2, "level 0 chunk"),
        (40, "header"),
        (3, "not a cuckoo-sst filter"),
        // Version 2 ^ 0x10: a newer writer's file (checked before the header's checksum).
        (8, "format version 18 is newer than this build reads"),
        (130, "level table"),
        (196, "checksum table"),
    ] {
        let mut bytes = whole.clone();
        bytes[at] ^= 0x10;
        let damaged = path(dir.path(), "damaged.cuckoo");
        std::fs::write(&damaged, &bytes).unwrap();
        let r = run(&["verify", &damaged], b"");
        fails(&r, 1, names);
        assert!(
            r.stderr.contains("(bytes "),
            "names the bytes: {}",
            r.stderr
        );
        // The range named holds the flipped byte.
        let range = r.stderr.rsplit("(bytes ").next().unwrap();
        let (a, b) = range
            .trim_end()
            .trim_end_matches(')')
            .split_once("..")
            .unwrap();
        let (a, b): (usize, usize) = (a.parse().unwrap(), b.parse().unwrap());
        assert!((a..b).contains(&at), "{at} in {a}..{b}");
        // info shows what it can and exits 1; query refuses to answer from damaged bytes.
        let info = run(&["info", &damaged], b"");
        if names == "level 0 chunk" {
            assert_eq!(info.code, 1);
            assert!(info.stdout.contains("DAMAGED"), "{}", info.stdout);
        } else {
            fails(&info, 1, names);
        }
        fails(&run(&["query", &damaged, "user:1"], b""), 1, names);
    }
}

#[test]
fn bad_files_get_one_line_and_the_right_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let good = built(dir.path(), "good.cuckoo", 1000, &[]);
    let bytes = std::fs::read(&good).unwrap();
    let empty = path(dir.path(), "empty");
    std::fs::write(&empty, b"").unwrap();
    let truncated = path(dir.path(), "truncated");
    std::fs::write(&truncated, &bytes[..bytes.len() - 1]).unwrap();
    let short = path(dir.path(), "short");
    std::fs::write(&short, &bytes[..100]).unwrap();
    let foreign = path(dir.path(), "foreign");
    std::fs::write(
        &foreign,
        b"SQLite format 3\0 and then some more bytes than a header",
    )
    .unwrap();
    let missing = path(dir.path(), "missing");
    let directory = dir.path().to_str().unwrap().to_string();
    let cases: [(&str, i32, &str); 6] = [
        (&empty, 1, "truncated"),
        (&truncated, 1, "truncated"),
        (&short, 1, "truncated"),
        (&foreign, 1, "not a cuckoo-sst filter"),
        (&missing, 2, "no such file"),
        (&directory, 2, "is a directory"),
    ];
    for (file, code, says) in cases {
        for cmd in [
            vec!["verify", file],
            vec!["info", file],
            vec!["query", file, "k"],
            vec!["bench", file, "--seconds", "0.01", "--keys", "10"],
        ] {
            let r = run(&cmd, b"");
            fails(&r, code, says);
            assert!(r.stderr.contains(file), "names the file: {}", r.stderr);
        }
    }
    // Building from a missing file or into a directory that does not exist.
    fails(
        &run(&["build", &missing, "-o", &path(dir.path(), "x")], b""),
        2,
        "no such file",
    );
    let nowhere = path(dir.path(), "no/such/dir/f.cuckoo");
    fails(
        &run(&["build", "-o", &nowhere], b"k\n"),
        2,
        &format!("{nowhere}: cannot write the filter: no such directory"),
    );
}

/// A filter that cannot be written is reported under the path the user gave, never under the
/// temporary file beside it (`.f.cuckoo.XXXXXX.tmp`), which does not exist.
#[test]
fn an_output_that_cannot_be_written_is_named_as_given() {
    let dir = tempfile::tempdir().unwrap();
    let nowhere = path(dir.path(), "no/such/dir/f.cuckoo");
    let r = run(&["build", "-o", &nowhere], b"k\n");
    fails(&r, 2, &nowhere);
    assert!(!r.stderr.contains(".f.cuckoo."), "{}", r.stderr);
    assert!(!r.stderr.contains("at path"), "{}", r.stderr);
    // Into a directory, or below a file.
    let d = dir.path().to_str().unwrap();
    fails(
        &run(&["build", "-o", d], b"k\n"),
        2,
        &format!("{d}: is a directory"),
    );
    let file = built(dir.path(), "f.cuckoo", 10, &[]);
    let below = format!("{file}/g.cuckoo");
    fails(
        &run(&["build", "-o", &below], b"k\n"),
        2,
        &format!("{below}: cannot write the filter: a part of the path is not a directory"),
    );
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["f.cuckoo"], "no temporary file left");
}

/// `-o -` writes the filter to standard output (the summary goes to standard error), the
/// same bytes as a file gets; `info`, `verify`, `query` and `bench` read `-` from standard
/// input, with the same answers and errors as for a file, named "standard input".
#[test]
fn dash_is_standard_output_for_build_and_standard_input_for_readers() {
    let dir = tempfile::tempdir().unwrap();
    let keys = lines(0..5000);
    let r = run_in(dir.path(), &["build", "-o", "-"], &keys);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .starts_with("wrote standard output: 5000 keys (5000 distinct), "),
        "{}",
        r.stderr
    );
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(
        !dir.path().join("-").exists(),
        "no file named '-' is written"
    );
    let filter = r.stdout_bytes;
    let file = built(dir.path(), "f.cuckoo", 5000, &[]);
    assert_eq!(
        filter,
        std::fs::read(&file).unwrap(),
        "the bytes a file gets"
    );
    assert!(
        r.stderr.contains(&format!("{} bytes", filter.len())),
        "{}",
        r.stderr
    );

    let verify = run(&["verify", "-"], &filter);
    assert_eq!(verify.code, 0, "{}", verify.stderr);
    assert!(
        verify.stdout.starts_with("standard input: ok — "),
        "{}",
        verify.stdout
    );
    let info = run(&["info", "-"], &filter);
    assert_eq!(info.code, 0, "{}", info.stderr);
    assert!(
        info.stdout.contains("file          standard input ("),
        "{}",
        info.stdout
    );
    assert!(
        info.stdout.contains("items         5000"),
        "{}",
        info.stdout
    );
    let json = run(&["info", "-", "--json", "--no-verify"], &filter);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(v["file"], "standard input");
    assert_eq!(v["checksums"], "unchecked");
    let query = run(&["query", "-", "user:17", "user:4999", "nobody"], &filter);
    assert_eq!(query.code, 0, "{}", query.stderr);
    assert_eq!(
        query.stdout,
        run(&["query", &file, "user:17", "user:4999", "nobody"], b"").stdout
    );
    assert!(
        query.stdout.starts_with("present\npresent\n"),
        "{}",
        query.stdout
    );
    let bench = run(
        &["bench", "-", "--seconds", "0.01", "--keys", "100"],
        &filter,
    );
    assert_eq!(bench.code, 0, "{}", bench.stderr);
    assert!(
        bench.stdout.starts_with("standard input: 5000 items"),
        "{}",
        bench.stdout
    );

    // Both the filter and the keys cannot come from standard input.
    fails(
        &run(&["query", "-"], &filter),
        2,
        "the keys must be arguments",
    );
    fails(
        &run(&["query", "-", "-"], &filter),
        2,
        "the keys must be arguments",
    );
    // Damaged, truncated and foreign input: exit 1, named, with the bytes where it can tell.
    let mut damaged = filter.clone();
    damaged[40] ^= 0x10;
    let r = run(&["verify", "-"], &damaged);
    fails(&r, 1, "standard input: filter file is damaged");
    assert!(r.stderr.contains("the header"), "{}", r.stderr);
    assert!(r.stderr.contains("(bytes 0..124)"), "{}", r.stderr);
    let mut damaged = filter.clone();
    let last = damaged.len() - 1;
    damaged[last] ^= 1;
    fails(&run(&["verify", "-"], &damaged), 1, "level 0 chunk");
    let info = run(&["info", "-"], &damaged);
    assert_eq!(info.code, 1);
    assert!(info.stdout.contains("DAMAGED"), "{}", info.stdout);
    fails(
        &run(&["verify", "-"], &filter[..filter.len() - 1]),
        1,
        "standard input: filter file is truncated",
    );
    fails(
        &run(&["info", "-"], b""),
        1,
        "standard input: filter file is truncated",
    );
    fails(
        &run(
            &["query", "-", "k"],
            b"SQLite format 3\0 and then some more bytes",
        ),
        1,
        "standard input: not a cuckoo-sst filter",
    );
}

/// The check from the issue, as a user types it.
#[test]
fn a_filter_piped_to_a_file_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let status = Command::new("sh")
        .args([
            "-c",
            r#"seq 1000 | "$0" build -o - > f && "$0" verify f"#,
            BIN,
        ])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stdout = String::from_utf8(status.stdout).unwrap();
    let stderr = String::from_utf8(status.stderr).unwrap();
    assert!(status.status.success(), "{stderr}");
    assert!(stdout.starts_with("f: ok — "), "{stdout}");
    assert!(stdout.contains("1000 items in 1 level"), "{stdout}");
    assert!(
        stderr.starts_with("wrote standard output: 1000 keys"),
        "{stderr}"
    );
}

/// `build` under a given umask, in a child shell (the umask is the process's: a test cannot
/// set it for itself without affecting the others); returns the file's mode.
#[cfg(unix)]
fn build_under_umask(dir: &Path, umask: &str, name: &str) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    let mut child = Command::new("sh")
        .args([
            "-c",
            &format!(r#"umask {umask} && exec "$0" build -o {name}"#),
            BIN,
        ])
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&lines(0..100))
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::metadata(dir.join(name))
        .unwrap()
        .permissions()
        .mode()
        & 0o7777
}

/// A new filter file gets 0666 less the umask, as any file the user creates (0644 under 022:
/// readable by the engine's other users), and a replaced one keeps its mode.
#[cfg(unix)]
#[test]
fn saved_files_get_the_users_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(build_under_umask(dir.path(), "022", "a.cuckoo"), 0o644);
    assert_eq!(build_under_umask(dir.path(), "002", "b.cuckoo"), 0o664);
    assert_eq!(build_under_umask(dir.path(), "077", "c.cuckoo"), 0o600);
    for mode in [0o640, 0o604, 0o444] {
        let a = dir.path().join("a.cuckoo");
        std::fs::set_permissions(&a, std::fs::Permissions::from_mode(mode)).unwrap();
        assert_eq!(build_under_umask(dir.path(), "022", "a.cuckoo"), mode);
    }
}

#[test]
fn an_unreadable_file_is_an_io_error() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let file = built(dir.path(), "locked.cuckoo", 100, &[]);
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::read(&file).is_ok() {
        // Running as root: permissions do not apply, nothing to test.
        return;
    }
    fails(&run(&["verify", &file], b""), 2, "permission denied");
    fails(
        &run(&["build", &file, "-o", &path(dir.path(), "x")], b""),
        2,
        "permission denied",
    );
}

#[test]
fn malformed_keys_are_named_by_line_or_byte() {
    let dir = tempfile::tempdir().unwrap();
    let out = path(dir.path(), "f.cuckoo");
    fails(
        &run(&["build", "-o", &out, "--format", "hex"], b"6b6579\nzz\n"),
        2,
        "standard input: line 2: 'z' at column 1 is not a hex digit",
    );
    fails(
        &run(&["build", "-o", &out], b"a\n\nb\n"),
        2,
        "line 2: empty key",
    );
    fails(
        &run(
            &["build", "-o", &out, "--format", "binary"],
            &[5, 0, 0, 0, b'a'],
        ),
        2,
        "byte 0: key 1 says 5 bytes, but only 1 follow",
    );
    assert!(!Path::new(&out).exists(), "nothing written on bad input");
    let file = built(dir.path(), "g.cuckoo", 10, &[]);
    fails(
        &run(&["query", &file, "--format", "hex", "00", "abc"], b""),
        2,
        "argument 2: odd number of hex digits",
    );
}

#[test]
fn usage_errors_exit_2_and_help_has_examples() {
    let r = run(&["build"], b"");
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--output"), "{}", r.stderr);
    assert_eq!(run(&["frobnicate"], b"").code, 2);
    assert_eq!(run(&["build", "-o", "x", "--fpr", "lots"], b"").code, 2);
    let dir = tempfile::tempdir().unwrap();
    fails(
        &run(
            &["build", "-o", &path(dir.path(), "x"), "--fpr", "1.5"],
            b"k\n",
        ),
        2,
        "false",
    );
    for cmd in ["build", "info", "verify", "query", "bench"] {
        let r = run(&[cmd, "--help"], b"");
        assert_eq!(r.code, 0);
        assert!(r.stdout.contains("Examples:"), "{cmd}: {}", r.stdout);
        assert!(
            r.stdout.contains(&format!("cuckoo-sst {cmd}")),
            "{cmd}: {}",
            r.stdout
        );
    }
    let top = run(&["--help"], b"");
    assert_eq!(top.code, 0);
    assert!(top.stdout.contains("Exit codes"));
}

#[test]
fn key_formats_build_and_query_alike() {
    let dir = tempfile::tempdir().unwrap();
    let keys: Vec<Vec<u8>> = (0..2000u32)
        .map(|i| {
            let mut k = i.to_be_bytes().to_vec();
            k.extend_from_slice(b"\n\r\0 binary");
            k
        })
        .collect();
    let mut binary = Vec::new();
    let mut hex = String::new();
    for k in &keys {
        binary.extend_from_slice(&(k.len() as u32).to_le_bytes());
        binary.extend_from_slice(k);
        hex.extend(k.iter().map(|b| format!("{b:02x}")));
        hex.push('\n');
    }
    let from_binary = path(dir.path(), "b.cuckoo");
    let from_hex = path(dir.path(), "h.cuckoo");
    let r = run(
        &[
            "build",
            "-o",
            &from_binary,
            "--format",
            "binary",
            "--seed",
            "9",
        ],
        &binary,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = run(
        &["build", "-o", &from_hex, "--format", "hex", "--seed", "9"],
        hex.as_bytes(),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    // The same keys and seed give the same bytes.
    assert_eq!(
        std::fs::read(&from_binary).unwrap(),
        std::fs::read(&from_hex).unwrap()
    );
    let q = run(&["query", &from_binary, "--format", "binary"], &binary);
    assert_eq!(q.stdout.lines().count(), keys.len());
    assert!(q.stdout.lines().all(|l| l == "present"));
    let q = run(
        &[
            "query",
            &from_hex,
            "--format",
            "hex",
            &hex[..hex.find('\n').unwrap()],
        ],
        b"",
    );
    assert_eq!(q.stdout, "present\n");
}

#[test]
fn growable_and_layout_options_reach_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let chain = built(
        dir.path(),
        "chain.cuckoo",
        300_000,
        &[
            "--growable",
            "--initial-capacity",
            "50000",
            "--fpr",
            "0.001",
        ],
    );
    let info = run(&["info", &chain, "--json"], b"");
    assert_eq!(info.code, 0, "{}", info.stderr);
    let v: serde_json::Value = serde_json::from_str(&info.stdout).unwrap();
    assert_eq!(v["growable"], true);
    assert_eq!(v["items"], 300_000);
    assert_eq!(v["checksums"], "ok");
    // Six-fold growth stays in the first level, grown in place past the 50 000 keys it was
    // sized for: a stretch level, whose keys are its items and which has no fixed capacity.
    let levels = v["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 1, "{levels:?}");
    let l = &levels[0];
    assert_eq!(l["items"], 300_000);
    assert!(l["capacity"].is_null(), "{l:?}");
    // FORMAT.md §5's fields under their names: a stretch level's key count, occupied slots
    // (splits may copy an entry), core and precision sum, whose bound (§5.1) is the level's.
    assert_eq!(l["key_count"], 300_000);
    // Occupied slots: a key each — but for the few counted as copies on an entry equal to
    // theirs (false positives, FORMAT.md §3.5: the level's copies are then records) — and the
    // entries splits copied.
    assert_eq!(l["copies"], "records", "{l:?}");
    assert!(l["item_count"].as_u64().unwrap() >= 299_900, "{l:?}");
    assert_eq!(l["core_bits"], 5);
    assert_eq!(l["region_len"], l["region_bytes"]);
    let precision = l["precision"].as_u64().unwrap() as f64;
    let bound = precision * 2f64.powi(1 - 5 - 60);
    assert_eq!(l["expected_fpr"].as_f64().unwrap(), bound);
    assert!(
        bound > 0.0 && bound <= l["target_fpr"].as_f64().unwrap(),
        "{l:?}"
    );
    let slots = l["num_buckets"].as_u64().unwrap() * l["bucket_size"].as_u64().unwrap();
    assert!(slots as f64 * 0.9 >= 300_000.0, "{l:?}");
    assert!(v["expected_fpr"].as_f64().unwrap() <= 0.001);
    assert_eq!(run(&["verify", &chain], b"").code, 0);

    // From a capacity of 1, growth far past a thousandfold takes a second level once the first
    // has used its share of the false-positive budget (about 120 000 keys at a target of 1 %);
    // the levels' keys add up to the file's.
    let chain = built(
        dir.path(),
        "levels.cuckoo",
        200_000,
        &["--growable", "--initial-capacity", "1"],
    );
    let v: serde_json::Value =
        serde_json::from_str(&run(&["info", &chain, "--json"], b"").stdout).unwrap();
    let levels = v["levels"].as_array().unwrap();
    assert!(levels.len() >= 2, "{levels:?}");
    assert_eq!(
        levels
            .iter()
            .map(|l| l["items"].as_u64().unwrap())
            .sum::<u64>(),
        200_000
    );
    assert!(v["expected_fpr"].as_f64().unwrap() <= 0.01);
    let text = run(&["info", &chain], b"");
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(
        text.stdout
            .contains(&format!("growable, {} levels grown in place", levels.len())),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout.contains("semi-sorted b=4 w="),
        "{}",
        text.stdout
    );
    assert_eq!(run(&["verify", &chain], b"").code, 0);

    let plain = built(
        dir.path(),
        "plain.cuckoo",
        10_000,
        &["--encoding", "plain", "--seed", "5"],
    );
    let v: serde_json::Value =
        serde_json::from_str(&run(&["info", &plain, "--json"], b"").stdout).unwrap();
    let l = &v["levels"][0];
    assert_eq!(l["encoding"], "plain");
    assert_eq!(v["seed"], 5);
    // A classic level: `capacity`, no `key_count`, no core or precision, and FORMAT.md §5's
    // bound for full buckets of f-bit fingerprints.
    assert_eq!(
        (l["core_bits"].as_u64(), l["precision"].as_u64()),
        (Some(0), Some(0))
    );
    assert!(
        l["key_count"].is_null() && l["capacity"].as_u64().is_some(),
        "{l:?}"
    );
    assert_eq!(l["item_count"], 10_000);
    let (f, b) = (
        l["fingerprint_bits"].as_u64().unwrap(),
        l["bucket_size"].as_u64().unwrap(),
    );
    let bound = 1.0 - (1.0 - 1.0 / (2f64.powi(f as i32) - 1.0)).powi(2 * b as i32);
    assert_eq!(l["expected_fpr"].as_f64().unwrap(), bound);
    assert_eq!(v["growable"], false);

    let b = run(
        &["bench", &plain, "--seconds", "0.05", "--keys", "1000"],
        b"",
    );
    assert_eq!(b.code, 0, "{}", b.stderr);
    assert!(b.stdout.contains("single lookups") && b.stdout.contains("batched lookups"));
}

#[test]
fn duplicates_count_once_and_an_empty_input_gives_an_empty_filter() {
    let dir = tempfile::tempdir().unwrap();
    let out = path(dir.path(), "d.cuckoo");
    let r = run(&["build", "-o", &out], b"a\nb\na\na\n");
    assert!(r.stdout.contains("4 keys (2 distinct)"), "{}", r.stdout);
    let out = path(dir.path(), "e.cuckoo");
    let r = run(&["build", "-o", &out], b"");
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(run(&["verify", &out], b"").code, 0);
    assert_eq!(run(&["query", &out, "x"], b"").stdout, "absent\n");
    let _ = PathBuf::from(out);
}

/// A run-index file (FORMAT.md §12) is recognized by `info` and `verify`: its runs, layout and
/// checksum state shown, damage named with the bytes it lies in (exit 1).
#[test]
fn info_and_verify_recognize_a_run_index() {
    use cuckoo_sst::{Config, KeyHash, RunIndex};
    let dir = tempfile::tempdir().unwrap();
    let file = path(dir.path(), "runs.index");
    let mut index = RunIndex::new(Config::new(5000).seed(9)).unwrap();
    for run in [3u64, 4, 8] {
        let keys: Vec<KeyHash> = (run * 1000..run * 1000 + 900)
            .map(|i| KeyHash::of(&i.to_le_bytes()))
            .collect();
        index.add_run(run, &keys).unwrap();
    }
    index.save(&file).unwrap();
    let info = run(&["info", &file], b"");
    assert_eq!(info.code, 0, "{}", info.stderr);
    for says in [
        "run index version 1",
        "run index of 3 runs",
        "8, 4, 3 (newest first",
        "keys          2700",
        "ok (every checksum and slot checked)",
    ] {
        assert!(info.stdout.contains(says), "{says:?} in {}", info.stdout);
    }
    let json = run(&["info", "--json", &file], b"");
    assert_eq!(json.code, 0, "{}", json.stderr);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(v["kind"], "run index");
    assert_eq!(v["runs"], serde_json::json!([8, 4, 3]));
    assert_eq!(v["keys"], 2700);
    assert_eq!(v["stale"], false);
    assert_eq!(v["checksums"], "ok");
    let ok = run(&["verify", &file], b"");
    assert_eq!(ok.code, 0, "{}", ok.stderr);
    assert!(ok.stdout.contains("ok — run index"), "{}", ok.stdout);
    assert!(ok.stdout.contains("for 3 runs"), "{}", ok.stdout);

    let whole = std::fs::read(&file).unwrap();
    // On standard input too.
    let piped = run(&["verify", "-"], &whole);
    assert_eq!(piped.code, 0, "{}", piped.stderr);
    assert!(
        piped.stdout.starts_with("standard input: ok — run index"),
        "{}",
        piped.stdout
    );
    let piped = run(&["info", "-"], &whole);
    assert!(
        piped.stdout.contains("run index of 3 runs"),
        "{}",
        piped.stdout
    );
    fails(&run(&["verify", "-"], &whole[..300]), 1, "truncated");
    for (at, names) in [
        (whole.len() - 100, "level 0 chunk"),
        (130, "run table"),
        (20, "header"),
        (8, "newer than this build reads"),
    ] {
        let mut bytes = whole.clone();
        bytes[at] ^= 0x10;
        let damaged = path(dir.path(), "damaged.index");
        std::fs::write(&damaged, &bytes).unwrap();
        let r = run(&["verify", &damaged], b"");
        fails(&r, 1, names);
        let range = r.stderr.rsplit("(bytes ").next().unwrap();
        let (a, b) = range
            .trim_end()
            .trim_end_matches(')')
            .split_once("..")
            .unwrap();
        let (a, b): (usize, usize) = (a.parse().unwrap(), b.parse().unwrap());
        assert!((a..b).contains(&at), "{at} in {a}..{b}: {}", r.stderr);
        let info = run(&["info", &damaged], b"");
        assert_eq!(info.code, 1, "{}", info.stderr);
        if names == "level 0 chunk" {
            assert!(info.stdout.contains("DAMAGED"), "{}", info.stdout);
        }
    }
}
