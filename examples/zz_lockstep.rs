//! Lockstep insert timing: grown (from n/1000) and sile, alternating chunks of keys so that
//! both see the same machine conditions; per-filter totals and the ratio.
use cuckoo_sst::{Config, ScalableCuckooFilter};
use std::time::Instant;
fn key(i: u64) -> [u8; 16] {
    let mut k = *b"key:\0\0\0\0\0\0\0\0\0\0\0\0";
    k[8..].copy_from_slice(&i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes());
    k
}
fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .map(|a| a.parse().unwrap())
        .unwrap_or(1_000_000);
    let rounds: usize = std::env::args()
        .nth(2)
        .map(|a| a.parse().unwrap())
        .unwrap_or(3);
    let chunk: u64 = std::env::args()
        .nth(3)
        .map(|a| a.parse().unwrap())
        .unwrap_or(20_000);
    let start = (n / 1000) as usize;
    let mut ratios = vec![];
    for r in 0..rounds {
        let mut g = ScalableCuckooFilter::new(Config::new(start)).unwrap();
        let mut s = scalable_cuckoo_filter::ScalableCuckooFilter::<[u8; 16]>::new(start, 0.01);
        let (mut tg, mut ts) = (0f64, 0f64);
        let mut at = 0;
        let mut flip = r % 2 == 0;
        while at < n {
            let end = (at + chunk).min(n);
            for turn in 0..2 {
                if (turn == 0) == flip {
                    let t = Instant::now();
                    for i in at..end {
                        g.insert(&key(i)).unwrap();
                    }
                    tg += t.elapsed().as_secs_f64();
                } else {
                    let t = Instant::now();
                    for i in at..end {
                        s.insert(&key(i));
                    }
                    ts += t.elapsed().as_secs_f64();
                }
            }
            flip = !flip;
            at = end;
        }
        let (rg, rs) = (n as f64 / tg / 1e6, n as f64 / ts / 1e6);
        ratios.push(rg / rs);
        println!(
            "round {r}: grown {rg:.2} M/s ({:.2} bits/key), sile {rs:.2} M/s, ratio {:.3}",
            g.size_in_bytes() as f64 * 8.0 / n as f64,
            rg / rs
        );
    }
    ratios.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!("median ratio {:.3}", ratios[ratios.len() / 2]);
}
