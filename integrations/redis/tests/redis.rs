//! The module in a real redis-server (Debian's 7.0, installed by scripts/install-redis if
//! missing): every command and option with RedisBloom's replies and error strings, full
//! filters, persistence (DEBUG RELOAD, RDB and AOF restarts, DUMP/RESTORE, SCANDUMP/LOADCHUNK),
//! hostile input, and random operations against an exact model.

mod server;

use std::collections::HashMap;

use server::{R, Server};

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

fn ok() -> R {
    R::Simple("OK".into())
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

/// SplitMix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[test]
fn cf_commands_and_options() {
    let dir = tmp();
    let s = Server::start(dir.path(), &[]);
    let mut c = s.client();

    assert_eq!(c.q("CF.RESERVE c 1000"), ok());
    assert_eq!(c.q("CF.ADD c a"), R::Int(1));
    assert_eq!(c.q("CF.ADD c a"), R::Int(1)); // a second copy
    assert_eq!(c.q("CF.COUNT c a"), R::Int(2));
    assert_eq!(c.q("CF.ADDNX c a"), R::Int(0));
    assert_eq!(c.q("CF.ADDNX c b"), R::Int(1));
    assert_eq!(c.q("CF.EXISTS c a"), R::Int(1));
    assert_eq!(c.q("CF.EXISTS c nope"), R::Int(0));
    assert_eq!(c.q("CF.MEXISTS c a b nope").ints(), [1, 1, 0]);
    assert_eq!(c.q("CF.INSERT c ITEMS x y x").ints(), [1, 1, 1]);
    assert_eq!(c.q("CF.INSERTNX c ITEMS x z").ints(), [0, 1]);
    assert_eq!(c.q("CF.DEL c a"), R::Int(1));
    assert_eq!(c.q("CF.COUNT c a"), R::Int(1));
    assert_eq!(c.q("CF.DEL c a"), R::Int(1));
    assert_eq!(c.q("CF.DEL c a"), R::Int(0));
    assert_eq!(c.q("CF.EXISTS c a"), R::Int(0));
    let info = c.q("CF.INFO c");
    let names: Vec<String> = info.pairs().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "Size",
            "Number of buckets",
            "Number of filters",
            "Number of items inserted",
            "Number of items deleted",
            "Bucket size",
            "Expansion rate",
            "Max iterations",
            "Backend",
            "Error rate bound",
        ]
    );
    assert_eq!(info.field("Number of items inserted"), R::Int(5)); // b, x, y, x, z
    assert_eq!(info.field("Number of items deleted"), R::Int(2));
    assert_eq!(info.field("Number of filters"), R::Int(1));
    assert_eq!(info.field("Expansion rate"), R::Int(1));
    assert_eq!(info.field("Max iterations"), R::Int(500));
    assert_eq!(
        info.field("Backend"),
        R::Simple("cuckoo-sst growable".into())
    );
    let size = info.field("Size").int();
    assert!(size > 1000 && size == c.q("MEMORY USAGE c").int() - key_overhead(&mut c, "c", size));

    // Options: BUCKETSIZE maps to 2, 4 or 8; MAXITERATIONS is kept; EXPANSION 0 is fixed.
    assert_eq!(
        c.q("CF.RESERVE o1 1000 BUCKETSIZE 1 MAXITERATIONS 20 EXPANSION 4"),
        ok()
    );
    let info = c.q("CF.INFO o1");
    assert_eq!(info.field("Bucket size"), R::Int(2));
    assert_eq!(info.field("Max iterations"), R::Int(20));
    assert_eq!(info.field("Expansion rate"), R::Int(4));
    assert_eq!(c.q("CF.RESERVE o2 1000 bucketsize 3 expansion 0"), ok());
    let info = c.q("CF.INFO o2");
    assert_eq!(info.field("Bucket size"), R::Int(4));
    assert_eq!(info.field("Expansion rate"), R::Int(0));
    assert_eq!(info.field("Backend"), R::Simple("cuckoo-sst fixed".into()));
    assert_eq!(c.q("CF.RESERVE o3 1000 BUCKETSIZE 255"), ok());
    assert_eq!(c.q("CF.INFO o3").field("Bucket size"), R::Int(8));

    // Auto-creation, CAPACITY and NOCREATE.
    assert_eq!(c.q("CF.ADD auto a"), R::Int(1));
    assert_eq!(c.q("CF.ADDNX auto2 a"), R::Int(1));
    assert_eq!(c.q("CF.INSERT cap CAPACITY 50000 ITEMS a b").ints(), [1, 1]);
    assert!(c.q("CF.INFO cap").field("Number of buckets").int() * 4 >= 50000);
    assert_eq!(
        c.q("CF.INSERT none NOCREATE ITEMS a").err(),
        "ERR not found"
    );
    assert_eq!(
        c.q("CF.INSERTNX none NOCREATE ITEMS a").err(),
        "ERR not found"
    );
    assert_eq!(c.q("EXISTS none"), R::Int(0));
    assert_eq!(c.q("CF.INSERT cap NOCREATE ITEMS c").ints(), [1]);

    // A missing key: 0 for the checks, errors elsewhere.
    assert_eq!(c.q("CF.EXISTS missing a"), R::Int(0));
    assert_eq!(c.q("CF.MEXISTS missing a b").ints(), [0, 0]);
    assert_eq!(c.q("CF.COUNT missing a"), R::Int(0));
    assert_eq!(c.q("CF.DEL missing a").err(), "Not found");
    assert_eq!(c.q("CF.INFO missing").err(), "ERR not found");

    // The module answers as the module: its name in MODULE LIST.
    let R::Array(modules) = c.q("MODULE LIST") else {
        panic!("MODULE LIST")
    };
    assert!(format!("{modules:?}").contains(&format!("{:?}", b"cuckoo-sst")[1..30]));
}

/// `MEMORY USAGE` less the value's own size: the key's overhead (a few dozen bytes).
fn key_overhead(c: &mut server::Client, key: &str, size: i64) -> i64 {
    let usage = c.call(&["MEMORY", "USAGE", key]).int();
    assert!(
        usage >= size && usage - size < 200,
        "MEMORY USAGE {usage}, Size {size}"
    );
    usage - size
}

#[test]
fn cf_errors_as_redisbloom_gives_them() {
    let dir = tmp();
    let s = Server::start(dir.path(), &[]);
    let mut c = s.client();
    let arity = |cmd: &str| format!("ERR wrong number of arguments for '{cmd}' command");

    for (line, cmd) in [
        ("CF.RESERVE", "CF.RESERVE"),
        ("CF.RESERVE c", "CF.RESERVE"),
        ("CF.RESERVE c 100 BUCKETSIZE", "CF.RESERVE"),
        ("CF.ADD c", "CF.ADD"),
        ("CF.ADD c a b", "CF.ADD"),
        ("CF.ADDNX c", "CF.ADDNX"),
        ("CF.INSERT c", "CF.INSERT"),
        ("CF.INSERT c ITEMS", "CF.INSERT"),
        ("CF.INSERT c NOCREATE ITEMS", "CF.INSERT"),
        ("CF.INSERT c NOCREATE CAPACITY", "CF.INSERT"),
        ("CF.EXISTS c", "CF.EXISTS"),
        ("CF.EXISTS c a b", "CF.EXISTS"),
        ("CF.MEXISTS c", "CF.MEXISTS"),
        ("CF.COUNT c", "CF.COUNT"),
        ("CF.DEL c", "CF.DEL"),
        ("CF.INFO", "CF.INFO"),
        ("CF.INFO c d", "CF.INFO"),
        ("CF.SCANDUMP c", "CF.SCANDUMP"),
        ("CF.LOADCHUNK c 1", "CF.LOADCHUNK"),
    ] {
        assert_eq!(c.q(line).err(), arity(cmd), "{line}");
    }
    assert_eq!(c.q("CF.RESERVE c str").err(), "Bad capacity");
    assert_eq!(
        c.q("CF.RESERVE c 3").err(),
        "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]"
    );
    assert_eq!(
        c.q("CF.RESERVE c 10 BUCKETSIZE 8").err(),
        "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]"
    );
    assert_eq!(
        c.q("CF.RESERVE c 1099511627776").err(),
        "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]"
    );
    assert_eq!(
        c.q("CF.RESERVE c -5").err(),
        "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]"
    );
    assert_eq!(
        c.q("CF.RESERVE c 100 BUCKETSIZE str").err(),
        "Couldn't parse BUCKETSIZE"
    );
    assert_eq!(
        c.q("CF.RESERVE c 100 BUCKETSIZE 0").err(),
        "BUCKETSIZE: value must be in the range [1, 255]"
    );
    assert_eq!(
        c.q("CF.RESERVE c 100 BUCKETSIZE 256").err(),
        "BUCKETSIZE: value must be in the range [1, 255]"
    );
    assert_eq!(
        c.q("CF.RESERVE c 100 MAXITERATIONS str").err(),
        "Couldn't parse MAXITERATIONS"
    );
    assert_eq!(
        c.q("CF.RESERVE c 100 MAXITERATIONS 0").err(),
        "MAXITERATIONS: value must be in the range [1, 65535]"
    );
    assert_eq!(
        c.q("CF.RESERVE c 100 MAXITERATIONS 65536").err(),
        "MAXITERATIONS: value must be in the range [1, 65535]"
    );
    assert_eq!(
        c.q("CF.RESERVE c 100 EXPANSION str").err(),
        "Couldn't parse EXPANSION"
    );
    assert_eq!(
        c.q("CF.RESERVE c 100 EXPANSION -1").err(),
        "EXPANSION: value must be in the range [0, 32768]"
    );
    assert_eq!(
        c.q("CF.RESERVE c 100 EXPANSION 32769").err(),
        "EXPANSION: value must be in the range [0, 32768]"
    );
    assert_eq!(
        c.q("CF.INSERT c CAPACITY str ITEMS a").err(),
        "Bad capacity"
    );
    assert_eq!(
        c.q("CF.INSERT c CAPACITY -1 ITEMS a").err(),
        "Capacity must be in the range [cf-bucket-size * 2, 1073741824]"
    );
    assert_eq!(
        c.q("CF.INSERTNX c CAPACITY 3 ITEMS a").err(),
        "Capacity must be in the range [cf-bucket-size * 2, 1073741824]"
    );
    assert_eq!(
        c.q("CF.INSERT c DONTEXIST ITEMS a").err(),
        "Unknown argument received"
    );
    assert_eq!(c.q("CF.SCANDUMP c -1").err(), "Invalid position");
    assert_eq!(c.q("CF.SCANDUMP c str").err(), "Invalid position");
    assert_eq!(c.q("CF.SCANDUMP c 0").err(), "ERR not found");
    assert_eq!(c.q("CF.LOADCHUNK c 0 x").err(), "Invalid position");
    assert_eq!(c.q("CF.LOADCHUNK c 2 x").err(), "ERR not found");
    assert_eq!(c.q("KEYS *"), R::Array(vec![])); // no error created a key

    // Existing keys and keys of other types.
    assert_eq!(c.q("CF.RESERVE c 100"), ok());
    assert_eq!(c.q("CF.RESERVE c 100").err(), "ERR item exists");
    assert_eq!(c.q("SET s v"), ok());
    assert_eq!(c.q("BF.ADD b v"), R::Int(1));
    for key in ["s", "b"] {
        for cmd in [
            "CF.RESERVE {} 100",
            "CF.ADD {} a",
            "CF.ADDNX {} a",
            "CF.INSERT {} ITEMS a",
            "CF.INFO {}",
            "CF.SCANDUMP {} 0",
        ] {
            let line = cmd.replace("{}", key);
            assert_eq!(c.q(&line).err(), WRONGTYPE, "{line}");
        }
        // As RedisBloom: the checks answer 0, CF.DEL "Not found".
        assert_eq!(c.q(&format!("CF.EXISTS {key} a")), R::Int(0));
        assert_eq!(c.q(&format!("CF.COUNT {key} a")), R::Int(0));
        assert_eq!(c.q(&format!("CF.DEL {key} a")).err(), "Not found");
    }
    assert_eq!(c.q("GET s"), R::Bulk(b"v".to_vec()));
    assert_eq!(c.q("BF.EXISTS b v"), R::Int(1));
}

#[test]
fn bf_commands_options_and_errors() {
    let dir = tmp();
    let s = Server::start(dir.path(), &[]);
    let mut c = s.client();
    let arity = |cmd: &str| format!("ERR wrong number of arguments for '{cmd}' command");

    assert_eq!(c.q("BF.RESERVE b 0.001 1000"), ok());
    assert_eq!(c.q("BF.ADD b a"), R::Int(1));
    assert_eq!(c.q("BF.ADD b a"), R::Int(0));
    assert_eq!(c.q("BF.MADD b a b c").ints(), [0, 1, 1]);
    assert_eq!(c.q("BF.EXISTS b a"), R::Int(1));
    assert_eq!(c.q("BF.EXISTS b zz"), R::Int(0));
    assert_eq!(c.q("BF.MEXISTS b a b zz").ints(), [1, 1, 0]);
    assert_eq!(c.q("BF.CARD b"), R::Int(3));
    assert_eq!(c.q("BF.CARD missing"), R::Int(0));
    let info = c.q("BF.INFO b");
    let names: Vec<String> = info.pairs().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "Capacity",
            "Size",
            "Number of filters",
            "Number of items inserted",
            "Expansion rate",
            "Backend",
            "Error rate bound",
        ]
    );
    assert!(info.field("Capacity").int() >= 1000);
    assert_eq!(info.field("Number of items inserted"), R::Int(3));
    assert_eq!(info.field("Expansion rate"), R::Int(2));
    let R::Simple(bound) = info.field("Error rate bound") else {
        panic!("a rate")
    };
    assert!(bound.parse::<f64>().unwrap() <= 0.001);
    assert_eq!(c.q("BF.INFO b items"), R::Array(vec![R::Int(3)]));
    assert_eq!(
        c.q("BF.INFO b CAPACITY"),
        R::Array(vec![info.field("Capacity")])
    );
    assert_eq!(c.q("BF.INFO b filters"), R::Array(vec![R::Int(1)]));
    assert_eq!(c.q("BF.INFO b size").ints().len(), 1);
    assert_eq!(c.q("BF.INFO b expansion"), R::Array(vec![R::Int(2)]));
    assert_eq!(c.q("BF.INFO b other").err(), "Invalid information value");

    assert_eq!(c.q("BF.RESERVE n 0.01 100 NONSCALING"), ok());
    assert_eq!(c.q("BF.INFO n expansion"), R::Array(vec![R::Nil]));
    assert_eq!(
        c.q("BF.INFO n").field("Backend"),
        R::Simple("cuckoo-sst fixed".into())
    );
    assert_eq!(c.q("BF.RESERVE e0 0.01 100 EXPANSION 0"), ok());
    assert_eq!(c.q("BF.INFO e0 expansion"), R::Array(vec![R::Nil]));
    assert_eq!(c.q("BF.RESERVE e4 0.5 100 EXPANSION 4"), ok()); // the rate is capped at 0.25
    assert_eq!(c.q("BF.INFO e4 expansion"), R::Array(vec![R::Int(4)]));

    // Auto-creation and BF.INSERT's options.
    assert_eq!(c.q("BF.ADD auto a"), R::Int(1));
    assert_eq!(c.q("BF.MADD auto2 a a").ints(), [1, 0]);
    assert_eq!(
        c.q("BF.INSERT i CAPACITY 5000 ERROR 0.001 EXPANSION 3 ITEMS a b a")
            .ints(),
        [1, 1, 0]
    );
    assert_eq!(c.q("BF.INFO i expansion"), R::Array(vec![R::Int(3)]));
    assert!(c.q("BF.INFO i capacity").ints()[0] >= 5000);
    assert_eq!(c.q("BF.INSERT i2 NONSCALING ITEMS a").ints(), [1]);
    assert_eq!(c.q("BF.INFO i2 expansion"), R::Array(vec![R::Nil]));
    assert_eq!(
        c.q("BF.INSERT none NOCREATE ITEMS a").err(),
        "ERR not found"
    );
    assert_eq!(c.q("EXISTS none"), R::Int(0));

    for (line, cmd) in [
        ("BF.RESERVE b 0.01", "BF.RESERVE"),
        ("BF.RESERVE b 0.01 100 1 2 3 4", "BF.RESERVE"),
        ("BF.ADD b", "BF.ADD"),
        ("BF.ADD b a c", "BF.ADD"),
        ("BF.MADD b", "BF.MADD"),
        ("BF.EXISTS b", "BF.EXISTS"),
        ("BF.MEXISTS b", "BF.MEXISTS"),
        ("BF.INFO", "BF.INFO"),
        ("BF.INSERT b ITEMS", "BF.INSERT"),
        ("BF.INSERT b CAPACITY", "BF.INSERT"),
        ("BF.CARD", "BF.CARD"),
    ] {
        assert_eq!(c.q(line).err(), arity(cmd), "{line}");
    }
    assert_eq!(c.q("BF.RESERVE x str 100").err(), "ERR bad error rate");
    for rate in ["0", "1", "-0.5", "2"] {
        assert_eq!(
            c.q(&format!("BF.RESERVE x {rate} 100")).err(),
            "ERR error rate must be in the range (0.000000, 1.000000)"
        );
    }
    assert_eq!(c.q("BF.RESERVE x 0.01 str").err(), "ERR bad capacity");
    for cap in ["0", "-1", "1073741825", "99999999999999"] {
        assert_eq!(
            c.q(&format!("BF.RESERVE x 0.01 {cap}")).err(),
            "ERR capacity must be in the range [1, 1073741824]"
        );
    }
    assert_eq!(
        c.q("BF.RESERVE x 0.01 100 EXPANSION").err(),
        "ERR no expansion"
    );
    assert_eq!(
        c.q("BF.RESERVE x 0.01 100 EXPANSION str").err(),
        "ERR bad expansion"
    );
    assert_eq!(
        c.q("BF.RESERVE x 0.01 100 NONSCALING EXPANSION 2").err(),
        "Nonscaling filters cannot expand"
    );
    assert_eq!(
        c.q("BF.RESERVE x 0.01 100 EXPANSION 32769").err(),
        "ERR expansion must be in the range [0, 32768]"
    );
    assert_eq!(c.q("BF.RESERVE b 0.01 100").err(), "ERR item exists");
    assert_eq!(c.q("BF.INSERT x ERROR 2 ITEMS a").err(), "Bad error rate");
    assert_eq!(
        c.q("BF.INSERT x EXPANSION -1 ITEMS a").err(),
        "Bad expansion"
    );
    assert_eq!(c.q("BF.INSERT x CAPACITY 0 ITEMS a").err(), "Bad capacity");
    assert_eq!(
        c.q("BF.INSERT x FOO ITEMS a").err(),
        "Unknown argument received"
    );
    assert_eq!(c.q("BF.INFO missing").err(), "ERR not found");
    assert_eq!(
        c.q("BF.SCANDUMP b str").err(),
        "Second argument must be numeric"
    );
    assert_eq!(
        c.q("BF.LOADCHUNK b str x").err(),
        "ERR Second argument must be numeric"
    );
    assert_eq!(c.q("EXISTS x"), R::Int(0));

    assert_eq!(c.q("SET s v"), ok());
    assert_eq!(c.q("CF.ADD cf v"), R::Int(1));
    for key in ["s", "cf"] {
        for cmd in [
            "BF.RESERVE {} 0.01 100",
            "BF.ADD {} a",
            "BF.MADD {} a",
            "BF.INSERT {} ITEMS a",
            "BF.INFO {}",
            "BF.CARD {}",
        ] {
            let line = cmd.replace("{}", key);
            assert_eq!(c.q(&line).err(), WRONGTYPE, "{line}");
        }
        assert_eq!(c.q(&format!("BF.EXISTS {key} v")), R::Int(0));
        assert_eq!(c.q(&format!("BF.MEXISTS {key} v w")).ints(), [0, 0]);
    }
}

#[test]
fn full_filters_answer_as_redisbloom_and_lose_nothing() {
    let dir = tmp();
    let s = Server::start(dir.path(), &[]);
    let mut c = s.client();

    // A fixed CF key: "Filter is full" from CF.ADD, -1 from CF.INSERT.
    assert_eq!(c.q("CF.RESERVE f 64 EXPANSION 0"), ok());
    let mut added = Vec::new();
    let mut full = None;
    for i in 0..10_000 {
        let item = format!("k{i}");
        match c.call(&["CF.ADD", "f", &item]) {
            R::Int(1) => added.push(item),
            R::Err(e) => {
                full = Some((i, e));
                break;
            }
            other => panic!("{other:?}"),
        }
    }
    let (i, e) = full.expect("a fixed filter fills");
    assert_eq!(e, "Filter is full");
    assert!(i >= 64, "held its capacity: {i}");
    // CF.INSERT and CF.INSERTNX answer -1 for each item that finds no room (some may still
    // find one), and go on.
    for cmd in ["CF.INSERT", "CF.INSERTNX"] {
        let mut args = vec![cmd.to_string(), "f".into(), "ITEMS".into()];
        args.extend((0..40).map(|j| format!("{cmd}{j}")));
        let replies = c.call(&args).ints();
        assert_eq!(replies.len(), 40);
        assert!(replies.contains(&-1) && replies.iter().all(|&r| r == -1 || r == 1));
        for (j, &r) in replies.iter().enumerate() {
            if r == 1 {
                added.push(format!("{cmd}{j}"));
            }
        }
    }
    // No false negative after the failed inserts.
    for item in &added {
        assert_eq!(c.call(&["CF.EXISTS", "f", item]), R::Int(1), "{item}");
    }

    // A growable CF key refuses a hot key's copies past 2b, as RedisBloom refuses a full filter.
    assert_eq!(c.q("CF.RESERVE hot 1000 BUCKETSIZE 4"), ok());
    let mut taken = 0;
    for _ in 0..100 {
        match c.q("CF.ADD hot k") {
            R::Int(1) => taken += 1,
            R::Err(e) => assert_eq!(e, "Filter is full"),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(taken, 8);
    assert_eq!(c.q("CF.COUNT hot k"), R::Int(8));
    assert_eq!(c.q("CF.INSERT hot ITEMS k j").ints(), [-1, 1]);
    assert_eq!(c.q("CF.INFO hot").field("Number of filters"), R::Int(1));

    // A NONSCALING BF key: "ERR non scaling filter is full", and BF.MADD stops there.
    assert_eq!(c.q("BF.RESERVE n 0.01 10 NONSCALING"), ok());
    let mut last = R::Nil;
    for i in 0..10_000 {
        last = c.call(&["BF.ADD", "n", &format!("k{i}")]);
        if matches!(last, R::Err(_)) {
            break;
        }
    }
    assert_eq!(last.err(), "ERR non scaling filter is full");
    // BF.MADD stops at the first item that finds no room (earlier ones may still find one).
    let mut args = vec!["BF.MADD".to_string(), "n".into()];
    args.extend((0..40).map(|j| format!("x{j}")));
    let R::Array(replies) = c.call(&args) else {
        panic!("an array")
    };
    let (last, before) = replies.split_last().expect("a reply");
    assert_eq!(last, &R::Err("ERR non scaling filter is full".into()));
    assert!(before.iter().all(|r| matches!(r, R::Int(0 | 1))));

    // A growable BF key grows in place: one level after a hundredfold.
    assert_eq!(c.q("BF.RESERVE g 0.01 100"), ok());
    let mut zeros = 0; // "probably present already": false positives
    for i in 0..10_000 {
        zeros += 1 - c.call(&["BF.ADD", "g", &format!("k{i}")]).int();
    }
    assert!(zeros < 200, "{zeros} of 10 000 taken for present at 1 %");
    assert_eq!(c.q("BF.INFO g filters"), R::Array(vec![R::Int(1)]));
    for i in (0..10_000).step_by(7) {
        assert_eq!(c.call(&["BF.EXISTS", "g", &format!("k{i}")]), R::Int(1));
    }
}

/// Keys of every kind with some items, and every answer they give for present and absent
/// items, with their INFO.
fn populate(c: &mut server::Client) -> Vec<String> {
    let mut keys = Vec::new();
    for (key, reserve) in [
        ("cf:grow", "CF.RESERVE cf:grow 100"),
        (
            "cf:fixed",
            "CF.RESERVE cf:fixed 5000 EXPANSION 0 BUCKETSIZE 2 MAXITERATIONS 100",
        ),
        ("bf:grow", "BF.RESERVE bf:grow 0.001 100 EXPANSION 4"),
        ("bf:fixed", "BF.RESERVE bf:fixed 0.01 5000 NONSCALING"),
    ] {
        assert_eq!(c.q(reserve), ok());
        let add = if key.starts_with("cf") {
            "CF.ADD"
        } else {
            "BF.ADD"
        };
        for i in 0..3000 {
            c.call(&[add, key, &format!("item{i}")]).int();
        }
        keys.push(key.to_string());
    }
    for i in 0..100 {
        assert_eq!(
            c.call(&["CF.DEL", "cf:grow", &format!("item{i}")]),
            R::Int(1)
        );
    }
    keys
}

/// Everything the keys answer: INFO (its Size aside) and every item's check.
fn answers(c: &mut server::Client, keys: &[String]) -> Vec<R> {
    let mut out = Vec::new();
    for key in keys {
        let (info, check, count) = if key.starts_with("cf") {
            ("CF.INFO", "CF.MEXISTS", Some("CF.COUNT"))
        } else {
            ("BF.INFO", "BF.MEXISTS", None)
        };
        out.push(c.call(&[info, key]));
        let mut args: Vec<String> = vec![check.into(), key.clone()];
        args.extend((0..6000).map(|i| format!("item{i}")));
        let r = c.call(&args);
        let ints = r.ints();
        assert!(
            ints[100..3000].iter().all(|&n| n == 1),
            "{key}: a false negative"
        );
        out.push(r);
        if let Some(count) = count {
            for i in (0..6000).step_by(13) {
                out.push(c.call(&[count, key, &format!("item{i}")]));
            }
        }
        out.push(c.call(&["MEMORY", "USAGE", key]));
        out.push(c.call(&["TYPE", key]));
    }
    out
}

#[test]
fn debug_reload_rdb_restart_and_dump_restore_keep_every_answer() {
    let dir = tmp();
    let mut s = Server::start(dir.path(), &[]);
    let mut c = s.client();
    let keys = populate(&mut c);
    let before = answers(&mut c, &keys);

    assert_eq!(c.q("DEBUG RELOAD"), ok());
    assert_eq!(answers(&mut c, &keys), before, "after DEBUG RELOAD");

    assert_eq!(c.q("SAVE"), ok());
    s.restart();
    let mut c = s.client();
    assert_eq!(c.q("DBSIZE"), R::Int(keys.len() as i64));
    assert_eq!(
        answers(&mut c, &keys),
        before,
        "after a restart from the RDB"
    );

    // DUMP and RESTORE under the same names.
    for key in &keys {
        let dump = c.call(&["DUMP", key]).bytes().to_vec();
        assert_eq!(c.call(&["DEL", key]), R::Int(1));
        assert_eq!(
            c.call(&[b"RESTORE".as_slice(), key.as_bytes(), b"0", &dump]),
            ok()
        );
    }
    assert_eq!(answers(&mut c, &keys), before, "after DUMP/RESTORE");

    // COPY: the same bytes, then independent.
    for key in &keys {
        let copy = format!("{key}:copy");
        assert_eq!(c.call(&["COPY", key, &copy]), R::Int(1));
        let kind = &key[..2].to_uppercase();
        assert_eq!(scandump(&mut c, kind, &copy), scandump(&mut c, kind, key));
        c.call(&[
            format!("{kind}.ADD"),
            copy.clone(),
            "only-in-the-copy".into(),
        ]);
        assert_eq!(
            c.call(&[format!("{kind}.EXISTS"), copy, "only-in-the-copy".into()]),
            R::Int(1)
        );
    }
    assert_eq!(answers(&mut c, &keys), before, "after COPY");
    assert!(s.alive());
}

#[test]
fn aof_restart_keeps_every_answer() {
    let dir = tmp();
    let mut s = Server::start(
        dir.path(),
        &[
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
            "--aof-use-rdb-preamble",
            "no",
        ],
    );
    let mut c = s.client();
    let keys = populate(&mut c);
    let before = answers(&mut c, &keys);

    // The commands themselves, replayed from the AOF.
    s.restart();
    let mut c = s.client();
    assert_eq!(
        answers(&mut c, &keys),
        before,
        "after a restart from the AOF's commands"
    );

    // The rewritten AOF: LOADCHUNK commands.
    assert_eq!(
        c.q("BGREWRITEAOF"),
        R::Simple("Background append only file rewriting started".into())
    );
    wait_for_rewrite(&mut c);
    s.restart();
    let mut c = s.client();
    assert_eq!(
        answers(&mut c, &keys),
        before,
        "after a restart from the rewritten AOF"
    );
    // The rewrite wrote LOADCHUNK commands.
    let aof_dir = s.dir.join("appendonlydir");
    let mut found = false;
    for entry in std::fs::read_dir(&aof_dir).expect("appendonlydir") {
        let bytes = std::fs::read(entry.expect("entry").path()).expect("read");
        found |= bytes.windows(12).any(|w| w == b"CF.LOADCHUNK");
    }
    assert!(found, "no CF.LOADCHUNK in the rewritten AOF");
}

fn wait_for_rewrite(c: &mut server::Client) {
    for _ in 0..1000 {
        let R::Bulk(info) = c.q("INFO persistence") else {
            panic!("INFO")
        };
        let info = String::from_utf8_lossy(&info);
        if info.contains("aof_rewrite_in_progress:0") && info.contains("aof_rewrite_scheduled:0") {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("the AOF rewrite did not finish");
}

#[test]
fn scandump_and_loadchunk_reassemble_byte_for_byte() {
    let dir = tmp();
    let s = Server::start(dir.path(), &[]);
    let mut c = s.client();
    // More than one 1 MiB chunk.
    assert_eq!(c.q("CF.RESERVE big 2000000"), ok());
    assert_eq!(c.q("BF.RESERVE small 0.01 100"), ok());
    for i in 0..2000 {
        c.call(&["CF.ADD", "big", &format!("item{i}")]);
        c.call(&["BF.ADD", "small", &format!("item{i}")]);
    }
    for (src, dst, kind) in [("big", "big2", "CF"), ("small", "small2", "BF")] {
        let chunks = scandump(&mut c, kind, src);
        if src == "big" {
            assert!(chunks.len() >= 3, "{} chunks", chunks.len());
        }
        for (iter, data) in &chunks {
            let r = c.call(&[
                format!("{kind}.LOADCHUNK").as_bytes(),
                dst.as_bytes(),
                iter.to_string().as_bytes(),
                data,
            ]);
            assert_eq!(r, ok());
        }
        assert_eq!(
            scandump(&mut c, kind, dst),
            chunks,
            "{dst} dumps as {src} did"
        );
        let check = format!("{kind}.MEXISTS");
        let mut args: Vec<String> = vec![check.clone(), dst.into()];
        args.extend((0..4000).map(|i| format!("item{i}")));
        let mut args_src = args.clone();
        args_src[1] = src.into();
        assert_eq!(c.call(&args), c.call(&args_src));
        assert!(c.call(&args).ints()[..2000].iter().all(|&n| n == 1));
    }
}

/// Every `(iter, data)` pair SCANDUMP gives.
fn scandump(c: &mut server::Client, kind: &str, key: &str) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut iter = 0;
    loop {
        let r = c.call(&[format!("{kind}.SCANDUMP"), key.into(), iter.to_string()]);
        let R::Array(v) = r else { panic!("{r:?}") };
        let next = v[0].int();
        if next == 0 {
            assert_eq!(v[1], R::Nil);
            return out;
        }
        out.push((next, v[1].bytes().to_vec()));
        iter = next;
    }
}

#[test]
fn hostile_chunks_and_payloads_are_refused_and_nothing_is_lost() {
    let dir = tmp();
    // Uncompressed RDB strings: a byte damaged in a DUMP payload reaches the filter's bytes.
    let mut s = Server::start(dir.path(), &["--rdbcompression", "no"]);
    let mut c = s.client();
    assert_eq!(c.q("CF.RESERVE src 1000"), ok());
    for i in 0..500 {
        c.call(&["CF.ADD", "src", &format!("item{i}")]);
    }
    let chunks = scandump(&mut c, "CF", "src");
    assert_eq!(chunks.len(), 2); // the header, the filter
    let (hdr_iter, header) = &chunks[0];
    let (end, bytes) = &chunks[1];
    let load = |c: &mut server::Client, key: &str, iter: i64, data: &[u8]| {
        c.call(&[
            b"CF.LOADCHUNK".as_slice(),
            key.as_bytes(),
            iter.to_string().as_bytes(),
            data,
        ])
    };

    // A header that is not one.
    assert_eq!(load(&mut c, "dst", 1, b"garbage").err(), "Invalid header");
    let mut bad = header.clone();
    bad[0] ^= 1;
    assert_eq!(load(&mut c, "dst", 1, &bad).err(), "Invalid header");
    // A CF key's dump is not a BF key's.
    let r = c.call(&[
        b"BF.LOADCHUNK".as_slice(),
        b"dst",
        hdr_iter.to_string().as_bytes(),
        header,
    ]);
    assert_eq!(r.err(), "Invalid header");
    assert_eq!(c.q("EXISTS dst"), R::Int(0));
    // A header over an existing key: refused, the key unchanged.
    assert_eq!(
        load(&mut c, "src", *hdr_iter, header).err(),
        "ERR item exists"
    );
    // Chunks out of place: refused, the load can go on.
    assert_eq!(load(&mut c, "dst", *hdr_iter, header), ok());
    assert_eq!(
        c.q("CF.EXISTS dst item1").err(),
        "ERR the filter is being restored with LOADCHUNK"
    );
    assert_eq!(
        load(&mut c, "dst", *end + 1, bytes).err(),
        "Couldn't load chunk!"
    );
    assert_eq!(
        load(&mut c, "dst", *end, &bytes[1..]).err(),
        "Couldn't load chunk!"
    );
    // A partly loaded key survives DEBUG RELOAD.
    assert_eq!(c.q("DEBUG RELOAD"), ok());
    // Damaged bytes: refused, and the half-made key goes.
    let mut damaged = bytes.clone();
    let mid = damaged.len() / 2;
    damaged[mid] ^= 0x10;
    assert_eq!(
        load(&mut c, "dst", *end, &damaged).err(),
        "Couldn't load chunk!"
    );
    assert_eq!(c.q("EXISTS dst"), R::Int(0));
    // Chunks into a finished filter: refused.
    assert_eq!(
        load(&mut c, "src", *end, bytes).err(),
        "Couldn't load chunk!"
    );
    // The whole dump still loads.
    assert_eq!(load(&mut c, "dst", *hdr_iter, header), ok());
    assert_eq!(load(&mut c, "dst", *end, bytes), ok());
    assert_eq!(c.q("CF.EXISTS dst item1"), R::Int(1));

    // A damaged DUMP payload (its CRC-64 check skipped so that the bytes reach the module):
    // RESTORE fails, the server lives, nothing else changed.
    let dump = c.q("DUMP src").bytes().to_vec();
    assert_eq!(c.q("DEBUG SET-SKIP-CHECKSUM-VALIDATION 1"), ok());
    let mut bad = dump.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 0x10;
    let r = c.call(&[b"RESTORE".as_slice(), b"restored", b"0", &bad]);
    assert_eq!(r.err(), "ERR Bad data format");
    assert_eq!(c.q("EXISTS restored"), R::Int(0));
    assert_eq!(
        c.call(&[b"RESTORE".as_slice(), b"restored", b"0", &dump]),
        ok()
    );
    assert_eq!(c.q("CF.EXISTS restored item7"), R::Int(1));
    assert!(s.log().contains("damaged filter"), "the reason is logged");
    // A payload cut short: an error too, the server lives.
    let short = &dump[..dump.len() / 2];
    let mut cut = short.to_vec();
    cut.extend_from_slice(&dump[dump.len() - 10..]); // the RDB version and CRC
    let r = c.call(&[b"RESTORE".as_slice(), b"cut", b"0", &cut]);
    assert!(
        r.err().starts_with("ERR Bad data format") || r.err().contains("DUMP payload"),
        "{r:?}"
    );
    assert_eq!(c.q("EXISTS cut"), R::Int(0));
    // With RDB compression a damaged byte may break the LZF stream before the module sees
    // the bytes: the read fails, and that is an error too, not a crash.
    assert_eq!(c.q("CONFIG SET rdbcompression yes"), ok());
    let dump = c.q("DUMP src").bytes().to_vec();
    for at in [dump.len() / 4, dump.len() / 2, dump.len() - 20] {
        let mut bad = dump.clone();
        bad[at] ^= 0x55;
        let r = c.call(&[b"RESTORE".as_slice(), b"lzf", b"0", &bad]);
        assert_eq!(r.err(), "ERR Bad data format", "damaged at {at}");
        assert_eq!(c.q("EXISTS lzf"), R::Int(0));
    }
    assert!(s.alive());
    assert_eq!(c.q("CF.COUNT src item7"), R::Int(1));

    // Huge capacities: errors, no key.
    assert_eq!(
        c.q("CF.RESERVE huge 4611686018427387904").err(),
        "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]"
    );
    assert_eq!(
        c.q("CF.INSERT huge CAPACITY 4611686018427387904 ITEMS a")
            .err(),
        "Capacity must be in the range [cf-bucket-size * 2, 1073741824]"
    );
    assert_eq!(
        c.q("BF.RESERVE huge 0.01 4611686018427387904").err(),
        "ERR capacity must be in the range [1, 1073741824]"
    );
    // An error rate no layout meets (below 2^-32): refused, as RedisBloom refuses a filter it
    // cannot create.
    assert_eq!(
        c.q("BF.RESERVE tiny 1e-300 100").err(),
        "ERR could not create filter"
    );
    assert_eq!(c.q("EXISTS huge tiny"), R::Int(0));
}

#[test]
fn random_operations_match_an_exact_model() {
    let dir = tmp();
    let s = Server::start(dir.path(), &[]);
    let mut c = s.client();
    let mut rng = Rng(42);
    assert_eq!(c.q("CF.RESERVE m 64"), ok()); // grows about a hundredfold
    let mut model: HashMap<String, i64> = HashMap::new();
    for step in 0..6000 {
        let item = format!("i{}", rng.below(3000));
        let count = model.get(&item).copied().unwrap_or(0);
        match rng.below(10) {
            0..=3 => match c.call(&["CF.ADD", "m", &item]) {
                R::Int(1) => *model.entry(item).or_default() += 1,
                R::Err(e) => {
                    assert_eq!(e, "Filter is full");
                    assert!(count >= 1, "{item} refused with {count} copies");
                }
                other => panic!("{other:?}"),
            },
            4 if count > 0 => {
                assert_eq!(
                    c.call(&["CF.DEL", "m", &item]),
                    R::Int(1),
                    "step {step}: {item}"
                );
                *model.get_mut(&item).unwrap() -= 1;
            }
            5 => {
                let r = c.call(&["CF.ADDNX", "m", &item]).int();
                if count > 0 {
                    assert_eq!(r, 0);
                } else if r == 1 {
                    model.insert(item, 1);
                }
            }
            6 | 7 => {
                let n = c.call(&["CF.COUNT", "m", &item]).int();
                assert!(n >= count, "step {step}: {item} counted {n}, holds {count}");
            }
            _ => {
                let e = c.call(&["CF.EXISTS", "m", &item]).int();
                assert!(
                    count == 0 || e == 1,
                    "step {step}: a false negative for {item}"
                );
            }
        }
    }
    // Every present item, through a reload.
    assert_eq!(c.q("DEBUG RELOAD"), ok());
    let inserted: i64 = model.values().sum();
    assert_eq!(
        c.q("CF.INFO m").field("Number of items inserted"),
        R::Int(inserted)
    );
    for (item, &count) in &model {
        if count > 0 {
            assert!(c.call(&["CF.COUNT", "m", item]).int() >= count, "{item}");
        }
    }
}

#[test]
fn a_replica_holds_the_same_bytes_as_its_primary() {
    let dir = tmp();
    let primary = Server::start(dir.path(), &["--repl-diskless-sync-delay", "0"]);
    let mut p = primary.client();
    // Before the replica: it gets these keys in the full sync's RDB.
    let keys = populate(&mut p);
    let port = primary.port.to_string();
    let replica = Server::start(dir.path(), &["--replicaof", "127.0.0.1", &port]);
    let mut r = replica.client();
    wait_for_link(&mut r);
    // After: it gets these as commands.
    for i in 0..500 {
        let item = format!("late{i}");
        p.call(&["CF.ADD", "cf:grow", &item]);
        p.call(&["CF.ADDNX", "cf:new", &item]);
        p.call(&["BF.MADD", "bf:grow", &item, "item1"]);
        p.call(&["BF.INSERT", "bf:new", "CAPACITY", "50", "ITEMS", &item]);
        if i % 3 == 0 {
            assert_eq!(p.call(&["CF.DEL", "cf:grow", &item]), R::Int(1));
        }
    }
    for (iter, data) in scandump(&mut p, "CF", "cf:fixed") {
        p.call(&[
            b"CF.LOADCHUNK".as_slice(),
            b"cf:copy",
            iter.to_string().as_bytes(),
            &data,
        ]);
    }
    assert_eq!(p.q("WAIT 1 10000"), R::Int(1));
    let mut all = keys.clone();
    all.extend(["cf:new", "bf:new", "cf:copy"].map(String::from));
    for key in &all {
        let kind = &key[..2].to_uppercase();
        assert_eq!(
            scandump(&mut r, kind, key),
            scandump(&mut p, kind, key),
            "{key}"
        );
    }
    assert_eq!(answers(&mut r, &keys), answers(&mut p, &keys));
    assert_eq!(
        r.q("CF.ADD cf:grow x").err(),
        "READONLY You can't write against a read only replica."
    );
}

fn wait_for_link(c: &mut server::Client) {
    for _ in 0..1000 {
        let R::Bulk(info) = c.q("INFO replication") else {
            panic!("INFO")
        };
        if String::from_utf8_lossy(&info).contains("master_link_status:up") {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("the replica did not connect");
}

#[test]
fn resp3_clients_get_redisblooms_booleans_and_maps() {
    let dir = tmp();
    let s = Server::start(dir.path(), &[]);
    let mut c = s.client();
    assert!(matches!(c.q("HELLO 3"), R::Map(_)));
    let t = R::Bool(true);
    let f = R::Bool(false);
    assert_eq!(c.q("CF.RESERVE c 4 EXPANSION 0"), ok());
    assert_eq!(c.q("CF.ADD c a"), t);
    assert_eq!(c.q("CF.ADDNX c a"), f);
    assert_eq!(
        c.q("CF.INSERT c ITEMS b a"),
        R::Array(vec![t.clone(), t.clone()])
    );
    assert_eq!(
        c.q("CF.INSERTNX c ITEMS a d"),
        R::Array(vec![R::Int(0), R::Int(1)])
    );
    assert_eq!(c.q("CF.EXISTS c a"), t);
    assert_eq!(c.q("CF.EXISTS missing a"), f);
    assert_eq!(
        c.q("CF.MEXISTS c a zz"),
        R::Array(vec![t.clone(), f.clone()])
    );
    assert_eq!(c.q("CF.COUNT c a"), R::Int(2));
    assert_eq!(c.q("CF.DEL c a"), t);
    assert_eq!(c.q("CF.DEL c zz"), f);
    // Full: false from CF.INSERT, -1 from CF.INSERTNX.
    let mut i = 0;
    while c.call(&["CF.ADD", "c", &format!("k{i}")]) == t {
        i += 1;
    }
    let items: Vec<String> = (0..50).map(|j| format!("x{j}")).collect();
    let mut insert = vec!["CF.INSERT".to_string(), "c".into(), "ITEMS".into()];
    insert.extend(items.iter().cloned());
    let R::Array(replies) = c.call(&insert) else {
        panic!("an array")
    };
    assert!(replies.iter().all(|r| matches!(r, R::Bool(_))) && replies.contains(&f));
    insert[0] = "CF.INSERTNX".into();
    insert[3..].iter_mut().for_each(|x| x.insert(0, 'n'));
    let R::Array(replies) = c.call(&insert) else {
        panic!("an array")
    };
    assert!(replies.iter().all(|r| matches!(r, R::Int(-1 | 1))) && replies.contains(&R::Int(-1)));
    let info = c.q("CF.INFO c");
    assert!(matches!(info, R::Map(_)));
    assert_eq!(
        info.field("Bucket size"),
        R::Int(c.q("CF.INFO c").field("Bucket size").int())
    );

    assert_eq!(c.q("BF.ADD b a"), t);
    assert_eq!(c.q("BF.MADD b a c"), R::Array(vec![f.clone(), t.clone()]));
    assert_eq!(c.q("BF.EXISTS b a"), t);
    assert_eq!(
        c.q("BF.MEXISTS b a zz"),
        R::Array(vec![t.clone(), f.clone()])
    );
    assert!(matches!(c.q("BF.INFO b"), R::Map(_)));
    assert_eq!(
        c.q("BF.INFO b items"),
        R::Map(vec![
            R::Simple("Number of items inserted".into()),
            R::Int(2)
        ])
    );
    assert_eq!(c.q("BF.RESERVE n 0.01 10 NONSCALING"), ok());
    assert_eq!(
        c.q("BF.INFO n expansion"),
        R::Map(vec![R::Simple("Expansion rate".into()), R::Nil])
    );
}

/// `INFO memory`'s `used_memory`.
fn used_memory(c: &mut server::Client) -> i64 {
    let R::Bulk(info) = c.q("INFO memory") else {
        panic!("INFO memory")
    };
    let info = String::from_utf8(info).expect("utf-8");
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .expect("used_memory")
        .trim()
        .parse()
        .expect("a number")
}

/// The module's filters are allocated by the server (its `alloc` module): `used_memory` rises
/// by at least a key's `MEMORY USAGE` when a filter is made, also when a growable key grows
/// past 1 MiB (kept on the heap, not in an anonymous map the server cannot see), and falls
/// back when the keys are deleted; a filter larger than `maxmemory` is refused.
#[test]
fn used_memory_counts_the_filters() {
    let dir = tmp();
    let s = Server::start(dir.path(), &[]);
    let mut c = s.client();
    let before = used_memory(&mut c);
    assert_eq!(c.q("CF.RESERVE fixed 1000000 EXPANSION 0"), ok());
    assert_eq!(c.q("BF.RESERVE grown 0.01 1000"), ok());
    let mut items = 0;
    while c.call(&["MEMORY", "USAGE", "grown"]).int() < 3 << 20 {
        // A key of 3 MiB holds far fewer: a MEMORY USAGE that does not grow fails, not hangs.
        assert!(items < 2_000_000, "MEMORY USAGE stayed below 3 MiB");
        let mut args = vec!["BF.MADD".to_string(), "grown".into()];
        args.extend((items..items + 5000).map(|i| format!("item{i}")));
        items += 5000;
        let replies = c.call(&args).ints();
        assert!(replies.iter().all(|&r| r == 0 || r == 1), "{replies:?}");
    }
    let usage =
        c.call(&["MEMORY", "USAGE", "fixed"]).int() + c.call(&["MEMORY", "USAGE", "grown"]).int();
    let after = used_memory(&mut c);
    assert!(
        after - before >= usage,
        "used_memory rose {} for keys of {usage} bytes",
        after - before
    );
    // Not wildly more either: the growable key's table reserves up to half again ahead.
    assert!(
        after - before < 2 * usage,
        "used_memory rose {} for {usage}",
        after - before
    );
    for i in (0..items).step_by(997) {
        assert_eq!(
            c.call(&["BF.EXISTS", "grown", &format!("item{i}")]),
            R::Int(1)
        );
    }
    assert_eq!(c.q("DEL fixed grown"), R::Int(2));
    let freed = used_memory(&mut c);
    assert!(
        freed - before < 1 << 20,
        "{freed} after DEL, {before} before"
    );

    // A filter larger than maxmemory is refused before it is made (a smaller one is left to
    // the server's own maxmemory policy, as any value is).
    let maxmemory = freed + (2 << 20);
    assert_eq!(c.q(&format!("CONFIG SET maxmemory {maxmemory}")), ok());
    let e = c.q("CF.RESERVE m 3000000 EXPANSION 0").err().to_string();
    assert!(
        e.starts_with("ERR the filter would take ")
            && e.contains(&format!("more than maxmemory ({maxmemory})")),
        "{e}"
    );
    assert_eq!(c.q("EXISTS m"), R::Int(0));
    assert_eq!(c.q("CF.RESERVE m 300000 EXPANSION 0"), ok());
    // The bound itself, through a LOADCHUNK header (nothing allocated for its bytes yet):
    // a filter of exactly maxmemory bytes is allowed, one byte more refused.
    let R::Array(first) = c.q("CF.SCANDUMP m 0") else {
        panic!("SCANDUMP")
    };
    let mut header = first[1].bytes().to_vec();
    header[16..24].copy_from_slice(&(maxmemory as u64 + 1).to_le_bytes());
    let e = c
        .call(&[b"CF.LOADCHUNK".as_slice(), b"copy", b"1", &header])
        .err()
        .to_string();
    assert!(
        e.contains(&format!("more than maxmemory ({maxmemory})")),
        "{e}"
    );
    header[16..24].copy_from_slice(&(maxmemory as u64).to_le_bytes());
    assert_eq!(
        c.call(&[b"CF.LOADCHUNK".as_slice(), b"copy", b"1", &header]),
        ok()
    );
}

/// `MAX_KEY_BYTES` and the other load-time arguments: a filter larger than the limit is
/// refused before it is made, at any command that makes one (`*.RESERVE`, the adds that
/// create, `LOADCHUNK`'s header); a growable key stops growing at it (its inserts answer as a
/// full filter's, and every item it took is still found); a filter larger than `maxmemory` is
/// an unknown argument stops the module from loading.
#[test]
fn max_key_bytes_and_maxmemory_refuse_filters_too_large() {
    let dir = tmp();
    let limit = 1_000_000i64;
    let s = Server::start(
        dir.path(),
        &[
            "MAX_KEY_BYTES",
            "1000000",
            "INITIAL_SIZE",
            "5000",
            "ERROR_RATE",
            "0.001",
        ],
    );
    let mut c = s.client();
    let too_large = |r: R| {
        let e = r.err().to_string();
        assert!(
            e.starts_with("ERR the filter would take ") && e.contains("MAX_KEY_BYTES (1000000)"),
            "{e}"
        );
    };
    too_large(c.q("CF.RESERVE a 1000000"));
    too_large(c.q("CF.RESERVE a 1000000 EXPANSION 0"));
    too_large(c.q("BF.RESERVE a 0.01 1000000"));
    too_large(c.q("BF.RESERVE a 0.01 1000000 NONSCALING"));
    too_large(c.q("CF.INSERT a CAPACITY 1000000 ITEMS x"));
    too_large(c.q("BF.INSERT a CAPACITY 1000000 ITEMS x"));
    assert_eq!(c.q("EXISTS a"), R::Int(0));

    // INITIAL_SIZE and ERROR_RATE set the BF keys the adds create.
    assert_eq!(c.q("BF.ADD made x"), R::Int(1));
    assert!(c.q("BF.INFO made CAPACITY").ints()[0] >= 5000);
    let bound = |c: &mut server::Client, key: &str| match c
        .call(&["BF.INFO", key])
        .field("Error rate bound")
    {
        R::Simple(s) => s.parse::<f64>().unwrap(),
        other => panic!("{other:?}"),
    };
    assert!(bound(&mut c, "made") <= 0.001);

    // A growable key grows up to the limit, then answers as a full filter, losing nothing.
    assert_eq!(c.q("CF.RESERVE g 10000"), ok());
    let mut taken = Vec::new();
    let mut refused = 0;
    let mut next = 0;
    while refused < 1000 {
        let mut args = vec!["CF.INSERT".to_string(), "g".into(), "ITEMS".into()];
        let batch: Vec<String> = (next..next + 2000).map(|i| format!("g{i}")).collect();
        next += 2000;
        args.extend(batch.iter().cloned());
        for (item, r) in batch.into_iter().zip(c.call(&args).ints()) {
            match r {
                1 => taken.push(item),
                -1 => refused += 1,
                other => panic!("{other}"),
            }
        }
        assert!(next < 3_000_000, "never refused");
    }
    let size = c.q("CF.INFO g").field("Size").int();
    assert!(size <= limit + 1024, "Size {size} past the limit");
    assert!(size > limit / 2, "stopped early: {size}");
    assert_eq!(c.q("CF.ADD g one-more").err(), "Filter is full");
    for chunk in taken.chunks(5000) {
        let mut args = vec!["CF.MEXISTS".to_string(), "g".into()];
        args.extend(chunk.iter().cloned());
        assert!(c.call(&args).ints().iter().all(|&r| r == 1));
    }

    // LOADCHUNK: a header announcing more bytes than the limit is refused, nothing made.
    assert_eq!(c.q("CF.RESERVE small 1000"), ok());
    let R::Array(first) = c.q("CF.SCANDUMP small 0") else {
        panic!("SCANDUMP")
    };
    let mut header = first[1].bytes().to_vec();
    header[16..24].copy_from_slice(&(limit as u64 + 1).to_le_bytes());
    too_large(c.call(&[b"CF.LOADCHUNK".as_slice(), b"copy", b"1", &header]));
    assert_eq!(c.q("EXISTS copy"), R::Int(0));
    // Exactly the limit is allowed (the key is made, to be loaded).
    header[16..24].copy_from_slice(&(limit as u64).to_le_bytes());
    assert_eq!(
        c.call(&[b"CF.LOADCHUNK".as_slice(), b"copy", b"1", &header]),
        ok()
    );
    assert_eq!(c.q("DEL copy"), R::Int(1));

    drop(s);

    // An unknown or malformed argument: the module does not load, and says why.
    for args in [
        &["NO_SUCH", "1"][..],
        &["MAX_KEY_BYTES", "-1"],
        &["ERROR_RATE"],
    ] {
        let dir = tmp();
        let log = dir.path().join("redis.log");
        let port = std::net::TcpListener::bind(("127.0.0.1", 0))
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let status = std::process::Command::new(server::redis_server())
            .arg("--port")
            .arg(port.to_string())
            .args(["--save", "", "--logfile"])
            .arg(&log)
            .arg("--loadmodule")
            .arg(server::module())
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .expect("run redis-server");
        assert!(!status.success(), "{args:?} loaded");
        let log = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(log.contains("cuckoo-sst:"), "{args:?}: {log}");
    }
}

/// A Python that imports redis-py: `REDIS_PYTHON`, `/usr/bin/python3` or `python3`, after
/// `scripts/install-redis` if none does.
fn redis_py() -> std::path::PathBuf {
    let works = |py: &std::path::Path| {
        std::process::Command::new(py)
            .args(["-c", "import redis.commands.bf"])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let candidates = || {
        std::env::var_os("REDIS_PYTHON")
            .into_iter()
            .map(std::path::PathBuf::from)
            .chain(["/usr/bin/python3", "python3"].map(std::path::PathBuf::from))
    };
    if let Some(py) = candidates().find(|p| works(p)) {
        return py;
    }
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/install-redis");
    let status = std::process::Command::new(&script)
        .status()
        .unwrap_or_else(|e| panic!("running {}: {e}", script.display()));
    assert!(status.success(), "{} failed", script.display());
    candidates()
        .find(|p| works(p))
        .expect("no python3 imports redis-py, and scripts/install-redis could not install it")
}

/// A client written for RedisBloom works unchanged: redis-py's `cf()` and `bf()` commands, with
/// their reply parsers (`CFInfo`, `BFInfo`) and the `SCANDUMP`/`LOADCHUNK` loop of its docs
/// (`tests/redis_py.py`, which asserts every reply).
#[test]
fn redis_py_bloom_and_cuckoo_commands_work_unchanged() {
    let dir = tmp();
    let s = Server::start(dir.path(), &[]);
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/redis_py.py");
    let out = std::process::Command::new(redis_py())
        .arg(&script)
        .arg(s.port.to_string())
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(" ok"));
}

/// A filter the machine cannot hold is an error reply, not a crash: the module allocates with
/// `RedisModule_TryAlloc`, which returns null where `RedisModule_Alloc` stops the server. Here
/// the server runs with 600 MB of address space (`prlimit --as`) and no `MAX_KEY_BYTES`.
#[test]
fn a_filter_too_large_for_memory_is_an_error_not_a_crash() {
    let dir = tmp();
    let s = Server::start_under(
        dir.path(),
        &["prlimit", "--as=600000000", "--"],
        &["MAX_KEY_BYTES", "0"],
    );
    let mut c = s.client();
    assert_eq!(c.q("CF.RESERVE small 100000"), ok());
    assert_eq!(c.q("CF.ADD small kept"), R::Int(1));
    for cmd in [
        "CF.RESERVE big 1000000000 EXPANSION 0",
        "CF.RESERVE big 1000000000",
        "BF.RESERVE big 0.0001 500000000 NONSCALING",
        "BF.RESERVE big 0.0001 500000000",
    ] {
        assert_eq!(
            c.q(cmd).err(),
            "ERR Insufficient memory to create filter",
            "{cmd}"
        );
    }
    assert_eq!(c.q("PING"), R::Simple("PONG".into()));
    assert_eq!(c.q("EXISTS big"), R::Int(0));
    assert_eq!(c.q("CF.EXISTS small kept"), R::Int(1));
    assert_eq!(c.q("CF.RESERVE after 100000"), ok());
}

/// The size limits apply where a key is written, never where it is replayed: a replica run
/// with a lower `MAX_KEY_BYTES` and `maxmemory` than its primary still gets every key the
/// primary made (by command and by `LOADCHUNK`), and a server restarted from its AOF with a
/// lower limit still has the keys it accepted before. Refusing them there would leave a key
/// missing: every item in it a false negative.
#[test]
fn limits_never_refuse_what_a_replica_or_the_aof_replays() {
    let dir = tmp();
    let primary = Server::start(dir.path(), &["--repl-diskless-sync-delay", "0"]);
    let mut p = primary.client();
    let port = primary.port.to_string();
    let replica = Server::start(
        dir.path(),
        &[
            "MAX_KEY_BYTES",
            "100000",
            "--maxmemory",
            "50mb",
            "--replicaof",
            "127.0.0.1",
            &port,
        ],
    );
    let mut r = replica.client();
    wait_for_link(&mut r);
    // Each of these is above the replica's limit (the fixed CF key of 100 000 items takes
    // about 119 kB).
    assert_eq!(p.q("CF.RESERVE fixed 100000 EXPANSION 0"), ok());
    assert_eq!(p.q("BF.RESERVE grow 0.001 200000"), ok());
    assert_eq!(p.q("CF.ADD fixed a"), R::Int(1));
    assert_eq!(p.q("BF.ADD grow a"), R::Int(1));
    for (iter, data) in scandump(&mut p, "CF", "fixed") {
        p.call(&[
            b"CF.LOADCHUNK".as_slice(),
            b"copy",
            iter.to_string().as_bytes(),
            &data,
        ]);
    }
    assert_eq!(p.q("WAIT 1 10000"), R::Int(1));
    for (kind, key) in [("CF", "fixed"), ("CF", "copy")] {
        // The same bytes, not merely an answer: a refused reserve followed by an add would
        // leave a small key made by the add.
        assert_eq!(
            scandump(&mut r, kind, key),
            scandump(&mut p, kind, key),
            "{key} on the replica"
        );
        assert_eq!(r.call(&["CF.EXISTS", key, "a"]), R::Int(1), "{key}");
    }
    // The growable key: the same table (its growth limit, kept in its header, is the
    // replica's own: none, as its limit is below the key's size).
    for field in ["Size", "Capacity", "Number of items inserted"] {
        assert_eq!(
            r.q("BF.INFO grow").field(field),
            p.q("BF.INFO grow").field(field),
            "grow's {field} on the replica"
        );
    }
    assert_eq!(r.q("BF.EXISTS grow a"), R::Int(1));
    drop(r);
    drop(replica);

    // The AOF: written without a limit, replayed under one.
    let mut s = Server::start(dir.path(), &["--appendonly", "yes"]);
    let mut c = s.client();
    assert_eq!(c.q("CF.RESERVE fixed 100000 EXPANSION 0"), ok());
    assert_eq!(c.q("CF.ADD fixed a"), R::Int(1));
    drop(c);
    s.restart_with(&["MAX_KEY_BYTES", "100000", "--appendonly", "yes"]);
    let mut c = s.client();
    assert_eq!(c.q("CF.EXISTS fixed a"), R::Int(1), "the key the AOF held");
    assert!(
        c.q("CF.INFO fixed").field("Size").int() > 100_000,
        "the key the AOF held, not one an add made"
    );
    let e = c.q("CF.RESERVE other 100000 EXPANSION 0").err().to_string();
    assert!(e.contains("MAX_KEY_BYTES (100000)"), "{e}");
}
