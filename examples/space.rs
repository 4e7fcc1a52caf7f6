//! Space against false positives, measured: bits per item and FPR at 1 M items for every
//! layout this crate offers, beside the space-optimal Bloom filter bound and peer crates.
//! Prints a Markdown table and writes the plot `docs/space.svg`.
//!
//! ```text
//! cargo run --release --example space      # about a minute
//! ```

use cuckoo_sst::{Config, CuckooFilter, Encoding};
use std::fmt::Write as _;
use xorf::Filter as _;

const N: u64 = 1_000_000;

fn key(i: u64) -> [u8; 8] {
    i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_le_bytes()
}

/// Enough absent keys to see ~300 false positives at `expected`, between 2 M and 40 M.
fn trials(expected: f64) -> u64 {
    ((300.0 / expected) as u64).clamp(2_000_000, 40_000_000)
}

fn rate(trials: u64, contains: impl Fn(&[u8; 8]) -> bool) -> f64 {
    let hits = (0..trials).filter(|&i| contains(&key(N + i))).count();
    hits as f64 / trials as f64
}

struct Point {
    series: String,
    label: String,
    bits: f64,
    fpr: f64,
}

fn ours(points: &mut Vec<Point>, series: &str, b: usize, bits: u32, e: Encoding) {
    let config = Config::new(N as usize)
        .bucket_size(b)
        .fingerprint_bits(bits)
        .encoding(e);
    let mut f = CuckooFilter::new(config).unwrap();
    for i in 0..N {
        f.insert(&key(i)).unwrap();
    }
    let fpr = rate(trials(f.estimated_fpr()), |k| f.contains(k));
    points.push(Point {
        series: series.into(),
        label: format!("b={b} f={bits}"),
        bits: f.size_in_bytes() as f64 * 8.0 / N as f64,
        fpr,
    });
}

fn peers(points: &mut Vec<Point>) {
    let keys: Vec<u64> = (0..N).map(|i| u64::from_le_bytes(key(i))).collect();
    let absent = |i: u64| u64::from_le_bytes(key(N + i));
    let t = 20_000_000;

    // cuckoofilter 0.5: 8-bit fingerprints, buckets of 4, a power-of-two table.
    let mut cf =
        cuckoofilter::CuckooFilter::<std::collections::hash_map::DefaultHasher>::with_capacity(
            (N as f64 / 0.95) as usize,
        );
    for k in &keys {
        cf.add(k).unwrap();
    }
    let fpr = (0..t).filter(|&i| cf.contains(&absent(i))).count() as f64 / t as f64;
    let bits = cf.memory_usage() as f64 * 8.0 / N as f64;
    points.push(Point {
        series: "cuckoofilter".into(),
        label: "f=8".into(),
        bits,
        fpr,
    });

    // xorf: static binary fuse and xor filters (no inserts after construction, no deletes).
    let bf8 = xorf::BinaryFuse8::try_from(&keys).unwrap();
    let fpr = (0..t).filter(|&i| bf8.contains(&absent(i))).count() as f64 / t as f64;
    let bits = bf8.fingerprints.len() as f64 * 8.0 / N as f64;
    points.push(Point {
        series: "xorf (static)".into(),
        label: "BinaryFuse8".into(),
        bits,
        fpr,
    });
    let bf16 = xorf::BinaryFuse16::try_from(&keys).unwrap();
    let fpr = (0..t).filter(|&i| bf16.contains(&absent(i))).count() as f64 / t as f64;
    let bits = bf16.fingerprints.len() as f64 * 16.0 / N as f64;
    points.push(Point {
        series: "xorf (static)".into(),
        label: "BinaryFuse16".into(),
        bits,
        fpr,
    });

    for eps in [0.01, 0.001, 0.0001, 0.00001] {
        let t = trials(eps);
        let mut bloom = bloomfilter::Bloom::new_for_fp_rate(N as usize, eps).unwrap();
        for k in &keys {
            bloom.set(k);
        }
        let fpr = (0..t).filter(|&i| bloom.check(&absent(i))).count() as f64 / t as f64;
        let bits = bloom.len() as f64 / N as f64;
        points.push(Point {
            series: "bloomfilter".into(),
            label: format!("ε={eps}"),
            bits,
            fpr,
        });

        let mut q = qfilter::Filter::new(N, eps).unwrap();
        for k in &keys {
            q.insert_duplicated(k).unwrap();
        }
        let fpr = (0..t).filter(|&i| q.contains(absent(i))).count() as f64 / t as f64;
        let bits = q.memory_usage() as f64 * 8.0 / N as f64;
        points.push(Point {
            series: "qfilter".into(),
            label: format!("ε={eps}"),
            bits,
            fpr,
        });
    }
}

fn main() {
    let mut points = Vec::new();
    for (b, bits) in [(2, 8), (4, 8), (8, 8), (2, 16), (4, 16), (8, 16), (4, 32)] {
        ours(&mut points, "plain", b, bits, Encoding::Plain);
    }
    for bits in 7..=20 {
        ours(
            &mut points,
            "semi-sorted b=4",
            4,
            bits,
            Encoding::SemiSorted,
        );
        ours(&mut points, "packed b=4", 4, bits, Encoding::Packed);
    }
    for bits in [7, 9, 11, 13, 15, 17, 19] {
        ours(&mut points, "packed b=2", 2, bits, Encoding::Packed);
        ours(&mut points, "packed b=8", 8, bits, Encoding::Packed);
    }
    peers(&mut points);

    println!("| filter | layout | bits/item | measured FPR | Bloom bound at this FPR | vs Bloom |");
    println!("|---|---|---|---|---|---|");
    for p in &points {
        let bloom = 1.44 * (1.0 / p.fpr).log2();
        println!(
            "| {} | {} | {:.2} | {:.2e} | {:.2} | {:+.1} % |",
            p.series,
            p.label,
            p.bits,
            p.fpr,
            bloom,
            (p.bits / bloom - 1.0) * 100.0
        );
    }
    std::fs::create_dir_all("docs").unwrap();
    std::fs::write("docs/space.svg", svg(&points)).unwrap();
    eprintln!("wrote docs/space.svg");
}

/// A log-scale scatter plot of FPR against bits per item, with the Bloom bound and the
/// information-theoretic minimum as lines.
fn svg(points: &[Point]) -> String {
    let (w, h, left, right, top, bottom) = (900.0, 560.0, 70.0, 230.0, 30.0, 50.0);
    let (x0, x1) = (4.0f64, 44.0f64);
    let (y0, y1) = (-9.0f64, -1.0f64); // log10 FPR
    let px = |bits: f64| left + (bits - x0) / (x1 - x0) * (w - left - right);
    let py = |fpr: f64| top + (y1 - fpr.log10()) / (y1 - y0) * (h - top - bottom);
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg xmlns='http://www.w3.org/2000/svg' width='{w}' height='{h}' \
         font-family='sans-serif' font-size='12'><rect width='100%' height='100%' fill='white'/>\
         <clipPath id='plot'><rect x='{left}' y='{top}' width='{}' height='{}'/></clipPath>\
         <text x='{}' y='14' text-anchor='middle' font-size='13'>Space against false \
         positives, measured at 1 M items (lower left is better)</text>",
        w - left - right,
        h - top - bottom,
        (left + w - right) / 2.0
    );
    for b in (4..=44).step_by(4) {
        let x = px(b as f64);
        let _ = write!(
            s,
            "<line x1='{x}' y1='{top}' x2='{x}' y2='{}' stroke='#eee'/>\
             <text x='{x}' y='{}' text-anchor='middle'>{b}</text>",
            h - bottom,
            h - bottom + 16.0
        );
    }
    for e in (y0 as i32)..=(y1 as i32) {
        let y = py(10f64.powi(e));
        let _ = write!(
            s,
            "<line x1='{left}' y1='{y}' x2='{}' y2='{y}' stroke='#eee'/>\
             <text x='{}' y='{}' text-anchor='end'>1e{e}</text>",
            w - right,
            left - 6.0,
            y + 4.0
        );
    }
    let _ = write!(
        s,
        "<text x='{}' y='{}' text-anchor='middle'>bits per item (1 M items)</text>\
         <text x='16' y='{}' transform='rotate(-90 16 {})' text-anchor='middle'>\
         false-positive rate (measured)</text>",
        (left + w - right) / 2.0,
        h - 12.0,
        h / 2.0,
        h / 2.0
    );
    // Reference lines: space-optimal Bloom (1.44·log2(1/ε)) and the minimum (log2(1/ε)).
    for (factor, color, name) in [(1.44, "#999", "Bloom bound"), (1.0, "#ccc", "log2(1/ε)")] {
        let pts: Vec<String> = (0..=60)
            .map(|i| {
                let l = y1 - (y1 - y0) * i as f64 / 60.0;
                let bits = factor * (-l) * std::f64::consts::LOG2_10;
                format!("{:.1},{:.1}", px(bits), py(10f64.powf(l)))
            })
            .collect();
        let _ = write!(
            s,
            "<polyline fill='none' stroke='{color}' stroke-dasharray='6 4' clip-path='url(#plot)' \
             points='{}'/>",
            pts.join(" ")
        );
        let _ = write!(s, "<!-- {name} -->");
    }
    let colors = [
        "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
        "#7f7f7f",
    ];
    let mut series: Vec<&str> = Vec::new();
    for p in points {
        if !series.contains(&p.series.as_str()) {
            series.push(&p.series);
        }
    }
    for (i, name) in series.iter().enumerate() {
        let c = colors[i % colors.len()];
        for p in points.iter().filter(|p| p.series == *name && p.fpr > 0.0) {
            let _ = write!(
                s,
                "<circle cx='{:.1}' cy='{:.1}' r='4' fill='{c}'><title>{} {}: {:.2} bits, \
                 {:.2e}</title></circle>",
                px(p.bits),
                py(p.fpr),
                p.series,
                p.label,
                p.bits,
                p.fpr
            );
        }
        let y = top + 20.0 + 20.0 * i as f64;
        let _ = write!(
            s,
            "<circle cx='{}' cy='{y}' r='4' fill='{c}'/><text x='{}' y='{}'>{name}</text>",
            w - right + 20.0,
            w - right + 30.0,
            y + 4.0
        );
    }
    let y = top + 20.0 + 20.0 * series.len() as f64;
    let _ = write!(
        s,
        "<line x1='{}' y1='{y}' x2='{}' y2='{y}' stroke='#999' stroke-dasharray='6 4'/>\
         <text x='{}' y='{}'>Bloom 1.44·log2(1/ε)</text>\
         <line x1='{}' y1='{}' x2='{}' y2='{}' stroke='#ccc' stroke-dasharray='6 4'/>\
         <text x='{}' y='{}'>log2(1/ε)</text></svg>",
        w - right + 12.0,
        w - right + 28.0,
        w - right + 30.0,
        y + 4.0,
        w - right + 12.0,
        y + 20.0,
        w - right + 28.0,
        y + 20.0,
        w - right + 30.0,
        y + 24.0
    );
    s
}
