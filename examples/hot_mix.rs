//! Hot keys mixed into a stream of distinct keys: what they do to a growable filter's levels
//! and bytes (a known limit, docs/guarantees.md). Every other insert is a new key; the others
//! are copies of one of `H` hot keys, picked by a fixed-seed xorshift, so the output is the
//! same on every run. The filter starts at `n / 200` keys (grown) or at `n` (right-sized), and
//! takes them with `insert` or with `insert_unique` (which skips a key any level finds).
//!
//! ```text
//! cargo run --release --example hot_mix [n]   # n inserts, 200 000 by default
//! ```

use cuckoo_sst::{Config, Error, ScalableCuckooFilter};

/// A 16-byte key: `i` and a multiple of it.
fn key(i: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&i.to_le_bytes());
    k[8..].copy_from_slice(&i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_le_bytes());
    k
}

/// Hot keys are numbered from here, apart from the distinct keys.
const HOT_BASE: u64 = 1 << 40;

/// Inserts `n` keys, every other one a copy of one of `hot` hot keys, into a filter sized for
/// `capacity` (with `insert_unique` if `unique`); returns it and the number of inserts refused
/// as copies or skipped as present.
fn run(
    n: u64,
    hot: u64,
    capacity: usize,
    unique: bool,
) -> Result<(ScalableCuckooFilter, u64), Error> {
    let mut f = ScalableCuckooFilter::new(Config::new(capacity).false_positive_rate(0.01))?;
    let (mut refused, mut x) = (0, 1u64);
    for i in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let k = if hot > 0 && i % 2 == 1 {
            key(HOT_BASE + x % hot)
        } else {
            key(i)
        };
        let r = if unique {
            f.insert_unique(&k)
        } else {
            f.insert(&k).map(|()| true)
        };
        match r {
            Ok(true) => {}
            Ok(false) | Err(Error::TooManyCopies) => refused += 1,
            Err(e) => return Err(e),
        }
    }
    Ok((f, refused))
}

fn main() -> Result<(), Error> {
    let n: u64 = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("n: a number of inserts"))
        .unwrap_or(200_000);
    println!("{n} inserts at 1 %, every other one a copy of a hot key (none: distinct keys only)");
    println!("| hot keys | start | insert | levels | bytes | refused or skipped | expected FPR |");
    println!("|---:|---|---|---:|---:|---:|---:|");
    for hot in [0, 1, 20, 200, 2000] {
        for (start, capacity) in [("n/200", (n / 200) as usize), ("n", n as usize)] {
            for (insert, unique) in [("insert", false), ("insert_unique", true)] {
                let (f, refused) = run(n, hot, capacity, unique)?;
                println!(
                    "| {hot} | {start} | {insert} | {} | {} | {refused} | {:.5} |",
                    f.levels(),
                    f.size_in_bytes(),
                    f.expected_fpr()
                );
            }
        }
    }
    Ok(())
}
