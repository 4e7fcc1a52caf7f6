//! Kill a process with SIGKILL at random moments while it saves a filter in a loop: the file
//! at the path always opens, verified, and holds one of the two filters whole.
#![cfg(unix)]

use cuckoo_sst::{Config, CuckooFilter, MappedFilter};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CHILD_ENV: &str = "CUCKOO_SST_CRASH_CHILD_DIR";
const TEST_NAME: &str = "sigkill_during_save_leaves_the_old_or_the_new_file";
const ROUNDS: u32 = 120;
/// What the child prints once it starts saving (the test harness may print before it on the line).
const READY: &str = "child: saving";

fn filter(seed: u64) -> CuckooFilter {
    let mut f = CuckooFilter::new(Config::new(2_000_000).seed(seed)).unwrap();
    for i in 0..1_000_000u64 {
        f.insert(&(i ^ (seed << 40)).to_le_bytes()).unwrap();
    }
    f
}

/// The child: load the two filters, say so on stdout, then save them alternately, forever.
fn child(dir: &Path) -> ! {
    let a = CuckooFilter::from_bytes(&std::fs::read(dir.join("a.bin")).unwrap()).unwrap();
    let b = CuckooFilter::from_bytes(&std::fs::read(dir.join("b.bin")).unwrap()).unwrap();
    let target = dir.join("filter.cksst");
    let mut out = std::io::stdout();
    writeln!(out, "{READY}").unwrap();
    out.flush().unwrap();
    loop {
        b.save(&target).unwrap();
        a.save(&target).unwrap();
    }
}

/// The kill lands at a random moment within the first few saves after the child is ready, so
/// the timing adapts to the build (a debug build saves several times slower than a release
/// one): the delay is drawn from `0..3 × (one save, as timed here)`.
#[test]
fn sigkill_during_save_leaves_the_old_or_the_new_file() {
    if let Some(dir) = std::env::var_os(CHILD_ENV) {
        child(Path::new(&dir));
    }
    let dir = tempfile::tempdir().unwrap();
    let (fa, fb) = (filter(1), filter(2));
    let (a, b) = (fa.to_bytes(), fb.to_bytes());
    std::fs::write(dir.path().join("a.bin"), &a).unwrap();
    std::fs::write(dir.path().join("b.bin"), &b).unwrap();
    let target = dir.path().join("filter.cksst");
    let t = Instant::now();
    fa.save(&target).unwrap();
    let save = t.elapsed().max(Duration::from_millis(1));

    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let (mut saw_a, mut saw_b, mut mid_save) = (0, 0, 0);
    for round in 0..ROUNDS {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", TEST_NAME, "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Wait until the child has loaded both filters and is about to save: the line it
        // prints (the test harness prints its own lines first).
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        assert!(
            lines.any(|l| l.unwrap().ends_with(READY)),
            "round {round}: the child never started saving"
        );
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        std::thread::sleep(save.mul_f64(3.0 * (rng % 1000) as f64 / 1000.0));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();

        let m = MappedFilter::open(&target)
            .unwrap_or_else(|e| panic!("round {round}: the file does not open: {e}"));
        let bytes = m.as_bytes();
        if bytes == &a[..] {
            saw_a += 1;
        } else if bytes == &b[..] {
            saw_b += 1;
        } else {
            panic!("round {round}: the file is neither filter");
        }
        // A save killed before its rename leaves its temporary file behind: count those kills
        // (they are the ones that test atomicity) and clean up between rounds.
        for e in std::fs::read_dir(dir.path()).unwrap() {
            let e = e.unwrap();
            if e.file_name().to_string_lossy().ends_with(".tmp") {
                mid_save += 1;
                std::fs::remove_file(e.path()).unwrap();
            }
        }
    }
    println!(
        "{ROUNDS} kills (one save takes {save:?}), {mid_save} in the middle of a save: old/new \
         seen {saw_a}/{saw_b} times"
    );
    // Both outcomes happen, and many kills landed while a temporary file was being written.
    assert!(saw_a > 0 && saw_b > 0, "a: {saw_a}, b: {saw_b}");
    assert!(
        mid_save >= ROUNDS / 4,
        "only {mid_save} kills landed during a save"
    );
}
