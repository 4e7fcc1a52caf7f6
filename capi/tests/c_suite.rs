//! The C test suite, `tests/c/suite.c`, run against the static library from a C compiler.
//!
//! 1. Writes fixtures with the Rust crate into a temporary directory: single filters of several
//!    layouts and sizes (`FilterBuilder`), a growable filter of three levels or more
//!    (`ScalableCuckooFilter`), Rust's answers for 100 000 absent keys of each (20 000 in the
//!    unoptimized `dev` profile), a file holding every single filter among other bytes, and the
//!    manifest `fixtures.txt` that describes them (its format is documented at the top of
//!    suite.c).
//! 2. Compiles suite.c with the system C compiler (`cc`, or `$CC`) as C99 with every warning an
//!    error, with AddressSanitizer and UBSan where the compiler has them, and links it with
//!    `libcuckoo_sst_c.a` of this build ([`static_library`]).
//! 3. Runs it on the directory, leak detection on: it checks every function of the header
//!    against the fixtures and Rust's answers, and writes `c_built.cksst` and
//!    `c_growable.cksst`.
//! 4. Checks from Rust what C wrote: the built filter is byte for byte what `FilterBuilder`
//!    makes of the same keys, and the growable filter holds every key C inserted and kept.
//!
//! Without a C compiler the test fails, saying so: it is not skipped.

#![cfg(unix)]

use std::ffi::OsString;
use std::fmt::Write as _;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

use cuckoo_sst::{
    Config, Encoding, FilterBuilder, FilterRef, KeyHash, MappedFilter, MappedRunIndex, RunIndex,
    ScalableCuckooFilter,
};

/// Absent keys asked of every fixture (Rust's answers go in its `.absent` file): 100 000, or
/// 20 000 when the library is unoptimized ([`unoptimized`]).
fn absent_keys() -> usize {
    if unoptimized() { 20_000 } else { 100_000 }
}

/// Whether this is the `dev` profile (`target/debug/`), whose unoptimized library answers the
/// suite's 39 million lookups in two minutes rather than six seconds: it then asks fewer absent
/// keys (every other fixture is the same).
fn unoptimized() -> bool {
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile = exe
        .parent()
        .and_then(Path::parent)
        .and_then(Path::file_name);
    profile.is_some_and(|p| p == "debug")
}
/// Keys inserted into the growable filter before each new level is forced, and after the last.
const GROWABLE_STAGE_KEYS: usize = 5_000;
/// What suite.c does to the growable filter: inserts, `insert_unique`s, every how many-th
/// inserted key it removes (the manifest's `grow` line).
const C_INSERTS: usize = 20_000;
const C_UNIQUE: usize = 1_000;
const C_REMOVE_EVERY: usize = 7;
/// What suite.c does to the run index (section 7, the manifest's `runindex` line): the keys of
/// a flushed run, the keys of the first run the second holds again, every how many-th key the
/// compaction drops.
const RI_KEYS: usize = 1_000;
const RI_UPDATES: usize = 100;
const RI_EVERY: usize = 10;

/// Key `i` of a kind, 16 bytes: present keys are `p…`, absent `a…`, the C suite's own `c…`.
fn key(prefix: char, i: usize) -> [u8; 16] {
    let text = format!("{prefix}{i:015}");
    text.as_bytes().try_into().expect("16 bytes")
}

/// The configuration of fixture 0, which the C suite's builder also uses (`cksst_config_init`
/// with capacity 0: the defaults, 1 %).
fn builder_config() -> Config {
    Config::new(0).false_positive_rate(0.01)
}

/// The single filters: what, how, how many keys.
fn single_fixtures() -> Vec<(&'static str, Config, usize)> {
    vec![
        ("the default layout at 1 %", builder_config(), 20_000),
        (
            "plain slots, buckets of 8",
            Config::new(0).encoding(Encoding::Plain).bucket_size(8),
            30_000,
        ),
        (
            "packed, buckets of 2, at 0.1 %",
            Config::new(0)
                .encoding(Encoding::Packed)
                .bucket_size(2)
                .false_positive_rate(0.001),
            10_000,
        ),
        ("one key", Config::new(0), 1),
        ("no key", Config::new(0), 0),
        ("200 000 keys", Config::new(0), 200_000),
    ]
}

/// What Rust checks after the C suite ran.
struct Expected {
    /// Fixture 0's key count (the C builder builds from its keys).
    builder_keys: usize,
    /// The growable fixture: its present keys, crafted key hashes and levels.
    growable_keys: usize,
    crafted: Vec<KeyHash>,
    growable_levels: usize,
}

/// FORMAT.md §2: the seeded hash is `fmix64(H XOR S)`.
fn fmix64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    x ^= x >> 33;
    x = x.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    x ^= x >> 33;
    x
}

/// The inverse of an odd number modulo 2^64 (Newton's iteration).
fn inverse(a: u64) -> u64 {
    let mut x = a; // right in the low 3 bits
    for _ in 0..5 {
        x = x.wrapping_mul(2u64.wrapping_sub(a.wrapping_mul(x)));
    }
    assert_eq!(a.wrapping_mul(x), 1);
    x
}

/// The inverse of [`fmix64`]: each of its steps is a bijection, undone in reverse order.
fn fmix64_inverse(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(inverse(0xC4CE_B9FE_1A85_EC53));
    x ^= x >> 33;
    x = x.wrapping_mul(inverse(0xFF51_AFD7_ED55_8CCD));
    x ^= x >> 33;
    x
}

/// Makes `chain` start a new level, as `tests/common/crafted.rs` of the main crate does: a
/// growable filter grows its newest level in place about a thousandfold before it starts
/// another (millions of keys), and a key it answers for is counted as a copy (FORMAT.md
/// §3.5), but `2b + 1` distinct key hashes of one bucket pair and core that answer for none of
/// each other fill their two buckets and the last goes to a new level. These differ only in
/// the last five continuation bits (FORMAT.md §2.2), mapped back to key hashes through the
/// inverse of the seed mix; a class that splits tell apart first is followed by another.
/// Returns the hashes inserted.
fn start_new_level(chain: &mut ScalableCuckooFilter, round: u64) -> Vec<KeyHash> {
    let levels = chain.levels();
    let newest = chain.level(levels - 1).expect("the newest level");
    // K = ⌊log2 m⌋ and L0 = w − 1 − c (c = 5): the last five continuation bits of both address
    // strings are bits K + L0 − 5 .. K + L0 of the seeded hash (FORMAT.md §2.2).
    let k = 63 - (newest.num_buckets() as u64).leading_zeros();
    let shift = k + newest.fingerprint_bits() - 1 - 5 - 5;
    let seed = chain.seed();
    let mut inserted = Vec::new();
    for class in 0..4u64 {
        let base = fmix64(
            KeyHash::of(format!("c_suite crafted {round} {class}").as_bytes()).to_u64() ^ seed,
        ) & !(0x1F << shift);
        for tail in 0..32u64 {
            let seeded = base | tail << shift;
            let h = KeyHash::from_u64(fmix64_inverse(seeded) ^ seed);
            assert_eq!(fmix64(h.to_u64() ^ seed), seeded);
            if chain.contains_hash(h) {
                continue; // a key the chain answers for would be counted as a copy
            }
            chain
                .insert_hash(h)
                .unwrap_or_else(|e| panic!("crafted hash {tail}: {e}"));
            inserted.push(h);
            if chain.levels() > levels {
                return inserted;
            }
        }
    }
    panic!(
        "{} crafted hashes did not start a new level",
        inserted.len()
    );
}

/// Writes the fixtures and their manifest into `dir`.
fn write_fixtures(dir: &Path, absent: usize) -> Expected {
    let mut manifest = String::new();
    writeln!(
        manifest,
        "# Written by capi/tests/c_suite.rs for capi/tests/c/suite.c."
    )
    .unwrap();
    writeln!(manifest, "version {}", env!("CARGO_PKG_VERSION")).unwrap();

    // Single filters, each with Rust's answers for the absent keys.
    let mut files = Vec::new();
    for (k, (what, config, keys)) in single_fixtures().into_iter().enumerate() {
        let mut b = FilterBuilder::new(config);
        for i in 0..keys {
            b.add_key(&key('p', i));
        }
        let bytes = b.finish().expect("build a fixture").to_bytes();
        let view = FilterRef::from_bytes(&bytes).expect("a fixture reads back");
        assert_eq!(view.len(), keys, "{what}");
        let answers: Vec<u8> = (0..absent)
            .map(|i| u8::from(view.contains(&key('a', i))))
            .collect();
        let name = format!("single_{k}.cksst");
        fs::write(dir.join(&name), &bytes).unwrap();
        fs::write(dir.join(format!("{name}.absent")), &answers).unwrap();
        writeln!(
            manifest,
            "# {what}: {} bytes, buckets of {}, {}-bit {:?} slots, {} absent keys answer 1",
            bytes.len(),
            view.bucket_size(),
            view.fingerprint_bits(),
            view.encoding(),
            answers.iter().filter(|&&a| a == 1).count()
        )
        .unwrap();
        writeln!(manifest, "single {name} {keys} {absent}").unwrap();
        files.push(bytes);
    }
    assert_eq!(
        FilterRef::from_bytes(&files[1]).unwrap().encoding(),
        Encoding::Plain
    );
    assert_eq!(FilterRef::from_bytes(&files[1]).unwrap().bucket_size(), 8);
    assert_eq!(FilterRef::from_bytes(&files[2]).unwrap().bucket_size(), 2);

    // The same filters inside one file, among other bytes, at odd offsets (file lengths are
    // multiples of 64, the junk between them of even length).
    let junk =
        |n: usize| -> Vec<u8> { b"-sstable data-".iter().copied().cycle().take(n).collect() };
    let mut embedded = junk(4099);
    for (k, bytes) in files.iter().enumerate() {
        writeln!(
            manifest,
            "embedded embedded.bin {k} {} {}",
            embedded.len(),
            bytes.len()
        )
        .unwrap();
        embedded.extend_from_slice(bytes);
        embedded.extend(junk(334 + 8 * k));
    }
    assert!(files.iter().all(|f| f.len() % 64 == 0));
    fs::write(dir.join("embedded.bin"), &embedded).unwrap();

    // A growable filter of three levels or more.
    let mut g = ScalableCuckooFilter::new(Config::new(1_000)).unwrap();
    let mut keys = 0;
    let mut crafted = Vec::new();
    for stage in 0..3u64 {
        for _ in 0..GROWABLE_STAGE_KEYS {
            g.insert(&key('p', keys)).unwrap();
            keys += 1;
        }
        if stage < 2 {
            crafted.extend(start_new_level(&mut g, stage));
        }
    }
    assert!(g.levels() >= 3, "{} levels", g.levels());
    assert_eq!(g.len(), keys + crafted.len());
    let answers: Vec<u8> = (0..absent)
        .map(|i| u8::from(g.contains(&key('a', i))))
        .collect();
    g.save(dir.join("growable.cksst")).unwrap();
    fs::write(dir.join("growable.cksst.absent"), &answers).unwrap();
    writeln!(
        manifest,
        "# A growable filter: {} levels, {} bytes, {} absent keys answer 1",
        g.levels(),
        g.size_in_bytes(),
        answers.iter().filter(|&&a| a == 1).count()
    )
    .unwrap();
    writeln!(
        manifest,
        "growable growable.cksst {keys} {absent} {} {}",
        g.levels(),
        g.len()
    )
    .unwrap();
    for h in &crafted {
        writeln!(manifest, "hash {:016x}", h.to_u64()).unwrap();
    }
    writeln!(manifest, "grow {C_INSERTS} {C_UNIQUE} {C_REMOVE_EVERY}").unwrap();
    writeln!(manifest, "runindex {RI_KEYS} {RI_UPDATES} {RI_EVERY}").unwrap();

    fs::write(dir.join("fixtures.txt"), manifest).unwrap();
    Expected {
        builder_keys: single_fixtures()[0].2,
        growable_keys: keys,
        crafted,
        growable_levels: g.levels(),
    }
}

/// `libcuckoo_sst_c.a` of this build (or `$CKSST_STATICLIB`).
///
/// `cargo test` compiles the library once, with all three of its crate types (`cdylib`,
/// `staticlib`, `rlib`) in one rustc invocation — cargo does not leave out the types a test
/// does not link — into `target/<profile>/deps/`, the directory of this test's binary, and
/// links this test with the rlib of that invocation. (Checked with `cargo test
/// --message-format=json`: the library's artifact lists `deps/libcuckoo_sst_c.so`, `.a` and
/// `.rlib`, and cargo rebuilds them together whenever the library or the crate it wraps
/// changes.) So the archive next to the test binary is always there, built by the same profile
/// from the same sources as the test. Cargo also copies ("uplifts") it to `target/<profile>/`
/// when the library is a root of the build (`cargo build -p cuckoo-sst-c`), the second place
/// looked in.
fn static_library() -> PathBuf {
    if let Some(path) = std::env::var_os("CKSST_STATICLIB") {
        return path.into();
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let deps = exe.parent().expect("target/<profile>/deps");
    let mut tried = Vec::new();
    for dir in [Some(deps), deps.parent()].into_iter().flatten() {
        let path = dir.join("libcuckoo_sst_c.a");
        if path.is_file() {
            return path;
        }
        tried.push(path);
    }
    panic!(
        "libcuckoo_sst_c.a is not where `cargo test` puts it (tried {tried:?}); build it with \
         `cargo build -p cuckoo-sst-c` (same profile) or name it in CKSST_STATICLIB"
    );
}

/// What a program linked with the static library needs besides it: what `cargo rustc -p
/// cuckoo-sst-c --lib --crate-type staticlib -- --print native-static-libs` reports, on
/// x86_64-unknown-linux-gnu with rustc 1.95: `-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc`
/// (unwinding, threads, time, `dlsym` for weak symbols, libm; the same as for a library of std
/// alone). Hardcoded rather than asked of rustc, which would cost a compilation.
#[cfg(target_os = "linux")]
const NATIVE_LIBS: &[&str] = &[
    "-lgcc_s",
    "-lutil",
    "-lrt",
    "-lpthread",
    "-lm",
    "-ldl",
    "-lc",
];
/// macOS (not checked here): what rustc reports for Apple targets.
#[cfg(target_os = "macos")]
const NATIVE_LIBS: &[&str] = &["-liconv", "-lSystem", "-lc", "-lm"];
/// Other Unix systems (not checked here): the usual set.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
const NATIVE_LIBS: &[&str] = &["-lpthread", "-lm", "-lc"];

/// The C standard and warnings suite.c must compile cleanly with.
const C_FLAGS: &[&str] = &["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"];
/// AddressSanitizer (with leak detection) and UBSan, every finding fatal.
const SANITIZE: &[&str] = &[
    "-fsanitize=address,undefined",
    "-fno-omit-frame-pointer",
    "-fno-sanitize-recover=all",
];

/// The C compiler: `$CC` (a program and its arguments), else `cc`.
fn c_compiler() -> (OsString, Vec<OsString>) {
    let cc = std::env::var("CC")
        .ok()
        .filter(|cc| !cc.trim().is_empty())
        .unwrap_or_else(|| "cc".to_string());
    let mut words = cc.split_whitespace().map(OsString::from);
    let program = words.next().expect("a compiler");
    (program, words.collect())
}

/// Runs the C compiler with `args`; a missing compiler fails the test.
fn run_cc(args: &[OsString]) -> Output {
    let (program, pre) = c_compiler();
    Command::new(&program)
        .args(&pre)
        .args(args)
        .output()
        .unwrap_or_else(|e| {
            if e.kind() == ErrorKind::NotFound {
                panic!(
                    "no C compiler: `{}` was not found. The C suite needs one: install gcc or \
                     clang, or name one in CC",
                    program.to_string_lossy()
                );
            }
            panic!(
                "cannot run the C compiler `{}`: {e}",
                program.to_string_lossy()
            )
        })
}

fn text(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

/// Whether programs built with [`SANITIZE`] compile, link and run here: a probe that allocates
/// and frees, run with leak detection on. `Err` says why not.
fn sanitizers_work(dir: &Path) -> Result<(), String> {
    let source = dir.join("probe.c");
    let exe = dir.join("probe");
    fs::write(
        &source,
        "#include <stdlib.h>\nint main(void) { char *p = malloc(16); p[0] = 1; \
         free(p); return 0; }\n",
    )
    .unwrap();
    let mut args: Vec<OsString> = SANITIZE.iter().map(OsString::from).collect();
    args.extend([source.into(), "-o".into(), exe.clone().into()]);
    let built = run_cc(&args);
    if !built.status.success() {
        return Err(format!(
            "the probe does not build: {}",
            text(&built.stderr).trim()
        ));
    }
    let ran = Command::new(&exe)
        .env("ASAN_OPTIONS", "detect_leaks=1")
        .output()
        .map_err(|e| format!("the probe does not run: {e}"))?;
    if !ran.status.success() {
        return Err(format!(
            "the probe fails: {} {}",
            ran.status,
            text(&ran.stderr).trim()
        ));
    }
    Ok(())
}

/// A temporary directory kept (and named) if the test fails, for a look at what C saw.
struct Scratch(tempfile::TempDir);

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.disable_cleanup(true);
            eprintln!("kept the fixtures in {}", self.0.path().display());
        }
    }
}

#[test]
fn the_c_suite_passes_under_the_sanitizers() {
    let start = Instant::now();
    let scratch = Scratch(
        tempfile::Builder::new()
            .prefix("cksst-c-suite")
            .tempdir()
            .unwrap(),
    );
    let dir = scratch.0.path();

    let expected = write_fixtures(dir, absent_keys());
    let fixtures_took = start.elapsed();

    // Compile.
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let library = static_library();
    let sanitized = sanitizers_work(dir);
    let exe = dir.join("suite");
    let mut args: Vec<OsString> = C_FLAGS.iter().map(OsString::from).collect();
    match &sanitized {
        Ok(()) => {
            args.extend(SANITIZE.iter().map(OsString::from));
            args.extend(["-O1".into(), "-g".into()]);
        }
        Err(_) => args.push("-O2".into()),
    }
    args.push("-I".into());
    args.push(crate_dir.join("include").into());
    args.push(crate_dir.join("tests/c/suite.c").into());
    args.push("-o".into());
    args.push(exe.clone().into());
    args.push(library.clone().into());
    args.extend(NATIVE_LIBS.iter().map(OsString::from));
    let compiled = run_cc(&args);
    assert!(
        compiled.status.success(),
        "suite.c does not compile:\n{}\n{}",
        text(&compiled.stdout),
        text(&compiled.stderr)
    );
    match &sanitized {
        Ok(()) => println!(
            "suite.c compiled with AddressSanitizer (leak detection on) and UBSan, linked \
             with {}",
            library.display()
        ),
        Err(why) => println!(
            "suite.c compiled WITHOUT sanitizers ({why}), linked with {}",
            library.display()
        ),
    }
    let compile_took = start.elapsed() - fixtures_took;

    // Run.
    let ran = Command::new(&exe)
        .arg(dir)
        .env("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=1")
        .env("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
        .output()
        .expect("run the C suite");
    print!("{}", text(&ran.stdout));
    eprint!("{}", text(&ran.stderr));
    assert!(
        ran.status.success(),
        "the C suite failed ({}); its output is above",
        ran.status
    );
    assert!(
        text(&ran.stdout).contains("checks passed"),
        "the C suite did not finish"
    );
    let run_took = start.elapsed() - fixtures_took - compile_took;

    // What C built: byte for byte what Rust builds from the same keys and configuration.
    let built = fs::read(dir.join("c_built.cksst")).expect("the C suite wrote c_built.cksst");
    let mut b = FilterBuilder::new(builder_config());
    for i in 0..expected.builder_keys {
        b.add_key(&key('p', i));
    }
    assert!(
        built == b.finish().unwrap().to_bytes(),
        "c_built.cksst differs from what FilterBuilder builds"
    );

    // What C grew: every key it was given and C inserted and did not remove.
    let path = dir.join("c_growable.cksst");
    let m = MappedFilter::open(&path).expect("c_growable.cksst maps and checks");
    assert!(m.levels() >= expected.growable_levels);
    assert!((0..expected.growable_keys).all(|i| m.contains(&key('p', i))));
    assert!(expected.crafted.iter().all(|&h| m.contains_hash(h)));
    let kept: Vec<usize> = (0..C_INSERTS + C_UNIQUE)
        .filter(|&i| !(i < C_INSERTS && i % C_REMOVE_EVERY == 0))
        .collect();
    for &i in &kept {
        assert!(m.contains(&key('c', i)), "key c {i} is missing");
    }
    let g = ScalableCuckooFilter::from_bytes(&fs::read(&path).unwrap()).unwrap();
    assert_eq!(g.len(), m.len());
    // The same operations in Rust, on the fixture C read: the same chain, byte for byte.
    let mut replay =
        ScalableCuckooFilter::from_bytes(&fs::read(dir.join("growable.cksst")).unwrap()).unwrap();
    for i in 0..C_INSERTS {
        replay.insert(&key('c', i)).unwrap();
    }
    for i in C_INSERTS..C_INSERTS + C_UNIQUE {
        replay.insert_unique(&key('c', i)).unwrap();
    }
    for i in (0..C_INSERTS).filter(|i| i % C_REMOVE_EVERY == 0) {
        replay.remove(&key('c', i));
    }
    assert!(
        g == replay,
        "c_growable.cksst differs from the same operations in Rust"
    );
    assert_eq!(g.to_bytes(), replay.to_bytes());
    check_c_run_index(dir);
    let all = start.elapsed();
    println!(
        "fixtures {fixtures_took:.2?}, compile {compile_took:.2?}, C suite {run_took:.2?}, \
         checks from Rust {:.2?}; {all:.2?} in all",
        all - fixtures_took - compile_took - run_took
    );
}

/// What C made of the run index (suite.c section 7): the same operations in Rust give the same
/// bytes, and the mapped file answers every key of its runs with its run, newest first.
fn check_c_run_index(dir: &Path) {
    let (k, u, e) = (RI_KEYS, RI_UPDATES, RI_EVERY);
    let h = |i: usize| KeyHash::of(&key('c', i));
    let hashes = |r: std::ops::Range<usize>| r.map(h).collect::<Vec<_>>();
    // `cksst_config_init(&cfg, 4 * K)`: the defaults for that capacity.
    let mut x = RunIndex::new(Config::new(4 * k)).unwrap();
    x.add_run(10, &hashes(0..k)).unwrap();
    let mut second = hashes(k..2 * k);
    second.extend(hashes(0..u));
    x.add_run(11, &second).unwrap();
    x.add_run(12, &hashes(2 * k..2 * k + k / 2)).unwrap();
    let kept: Vec<KeyHash> = (0..2 * k).filter(|i| i % e != 0).map(h).collect();
    x.compact(&[11, 10], 13, &kept).unwrap();
    x.compact(&[12], 14, &hashes(2 * k..2 * k + k / 2)).unwrap();
    assert!(x.drop_run(14));
    x.add_run(15, &hashes(3 * k..3 * k + k / 2)).unwrap();
    let path = dir.join("c_run_index.cksst");
    let file = fs::read(&path).expect("the C suite wrote c_run_index.cksst");
    assert!(
        file == x.to_bytes(),
        "c_run_index.cksst differs from the same operations in Rust"
    );
    let m = MappedRunIndex::open(&path).expect("c_run_index.cksst maps");
    assert!(m.describes(&[15, 13]) && !m.is_stale());
    assert_eq!(m.runs_digest(), RunIndex::runs_digest_of(&[15, 13]));
    m.verify().expect("c_run_index.cksst is sound");
    for i in (0..2 * k).filter(|i| i % e != 0) {
        let got: Vec<u64> = m.runs_for(&key('c', i)).collect();
        assert!(
            got.first() == Some(&13) || got == [15, 13],
            "key c {i}: {got:?}"
        );
    }
    for i in 3 * k..3 * k + k / 2 {
        let got: Vec<u64> = m.runs_for(&key('c', i)).collect();
        assert_eq!(got.first(), Some(&15), "key c {i}: {got:?}");
    }
}

/// The README's C example ("From C") compiles as C99 with every warning an error, runs, and
/// prints what the README says it prints.
#[test]
fn the_readme_example_builds_and_prints_what_the_readme_says() {
    let readme = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"))
        .expect("README.md");
    let section = &readme[readme.find("## From C").expect("a From C section")..];
    let start = section.find("```c\n").expect("a C example") + "```c\n".len();
    let example = &section[start..start + section[start..].find("```").unwrap()];
    let (_, after) = section.split_at(start);
    let prints = after
        .split("it prints `")
        .nth(1)
        .and_then(|s| s.split('`').next())
        .expect("the README says what the example prints");
    assert!(
        example.lines().count() <= 25,
        "the example has grown past 25 lines"
    );

    let dir = Scratch(tempfile::tempdir().unwrap());
    let (source, exe) = (dir.0.path().join("hello.c"), dir.0.path().join("hello"));
    fs::write(&source, example).unwrap();
    let mut args: Vec<OsString> = C_FLAGS.iter().map(OsString::from).collect();
    args.extend([
        "-I".into(),
        Path::new(env!("CARGO_MANIFEST_DIR")).join("include").into(),
        source.into(),
        static_library().into(),
    ]);
    args.extend(NATIVE_LIBS.iter().map(OsString::from));
    args.extend(["-o".into(), exe.clone().into()]);
    let built = run_cc(&args);
    assert!(built.status.success(), "{}", text(&built.stderr));
    let ran = Command::new(&exe).output().unwrap();
    assert!(ran.status.success(), "{}", text(&ran.stderr));
    assert_eq!(text(&ran.stdout).trim(), prints);
}
