//! The module against what a Redis user has today, in one run (issue 42, item 4):
//!
//! - **memory**: 1 M 16-byte keys in a Redis set, in CF and BF keys (growable and fixed):
//!   `MEMORY USAGE` against the key's file size and against the set, and the measured
//!   false-positive rate (1 M absent keys);
//! - **speed**: `CF.EXISTS`/`BF.EXISTS` against `SISMEMBER` on the same keys (half present,
//!   half absent), and `CF.ADD`/`BF.ADD` against `SADD` of new keys, pipelined (64 commands a
//!   write) so that the server's time, not the network's, is measured; medians of interleaved
//!   rounds, as ratios to the set command of the same round;
//! - **growth**: a key reserved for 1 000 items given 1 M adds, 1 % of them 10 hot items: its
//!   levels, size and measured rate, and RedisBloom's documented sub-filter chain for the same
//!   stream (sizes and rates from its docs' formulas and its `sb.c`; not measured: RedisBloom is
//!   not built here).
//!
//! ```sh
//! cargo run --release -p cuckoo-sst-redis --example in_redis            # everything
//! cargo run --release -p cuckoo-sst-redis --example in_redis -- speed   # one part
//! cargo run --release -p cuckoo-sst-redis --example in_redis -- speed 9 # 9 rounds
//! ```
//!
//! It starts its own `redis-server` (Debian's; `scripts/install-redis`) with the module on a
//! free port in a temporary directory. Time it on an otherwise idle machine.

#[path = "../tests/server/mod.rs"]
mod server;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Instant;

use server::{Client, R, Server};

/// Keys a test set holds.
const N: usize = 1_000_000;
/// Commands a pipelined write carries.
const PIPELINE: usize = 64;

/// The `i`-th key: 16 bytes.
fn key(i: usize) -> String {
    format!("key:{i:012}")
}

/// The `i`-th absent key (never inserted): 16 bytes.
fn absent(i: usize) -> String {
    format!("nop:{i:012}")
}

/// RESP for one command.
fn encode(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// A raw connection for pipelined single-line replies (integers and errors).
struct Pipe {
    s: TcpStream,
    buf: Vec<u8>,
}

impl Pipe {
    fn new(port: u16) -> Pipe {
        let s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        s.set_nodelay(true).expect("nodelay");
        Pipe {
            s,
            buf: vec![0; 1 << 16],
        }
    }

    /// Sends each batch and reads its replies (one line each); returns the replies' first
    /// bytes (`:1`, `:0`, `-…`) counted as (ones, zeros, errors).
    fn run(&mut self, batches: &[(Vec<u8>, usize)]) -> (usize, usize, usize) {
        let (mut ones, mut zeros, mut errors) = (0, 0, 0);
        for (bytes, n) in batches {
            self.s.write_all(bytes).expect("write");
            let mut lines = 0;
            let mut at_line_start = true;
            while lines < *n {
                let got = self.s.read(&mut self.buf).expect("read");
                assert!(got > 0, "the server closed the connection");
                for w in 0..got {
                    let b = self.buf[w];
                    if at_line_start {
                        match b {
                            b'-' => errors += 1,
                            b':' => {
                                // The next byte tells 1 from 0 (single digits here).
                                let next = if w + 1 < got { self.buf[w + 1] } else { b'1' };
                                if next == b'0' { zeros += 1 } else { ones += 1 }
                            }
                            _ => {}
                        }
                    }
                    at_line_start = b == b'\n';
                    if b == b'\n' {
                        lines += 1;
                    }
                }
            }
        }
        (ones, zeros, errors)
    }
}

/// Batches of `PIPELINE` commands `cmd key item(i)` for `i` in `items`.
fn batches(cmd: &str, key: &str, items: &[String]) -> Vec<(Vec<u8>, usize)> {
    items
        .chunks(PIPELINE)
        .map(|chunk| {
            let mut out = Vec::new();
            for item in chunk {
                encode(&mut out, &[cmd.as_bytes(), key.as_bytes(), item.as_bytes()]);
            }
            (out, chunk.len())
        })
        .collect()
}

/// Loads `items` into `key` with a multi-item command (`SADD`, `CF.INSERT … ITEMS`, `BF.MADD`),
/// 1 000 a call.
fn load(c: &mut Client, prefix: &[&str], items: &[String]) {
    for chunk in items.chunks(1000) {
        let mut args: Vec<&str> = prefix.to_vec();
        args.extend(chunk.iter().map(String::as_str));
        if let R::Err(e) = c.call(&args) {
            panic!("{prefix:?}: {e}");
        }
    }
}

/// The share of `probes` a filter key answers "maybe" for (`*.MEXISTS`, 1 000 a call).
fn maybe_rate(c: &mut Client, mexists: &str, key: &str, probes: &[String]) -> f64 {
    let mut yes = 0usize;
    for chunk in probes.chunks(1000) {
        let mut args = vec![mexists, key];
        args.extend(chunk.iter().map(String::as_str));
        yes += c.call(&args).ints().iter().filter(|&&r| r == 1).count();
    }
    yes as f64 / probes.len() as f64
}

/// The bytes of a filter key's FORMAT.md file: its dump header's length field.
fn file_bytes(c: &mut Client, scandump: &str, key: &str) -> u64 {
    let R::Array(first) = c.call(&[scandump, key, "0"]) else {
        panic!("{scandump}")
    };
    let h = first[1].bytes();
    u64::from_le_bytes(h[16..24].try_into().expect("8 bytes"))
}

fn memory_usage(c: &mut Client, key: &str) -> i64 {
    c.call(&["MEMORY", "USAGE", key, "SAMPLES", "0"]).int()
}

fn info_int(c: &mut Client, cmd: &str, key: &str, field: &str) -> i64 {
    c.call(&[cmd, key]).field(field).int()
}

fn memory(s: &Server) {
    let mut c = s.client();
    let keys: Vec<String> = (0..N).map(key).collect();
    let probes: Vec<String> = (0..N).map(absent).collect();
    c.q("FLUSHALL");
    let t = Instant::now();
    load(&mut c, &["SADD", "set"], &keys);
    for (reserve, cmd) in [
        ("CF.RESERVE cf 1000000", "CF.INSERT cf ITEMS"),
        (
            "CF.RESERVE cf-fixed 1000000 EXPANSION 0",
            "CF.INSERT cf-fixed ITEMS",
        ),
        ("BF.RESERVE bf 0.01 1000000", "BF.MADD bf"),
        (
            "BF.RESERVE bf-fixed 0.01 1000000 NONSCALING",
            "BF.MADD bf-fixed",
        ),
    ] {
        assert_eq!(c.q(reserve), R::Simple("OK".into()), "{reserve}");
        let prefix: Vec<&str> = cmd.split(' ').collect();
        load(&mut c, &prefix, &keys);
    }
    eprintln!("loaded in {:.1} s", t.elapsed().as_secs_f64());
    let set = memory_usage(&mut c, "set");
    println!("## Memory: {N} keys of 16 bytes\n");
    println!(
        "| key | MEMORY USAGE, bytes | file bytes | usage / file | set / usage | levels | rate bound | measured rate (1 M absent keys) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    println!("| Redis set (`SADD`) | {set} | | | 1 | | 0 | 0 |");
    for (key, info, scandump, mexists, label) in [
        (
            "cf",
            "CF.INFO",
            "CF.SCANDUMP",
            "CF.MEXISTS",
            "`CF.RESERVE cf 1000000` (growable)",
        ),
        (
            "cf-fixed",
            "CF.INFO",
            "CF.SCANDUMP",
            "CF.MEXISTS",
            "`CF.RESERVE … EXPANSION 0` (fixed)",
        ),
        (
            "bf",
            "BF.INFO",
            "BF.SCANDUMP",
            "BF.MEXISTS",
            "`BF.RESERVE bf 0.01 1000000` (growable)",
        ),
        (
            "bf-fixed",
            "BF.INFO",
            "BF.SCANDUMP",
            "BF.MEXISTS",
            "`BF.RESERVE … NONSCALING` (fixed)",
        ),
    ] {
        let usage = memory_usage(&mut c, key);
        let file = file_bytes(&mut c, scandump, key);
        let levels = info_int(&mut c, info, key, "Number of filters");
        let bound = match c.call(&[info, key]).field("Error rate bound") {
            R::Simple(s) => s,
            other => panic!("{other:?}"),
        };
        let rate = maybe_rate(&mut c, mexists, key, &probes);
        assert!(
            maybe_rate(&mut c, mexists, key, &keys[..100_000]) == 1.0,
            "a false negative in {key}"
        );
        println!(
            "| {label} | {usage} | {file} | {:.4} | {:.1} | {levels} | {:.3} % | {:.3} % |",
            usage as f64 / file as f64,
            set as f64 / usage as f64,
            bound.parse::<f64>().expect("a rate") * 100.0,
            rate * 100.0
        );
    }
    println!();
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn speed(s: &Server, rounds: usize) {
    let mut c = s.client();
    let ops = 500_000;
    let keys: Vec<String> = (0..N).map(key).collect();
    c.q("FLUSHALL");
    load(&mut c, &["SADD", "set"], &keys);
    assert_eq!(c.q("CF.RESERVE cf 1000000"), R::Simple("OK".into()));
    load(&mut c, &["CF.INSERT", "cf", "ITEMS"], &keys);
    assert_eq!(c.q("BF.RESERVE bf 0.01 1000000"), R::Simple("OK".into()));
    load(&mut c, &["BF.MADD", "bf"], &keys);
    // Half present, half absent, in a fixed shuffled order.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let probes: Vec<String> = (0..ops)
        .map(|i| {
            let j = (rnd() % N as u64) as usize;
            if i % 2 == 0 { key(j) } else { absent(j) }
        })
        .collect();
    let fresh: Vec<String> = (0..ops).map(|i| format!("new:{i:012}")).collect();
    let lookups = [
        ("SISMEMBER", "set"),
        ("CF.EXISTS", "cf"),
        ("BF.EXISTS", "bf"),
    ];
    let adds = [
        ("SADD", "set2", "DEL set2"),
        ("CF.ADD", "cf2", "CF.RESERVE cf2 1000000"),
        ("BF.ADD", "bf2", "BF.RESERVE bf2 0.01 1000000"),
    ];
    let look_batches: Vec<_> = lookups
        .iter()
        .map(|(cmd, key)| batches(cmd, key, &probes))
        .collect();
    let add_batches: Vec<_> = adds
        .iter()
        .map(|(cmd, key, _)| batches(cmd, key, &fresh))
        .collect();
    let mut pipe = Pipe::new(s.port);
    let mut look_rates = vec![Vec::new(); lookups.len()];
    let mut add_rates = vec![Vec::new(); adds.len()];
    let mut look_ratios = vec![Vec::new(); lookups.len()];
    let mut add_ratios = vec![Vec::new(); adds.len()];
    for round in 0..rounds {
        // Each round starts with another command, so that none is always first.
        let mut rates = vec![0.0; lookups.len()];
        for j in 0..lookups.len() {
            let k = (j + round) % lookups.len();
            let b = &look_batches[k];
            let t = Instant::now();
            let (ones, zeros, errors) = pipe.run(b);
            let rate = ops as f64 / t.elapsed().as_secs_f64();
            assert_eq!(errors, 0, "{}", lookups[k].0);
            assert_eq!(ones + zeros, ops);
            assert!(ones >= ops / 2, "{}: a present key not found", lookups[k].0);
            rates[k] = rate;
            look_rates[k].push(rate);
        }
        for k in 0..lookups.len() {
            look_ratios[k].push(rates[k] / rates[0]);
        }
        let mut rates = vec![0.0; adds.len()];
        for j in 0..adds.len() {
            let k = (j + round) % adds.len();
            let b = &add_batches[k];
            c.call(&["DEL", adds[k].1]);
            if !adds[k].2.starts_with("DEL") {
                let args: Vec<&str> = adds[k].2.split(' ').collect();
                assert_eq!(c.call(&args), R::Simple("OK".into()));
            }
            let t = Instant::now();
            let (_, _, errors) = pipe.run(b);
            let rate = ops as f64 / t.elapsed().as_secs_f64();
            assert_eq!(errors, 0, "{}", adds[k].0);
            rates[k] = rate;
            add_rates[k].push(rate);
        }
        for k in 0..adds.len() {
            add_ratios[k].push(rates[k] / rates[0]);
        }
        eprintln!("round {} of {rounds}", round + 1);
    }
    println!(
        "## Speed: {ops} commands a round, {PIPELINE} a write, {rounds} interleaved rounds (medians)\n"
    );
    println!(
        "| command | k commands/s | × the set's command, same round: median (lowest – highest) |"
    );
    println!("|---|---:|---:|");
    let row = |what: String, rates: &mut Vec<f64>, ratios: &mut Vec<f64>| {
        let m = median(ratios);
        println!(
            "| {what} | {:.0} | {m:.3} ({:.3} – {:.3}) |",
            median(rates) / 1e3,
            ratios[0],
            ratios[ratios.len() - 1]
        );
    };
    for (k, (cmd, _)) in lookups.iter().enumerate() {
        row(
            format!("`{cmd}` (half present)"),
            &mut look_rates[k],
            &mut look_ratios[k],
        );
    }
    for (k, (cmd, _, _)) in adds.iter().enumerate() {
        row(
            format!("`{cmd}` (new keys)"),
            &mut add_rates[k],
            &mut add_ratios[k],
        );
    }
    println!();
}

fn growth(s: &Server) {
    let mut c = s.client();
    c.q("FLUSHALL");
    let adds = N;
    let hot: Vec<String> = (0..10).map(|i| format!("hot:{i:012}")).collect();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut rnd = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut stream = Vec::with_capacity(adds);
    let mut distinct = Vec::new();
    for i in 0..adds {
        if rnd() % 100 == 0 {
            stream.push(hot[(rnd() % 10) as usize].clone());
        } else {
            let k = key(i);
            distinct.push(k.clone());
            stream.push(k);
        }
    }
    let probes: Vec<String> = (0..N).map(absent).collect();
    println!("## Growth: reserved for 1 000 items, then {adds} adds, 1 % of them 10 hot items\n");
    println!(
        "| key | added | not added (CF: a hot item's copies past 2b; BF: probably present) | filters | Size, bytes | bytes / distinct item | rate bound | measured rate |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for (reserve, add, info, mexists, key) in [
        ("CF.RESERVE g 1000", "CF.ADD", "CF.INFO", "CF.MEXISTS", "g"),
        (
            "BF.RESERVE g 0.01 1000",
            "BF.ADD",
            "BF.INFO",
            "BF.MEXISTS",
            "g",
        ),
    ] {
        c.q("DEL g");
        let args: Vec<&str> = reserve.split(' ').collect();
        assert_eq!(c.call(&args), R::Simple("OK".into()));
        let mut pipe = Pipe::new(s.port);
        let (ones, zeros, errors) = pipe.run(&batches(add, key, &stream));
        let levels = info_int(&mut c, info, key, "Number of filters");
        let size = info_int(&mut c, info, key, "Size");
        let bound = match c.call(&[info, key]).field("Error rate bound") {
            R::Simple(s) => s.parse::<f64>().expect("a rate"),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            maybe_rate(&mut c, mexists, key, &distinct),
            1.0,
            "a false negative"
        );
        assert_eq!(
            maybe_rate(&mut c, mexists, key, &hot),
            1.0,
            "a hot item lost"
        );
        let rate = maybe_rate(&mut c, mexists, key, &probes);
        // What issue 42 asks of this growth (deterministic: fixed keys, deterministic filters).
        assert!(levels <= 2, "{reserve}: {levels} levels");
        assert!(
            rate <= 0.01 && bound <= 0.01,
            "{reserve}: rate {rate}, bound {bound}"
        );
        println!(
            "| `{reserve}`, `{add}` | {ones} | {} | {levels} | {size} | {:.2} | {:.3} % | {:.3} % |",
            zeros + errors,
            size as f64 / (distinct.len() + hot.len()) as f64,
            bound * 100.0,
            rate * 100.0
        );
    }
    println!();
    redisbloom_chains(adds as f64);
}

/// RedisBloom's sub-filter chains for the same growth, from its docs and code (not measured).
fn redisbloom_chains(items: f64) {
    println!("RedisBloom for the same stream, computed (not measured):\n");
    println!("| RedisBloom key | sub-filters | bytes | error bound | filters a lookup asks |");
    println!("|---|---:|---:|---:|---:|");
    // BF: `sb.c` — link i holds 1000·2^i items at error 0.01·0.5^(i+1); a Bloom filter of n
    // items at error e takes n·(−ln e)/ln²2 bits (docs, unrounded: the smallest it can be).
    let (mut cap, mut total, mut links, mut bytes, mut err) = (1000.0f64, 0.0, 0, 0.0, 0.0);
    while total < items {
        let e = 0.01 * 0.5f64.powi(links + 1);
        bytes += cap * (-e.ln()) / (2f64.ln().powi(2)) / 8.0;
        err += e;
        total += cap;
        cap *= 2.0;
        links += 1;
    }
    println!(
        "| `BF.RESERVE g 0.01 1000` (EXPANSION 2) | {links} | {bytes:.0} | {:.3} % | {links} |",
        err * 100.0
    );
    // CF: bucket size 2, 8-bit fingerprints; each sub-filter's rate is 2b/255 and they add
    // (docs, CF.RESERVE); sub-filter i has next_pow2(1000·e^i / 2) buckets of 2 one-byte
    // slots; at most 32 expansions (`cf-max-expansions`).
    for expansion in [1.0f64, 2.0] {
        let (mut cap, mut slots, mut filters) = (1000.0f64, 0.0, 0);
        while slots * 0.95 < items && filters < 2000 {
            let buckets = (cap / 2.0).log2().ceil().exp2();
            slots += buckets * 2.0;
            cap *= expansion;
            filters += 1;
        }
        if filters > 33 {
            // Stops at 33: the slots of 33 sub-filters, each with its 2b/255.
            let held = 33.0 * (1000.0f64 / 2.0).log2().ceil().exp2() * 2.0;
            println!(
                "| `CF.RESERVE g 1000` (EXPANSION {expansion}) | 33, then `Maximum expansions reached` ({filters} needed) | {held:.0} (holds {:.0} items) | {:.1} % | 33 |",
                held * 0.95,
                33.0 * 4.0 / 255.0 * 100.0
            );
        } else {
            println!(
                "| `CF.RESERVE g 1000` (EXPANSION {expansion}) | {filters} | {slots:.0} | {:.1} % | {filters} |",
                filters as f64 * 4.0 / 255.0 * 100.0
            );
        }
    }
    println!(
        "\nHot items in a RedisBloom CF key: each sub-filter holds at most 2b = 4 copies of an \
         item (its two buckets), so every 4 further copies start a sub-filter: the 10 000 hot \
         adds here alone would ask for ~2 500 sub-filters (RedisBloom issue 533)."
    );
}

fn main() {
    let what = std::env::args().nth(1).unwrap_or_default();
    let rounds = std::env::args()
        .nth(2)
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let dir = std::env::temp_dir().join(format!("cksst-in-redis-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let s = Server::start(&dir, &[]);
    eprintln!("redis-server on port {} with the module", s.port);
    if what.is_empty() || what == "memory" {
        memory(&s);
    }
    if what.is_empty() || what == "speed" {
        speed(&s, rounds);
    }
    if what.is_empty() || what == "growth" {
        growth(&s);
    }
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}
