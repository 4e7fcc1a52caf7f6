//! The CF.* and BF.* commands: RedisBloom's argument syntax, replies and error strings (from
//! RedisBloom's `src/rebloom.c` and `src/config.c`), over cuckoo-sst filters.

use cuckoo_sst::{Config, CuckooFilter, Error, ScalableCuckooFilter};

use crate::ffi::{Arg, Ctx, DataType, Holds, Key};
use crate::settings;
use crate::value::{Added, ChunkError, Filter, Header, Meta, Value, scan_chunk};

/// The data type of CF keys.
pub static CF_TYPE: DataType<Value> = DataType::new();
/// The data type of BF keys.
pub static BF_TYPE: DataType<Value> = DataType::new();

/// RedisBloom's limits (`src/config.c`), its defaults where cuckoo-sst has no reason to differ.
const MAX_CAPACITY: i64 = 1 << 30;
const CF_DEFAULT_CAPACITY: i64 = 1024;
const CF_MIN_CAPACITY: i64 = 4;
const BF_ERROR_RATE_CAP: f64 = 0.25;
const BF_DEFAULT_EXPANSION: i64 = 2;
const CF_DEFAULT_EXPANSION: i64 = 1;
const MAX_EXPANSION: i64 = 32768;
const MAX_ITERATIONS: i64 = 65535;
const MAX_BUCKET_SIZE: i64 = 255;
/// The false-positive target of CF keys (RedisBloom's 8-bit fingerprints give about
/// `2b/255`: 1.6 % at its default two slots a bucket).
const CF_ERROR_RATE: f64 = 0.01;

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const LOADING: &str = "ERR the filter is being restored with LOADCHUNK";

/// CF or BF.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// CF.* keys.
    Cf,
    /// BF.* keys.
    Bf,
}

impl Kind {
    fn data_type(self) -> &'static DataType<Value> {
        match self {
            Kind::Cf => &CF_TYPE,
            Kind::Bf => &BF_TYPE,
        }
    }
}

/// What a key holds, as RedisBloom's `getValue` tells it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Status {
    Empty,
    Found,
    Mismatch,
}

/// RedisBloom's `statusStrerror`.
fn strerror(s: Status) -> &'static str {
    match s {
        Status::Empty => "ERR not found",
        Status::Mismatch => WRONGTYPE,
        Status::Found => "ERR item exists",
    }
}

fn status(key: &mut Key, kind: Kind) -> Status {
    match key.holds(kind.data_type()) {
        Holds::Empty => Status::Empty,
        Holds::Value(_) => Status::Found,
        Holds::Other => Status::Mismatch,
    }
}

/// The value of a key whose status is `Found`.
fn value(key: &mut Key, kind: Kind) -> &mut Value {
    match key.holds(kind.data_type()) {
        Holds::Value(v) => v,
        _ => unreachable!("called after `status` found a value"),
    }
}

/// The index of `word` among `args[from..]`, ignoring case (RedisBloom's `RMUtil_ArgIndex`).
fn arg_index(args: &[Arg], from: usize, word: &str) -> Option<usize> {
    (from..args.len()).find(|&i| args[i].is(word))
}

fn store(ctx: Ctx, key: &mut Key, kind: Kind, v: Value) -> bool {
    if key.set_value(kind.data_type(), Box::new(v)).is_err() {
        ctx.error("ERR could not store the filter");
        return false;
    }
    true
}

/// Why a filter was not made.
enum CreateError {
    /// Larger than `MAX_KEY_BYTES` or `maxmemory`: the reply says which.
    TooLarge(String),
    /// The library refused (a layout no slot width meets, out of memory).
    Filter(Error),
}

impl From<Error> for CreateError {
    fn from(e: Error) -> CreateError {
        CreateError::Filter(e)
    }
}

/// The reply when making a filter fails: RedisBloom's for its failures, a clear error for a
/// filter the limits forbid.
fn create_error(ctx: Ctx, kind: Kind, e: &CreateError) {
    let e = match e {
        CreateError::TooLarge(msg) => return ctx.error(msg),
        CreateError::Filter(e) => e,
    };
    ctx.log(
        c"warning",
        &format!("cuckoo-sst: could not create a filter: {e}"),
    );
    match (e, kind) {
        (Error::OutOfMemory { .. }, _) => ctx.error("ERR Insufficient memory to create filter"),
        (_, Kind::Cf) => ctx.error("ERR Could not create filter"),
        (_, Kind::Bf) => ctx.error("ERR could not create filter"),
    }
}

/// `Err` with the reply when a filter of `bytes` bytes is larger than the module's
/// `MAX_KEY_BYTES` or the server's `maxmemory`: checked before its memory is touched. Never
/// for a command the server replays (from its primary, or from its AOF at load): the key was
/// accepted where it was written, and refusing it here would leave a replica or a restarted
/// server without it (a replica may run with a lower `maxmemory`, or other module arguments).
fn check_size(ctx: Ctx, bytes: u64) -> Result<(), CreateError> {
    if ctx.replayed() {
        return Ok(());
    }
    let limit = settings::get().max_key_bytes;
    if limit != 0 && bytes > limit {
        return Err(CreateError::TooLarge(format!(
            "ERR the filter would take {bytes} bytes, more than MAX_KEY_BYTES ({limit}): \
             lower the capacity or raise the module's MAX_KEY_BYTES"
        )));
    }
    let maxmemory = ctx.maxmemory();
    if maxmemory != 0 && bytes > maxmemory {
        return Err(CreateError::TooLarge(format!(
            "ERR the filter would take {bytes} bytes, more than maxmemory ({maxmemory})"
        )));
    }
    Ok(())
}

/// A fixed filter, or a growable one that stops growing at `MAX_KEY_BYTES`, once its size
/// passed [`check_size`].
fn make_filter(ctx: Ctx, config: Config, growable: bool) -> Result<Filter, CreateError> {
    if growable {
        let size = ScalableCuckooFilter::size_for(&config)? as u64;
        check_size(ctx, size)?;
        // A replayed key above this server's limit (its primary's was higher) grows without
        // one rather than not being made.
        let limit = match settings::get().max_key_bytes {
            limit if ctx.replayed() && size > limit => 0,
            limit => limit,
        };
        let config = config.max_bytes(limit);
        Ok(Filter::Growable(ScalableCuckooFilter::new(config)?))
    } else {
        check_size(ctx, config.size_in_bytes()? as u64)?;
        Ok(Filter::Fixed(CuckooFilter::new(config)?))
    }
}

/// Settings of a new CF key.
struct CfParams {
    capacity: i64,
    bucket_size: Option<usize>,
    max_iterations: Option<i64>,
    expansion: i64,
}

/// The cuckoo-sst bucket size for RedisBloom's 1..=255: 2, 4 or 8, the nearest at or above
/// (8 above 8).
fn bucket_size_for(b: i64) -> usize {
    match b {
        ..=2 => 2,
        3..=4 => 4,
        _ => 8,
    }
}

fn new_cf(ctx: Ctx, p: &CfParams) -> Result<Value, CreateError> {
    let mut config = Config::new(p.capacity as usize).false_positive_rate(CF_ERROR_RATE);
    if let Some(b) = p.bucket_size {
        config = config.bucket_size(b);
    }
    if let Some(m) = p.max_iterations {
        config = config.max_kicks(m as u32);
    }
    let max_iterations = p
        .max_iterations
        .map_or(u64::from(cuckoo_sst::DEFAULT_MAX_KICKS), |m| m as u64);
    let filter = make_filter(ctx, config, p.expansion != 0)?;
    Ok(Value::new(
        filter,
        Meta {
            bloom: false,
            expansion: p.expansion as u64,
            deleted: 0,
            max_iterations,
        },
    ))
}

fn new_bf(
    ctx: Ctx,
    capacity: i64,
    error_rate: f64,
    expansion: Option<i64>,
) -> Result<Value, CreateError> {
    let config = Config::new(capacity as usize).false_positive_rate(error_rate);
    let filter = make_filter(ctx, config, expansion.is_some())?;
    Ok(Value::new(
        filter,
        Meta {
            bloom: true,
            expansion: expansion.unwrap_or(0) as u64,
            deleted: 0,
            max_iterations: u64::from(cuckoo_sst::DEFAULT_MAX_KICKS),
        },
    ))
}

/// `CF.RESERVE key capacity [BUCKETSIZE b] [MAXITERATIONS m] [EXPANSION e]`.
pub fn cf_reserve(ctx: Ctx, args: &[Arg]) {
    if args.len() < 3 || args.len().is_multiple_of(2) {
        return ctx.wrong_arity();
    }
    let Some(capacity) = args[2].to_i64() else {
        return ctx.error("Bad capacity");
    };
    let option = |word: &str| arg_index(args, 3, word).map(|i| args.get(i + 1));
    let mut p = CfParams {
        capacity,
        bucket_size: None,
        max_iterations: None,
        expansion: CF_DEFAULT_EXPANSION,
    };
    if let Some(v) = option("MAXITERATIONS") {
        let Some(m) = v.and_then(Arg::to_i64) else {
            return ctx.error("Couldn't parse MAXITERATIONS");
        };
        if !(1..=MAX_ITERATIONS).contains(&m) {
            return ctx.error(&format!(
                "MAXITERATIONS: value must be in the range [1, {MAX_ITERATIONS}]"
            ));
        }
        p.max_iterations = Some(m);
    }
    let mut bucket_size = 2;
    if let Some(v) = option("BUCKETSIZE") {
        let Some(b) = v.and_then(Arg::to_i64) else {
            return ctx.error("Couldn't parse BUCKETSIZE");
        };
        if !(1..=MAX_BUCKET_SIZE).contains(&b) {
            return ctx.error(&format!(
                "BUCKETSIZE: value must be in the range [1, {MAX_BUCKET_SIZE}]"
            ));
        }
        bucket_size = b;
        p.bucket_size = Some(bucket_size_for(b));
    }
    if let Some(v) = option("EXPANSION") {
        let Some(e) = v.and_then(Arg::to_i64) else {
            return ctx.error("Couldn't parse EXPANSION");
        };
        if !(0..=MAX_EXPANSION).contains(&e) {
            return ctx.error(&format!(
                "EXPANSION: value must be in the range [0, {MAX_EXPANSION}]"
            ));
        }
        p.expansion = e;
    }
    if bucket_size * 2 > capacity || capacity > MAX_CAPACITY {
        return ctx.error(&format!(
            "Capacity must be in the range [2 * BUCKETSIZE, {MAX_CAPACITY}]"
        ));
    }
    let mut key = ctx.open_key(args[1], true);
    let s = status(&mut key, Kind::Cf);
    if s != Status::Empty {
        return ctx.error(strerror(s));
    }
    match new_cf(ctx, &p) {
        Ok(v) => {
            if store(ctx, &mut key, Kind::Cf, v) {
                ctx.replicate_verbatim();
                ctx.simple("OK");
            }
        }
        Err(e) => create_error(ctx, Kind::Cf, &e),
    }
}

/// The options of `CF.ADD`/`CF.INSERT` and their NX forms.
struct CfInsert {
    nx: bool,
    multi: bool,
    autocreate: bool,
    capacity: i64,
}

fn cf_insert_common(ctx: Ctx, key_arg: Arg, items: &[Arg], o: &CfInsert) {
    let mut key = ctx.open_key(key_arg, true);
    match status(&mut key, Kind::Cf) {
        Status::Empty if o.autocreate => {
            let p = CfParams {
                capacity: o.capacity,
                bucket_size: None,
                max_iterations: None,
                expansion: CF_DEFAULT_EXPANSION,
            };
            match new_cf(ctx, &p) {
                Ok(v) => {
                    if !store(ctx, &mut key, Kind::Cf, v) {
                        return;
                    }
                }
                Err(e) => return create_error(ctx, Kind::Cf, &e),
            }
        }
        Status::Found => {}
        s => return ctx.error(strerror(s)),
    }
    let Some(filter) = value(&mut key, Kind::Cf).filter_mut() else {
        return ctx.error(LOADING);
    };
    if o.multi {
        ctx.array(items.len());
    }
    // RESP3 clients get booleans, but from CF.INSERTNX, as from RedisBloom.
    let booleans = ctx.resp3() && !(o.nx && o.multi);
    let reply = |n: i64| {
        if booleans {
            ctx.boolean(n == 1);
        } else {
            ctx.int(n);
        }
    };
    for item in items {
        match filter.add(item.bytes(), o.nx) {
            Added::Yes => reply(1),
            Added::Exists => reply(0),
            Added::Full if !o.multi => {
                ctx.error("Filter is full");
                break;
            }
            Added::NoMemory if !o.multi => {
                ctx.error("ERR Insufficient memory");
                break;
            }
            Added::Full | Added::NoMemory => reply(-1),
        }
    }
    ctx.replicate_verbatim();
}

/// `CF.ADD key item` and `CF.ADDNX key item`.
pub fn cf_add(ctx: Ctx, args: &[Arg]) {
    if args.len() != 3 {
        return ctx.wrong_arity();
    }
    let o = CfInsert {
        nx: args[0]
            .bytes()
            .last()
            .is_some_and(|c| c.eq_ignore_ascii_case(&b'x')),
        multi: false,
        autocreate: true,
        capacity: CF_DEFAULT_CAPACITY,
    };
    cf_insert_common(ctx, args[1], &args[2..], &o);
}

/// `CF.INSERT key [CAPACITY c] [NOCREATE] ITEMS item…` and `CF.INSERTNX`.
pub fn cf_insert(ctx: Ctx, args: &[Arg]) {
    if args.len() < 4 {
        return ctx.wrong_arity();
    }
    let mut o = CfInsert {
        nx: args[0]
            .bytes()
            .last()
            .is_some_and(|c| c.eq_ignore_ascii_case(&b'x')),
        multi: true,
        autocreate: true,
        capacity: CF_DEFAULT_CAPACITY,
    };
    let mut pos = 2;
    let mut items = None;
    while pos < args.len() && items.is_none() {
        match args[pos].bytes().first().map(u8::to_ascii_lowercase) {
            Some(b'c') => {
                pos += 1;
                if pos == args.len() {
                    return ctx.wrong_arity();
                }
                let Some(c) = args[pos].to_i64() else {
                    return ctx.error("Bad capacity");
                };
                if !(CF_MIN_CAPACITY..=MAX_CAPACITY).contains(&c) {
                    return ctx.error(&format!(
                        "Capacity must be in the range [cf-bucket-size * 2, {MAX_CAPACITY}]"
                    ));
                }
                o.capacity = c;
                pos += 1;
            }
            Some(b'i') => {
                pos += 1;
                items = Some(pos);
            }
            Some(b'n') => {
                o.autocreate = false;
                pos += 1;
            }
            _ => return ctx.error("Unknown argument received"),
        }
    }
    match items {
        Some(i) if i < args.len() => cf_insert_common(ctx, args[1], &args[i..], &o),
        _ => ctx.wrong_arity(),
    }
}

/// `CF.EXISTS`, `CF.MEXISTS`, `CF.COUNT`: a missing key (or one of another type) answers 0,
/// as in RedisBloom.
pub fn cf_check(ctx: Ctx, args: &[Arg]) {
    let name = args.first().map_or(&[][..], Arg::bytes);
    let multi = name.get(3).is_some_and(|c| c.eq_ignore_ascii_case(&b'm'));
    let count = name.last().is_some_and(|c| c.eq_ignore_ascii_case(&b't'));
    check(ctx, args, Kind::Cf, multi, count);
}

/// `BF.EXISTS`, `BF.MEXISTS`.
pub fn bf_check(ctx: Ctx, args: &[Arg]) {
    let name = args.first().map_or(&[][..], Arg::bytes);
    let multi = name.get(3).is_some_and(|c| c.eq_ignore_ascii_case(&b'm'));
    check(ctx, args, Kind::Bf, multi, false);
}

fn check(ctx: Ctx, args: &[Arg], kind: Kind, multi: bool, count: bool) {
    if (!multi && args.len() != 3) || (multi && args.len() < 3) {
        return ctx.wrong_arity();
    }
    let mut key = ctx.open_key(args[1], false);
    let filter = match status(&mut key, kind) {
        Status::Found => match value(&mut key, kind).filter() {
            Some(f) => Some(f),
            None => return ctx.error(LOADING),
        },
        _ => None,
    };
    if multi {
        ctx.array(args.len() - 2);
    }
    let booleans = ctx.resp3() && !count;
    for item in &args[2..] {
        let n = match filter {
            None => 0,
            Some(f) if count => i64::try_from(f.count(item.bytes())).unwrap_or(i64::MAX),
            Some(f) => i64::from(f.contains(item.bytes())),
        };
        if booleans {
            ctx.boolean(n == 1);
        } else {
            ctx.int(n);
        }
    }
}

/// `CF.DEL key item`.
pub fn cf_del(ctx: Ctx, args: &[Arg]) {
    if args.len() != 3 {
        return ctx.wrong_arity();
    }
    let mut key = ctx.open_key(args[1], true);
    if status(&mut key, Kind::Cf) != Status::Found {
        return ctx.error("Not found");
    }
    let v = value(&mut key, Kind::Cf);
    let Some(filter) = v.filter_mut() else {
        return ctx.error(LOADING);
    };
    let removed = filter.remove(args[2].bytes());
    if removed {
        v.meta.deleted += 1;
    }
    ctx.replicate_verbatim();
    if ctx.resp3() {
        ctx.boolean(removed);
    } else {
        ctx.int(i64::from(removed));
    }
}

/// `CF.INFO key`.
pub fn cf_info(ctx: Ctx, args: &[Arg]) {
    if args.len() != 2 {
        return ctx.wrong_arity();
    }
    let mut key = ctx.open_key(args[1], false);
    let s = status(&mut key, Kind::Cf);
    if s != Status::Found {
        return ctx.error(strerror(s));
    }
    let v = value(&mut key, Kind::Cf);
    let Some(f) = v.filter() else {
        return ctx.error(LOADING);
    };
    let pairs: [(&str, i64); 8] = [
        ("Size", v.mem_usage() as i64),
        ("Number of buckets", f.buckets() as i64),
        ("Number of filters", f.levels() as i64),
        ("Number of items inserted", f.len() as i64),
        ("Number of items deleted", v.meta.deleted as i64),
        ("Bucket size", f.bucket_size() as i64),
        ("Expansion rate", v.meta.expansion as i64),
        ("Max iterations", v.meta.max_iterations as i64),
    ];
    ctx.map_or_array(pairs.len() + 2);
    for (name, n) in pairs {
        ctx.simple(name);
        ctx.int(n);
    }
    backend(ctx, f);
}

/// The two pairs this module adds to `CF.INFO` and `BF.INFO`: what backs the key.
fn backend(ctx: Ctx, f: &Filter) {
    ctx.simple("Backend");
    ctx.simple(if f.is_growable() {
        "cuckoo-sst growable"
    } else {
        "cuckoo-sst fixed"
    });
    ctx.simple("Error rate bound");
    ctx.simple(&format!("{:e}", f.expected_fpr()));
}

/// `BF.RESERVE key error_rate capacity [EXPANSION e] [NONSCALING]`.
pub fn bf_reserve(ctx: Ctx, args: &[Arg]) {
    if !(4..=7).contains(&args.len()) {
        return ctx.wrong_arity();
    }
    let Some(mut error_rate) = args[2].to_f64() else {
        return ctx.error("ERR bad error rate");
    };
    if !(error_rate > 0.0 && error_rate < 1.0) {
        return ctx.error("ERR error rate must be in the range (0.000000, 1.000000)");
    }
    error_rate = error_rate.min(BF_ERROR_RATE_CAP);
    let Some(capacity) = args[3].to_i64() else {
        return ctx.error("ERR bad capacity");
    };
    if !(1..=MAX_CAPACITY).contains(&capacity) {
        return ctx.error(&format!(
            "ERR capacity must be in the range [1, {MAX_CAPACITY}]"
        ));
    }
    let mut nonscaling = arg_index(args, 4, "NONSCALING").is_some();
    let mut expansion = BF_DEFAULT_EXPANSION;
    if let Some(i) = arg_index(args, 4, "EXPANSION") {
        let Some(v) = args.get(i + 1) else {
            return ctx.error("ERR no expansion");
        };
        let Some(e) = v.to_i64() else {
            return ctx.error("ERR bad expansion");
        };
        if e == 0 {
            nonscaling = true;
        } else if nonscaling {
            return ctx.error("Nonscaling filters cannot expand");
        }
        if !(0..=MAX_EXPANSION).contains(&e) {
            return ctx.error(&format!(
                "ERR expansion must be in the range [0, {MAX_EXPANSION}]"
            ));
        }
        expansion = e;
    }
    let mut key = ctx.open_key(args[1], true);
    let s = status(&mut key, Kind::Bf);
    if s != Status::Empty {
        return ctx.error(strerror(s));
    }
    match new_bf(
        ctx,
        capacity,
        error_rate,
        (!nonscaling).then_some(expansion),
    ) {
        Ok(v) => {
            if store(ctx, &mut key, Kind::Bf, v) {
                ctx.simple("OK");
                ctx.replicate_verbatim();
            }
        }
        Err(e) => create_error(ctx, Kind::Bf, &e),
    }
}

/// The options of `BF.ADD`, `BF.MADD` and `BF.INSERT`.
struct BfInsert {
    capacity: i64,
    error_rate: f64,
    autocreate: bool,
    multi: bool,
    expansion: i64,
    nonscaling: bool,
}

impl BfInsert {
    fn new(multi: bool) -> BfInsert {
        BfInsert {
            capacity: settings::get().bf_initial_size,
            error_rate: settings::get().bf_error_rate,
            autocreate: true,
            multi,
            expansion: BF_DEFAULT_EXPANSION,
            nonscaling: false,
        }
    }
}

fn bf_insert_common(ctx: Ctx, key_arg: Arg, items: &[Arg], o: &BfInsert) {
    let mut key = ctx.open_key(key_arg, true);
    match status(&mut key, Kind::Bf) {
        Status::Empty if o.autocreate => {
            let expansion = (!o.nonscaling).then_some(o.expansion);
            match new_bf(ctx, o.capacity, o.error_rate, expansion) {
                Ok(v) => {
                    if !store(ctx, &mut key, Kind::Bf, v) {
                        return;
                    }
                }
                Err(e) => return create_error(ctx, Kind::Bf, &e),
            }
        }
        Status::Found => {}
        s => return ctx.error(strerror(s)),
    }
    let Some(filter) = value(&mut key, Kind::Bf).filter_mut() else {
        return ctx.error(LOADING);
    };
    if o.multi {
        ctx.array_postponed();
    }
    let mut replies = 0;
    let reply = |added: bool| {
        if ctx.resp3() {
            ctx.boolean(added);
        } else {
            ctx.int(i64::from(added));
        }
    };
    for item in items {
        replies += 1;
        match filter.add(item.bytes(), true) {
            Added::Yes => reply(true),
            Added::Exists => reply(false),
            Added::Full if !filter.is_growable() => {
                ctx.error("ERR non scaling filter is full");
                break;
            }
            Added::Full | Added::NoMemory => ctx.error("ERR problem inserting into filter"),
        }
        if !o.multi {
            break;
        }
    }
    if o.multi {
        ctx.set_array_len(replies);
    }
    ctx.replicate_verbatim();
}

/// `BF.ADD key item` and `BF.MADD key item…`.
pub fn bf_add(ctx: Ctx, args: &[Arg]) {
    let multi = args[0]
        .bytes()
        .get(3)
        .is_some_and(|c| c.eq_ignore_ascii_case(&b'm'));
    if (multi && args.len() < 3) || (!multi && args.len() != 3) {
        return ctx.wrong_arity();
    }
    bf_insert_common(ctx, args[1], &args[2..], &BfInsert::new(multi));
}

/// `BF.INSERT key [CAPACITY c] [ERROR e] [EXPANSION x] [NOCREATE] [NONSCALING] ITEMS item…`.
pub fn bf_insert(ctx: Ctx, args: &[Arg]) {
    if args.len() < 4 {
        return ctx.wrong_arity();
    }
    let mut o = BfInsert::new(true);
    let mut pos = 2;
    let mut items = None;
    while pos < args.len() && items.is_none() {
        let word = args[pos].bytes();
        match word.first().map(u8::to_ascii_lowercase) {
            Some(b'i') => {
                pos += 1;
                items = Some(pos);
            }
            Some(b'e') => {
                pos += 1;
                if pos == args.len() {
                    return ctx.wrong_arity();
                }
                if word.get(1).is_some_and(|c| c.eq_ignore_ascii_case(&b'r')) {
                    match args[pos].to_f64() {
                        Some(e) if e > 0.0 && e < 1.0 => o.error_rate = e.min(BF_ERROR_RATE_CAP),
                        _ => return ctx.error("Bad error rate"),
                    }
                } else {
                    match args[pos].to_i64() {
                        Some(e) if (0..=MAX_EXPANSION).contains(&e) => o.expansion = e,
                        _ => return ctx.error("Bad expansion"),
                    }
                }
                pos += 1;
            }
            Some(b'c') => {
                pos += 1;
                if pos == args.len() {
                    return ctx.wrong_arity();
                }
                match args[pos].to_i64() {
                    Some(c) if (1..=MAX_CAPACITY).contains(&c) => o.capacity = c,
                    _ => return ctx.error("Bad capacity"),
                }
                pos += 1;
            }
            Some(b'n') => {
                if word.get(2).is_some_and(|c| c.eq_ignore_ascii_case(&b'c')) {
                    o.autocreate = false;
                } else {
                    o.nonscaling = true;
                }
                pos += 1;
            }
            _ => return ctx.error("Unknown argument received"),
        }
    }
    if o.expansion == 0 {
        o.nonscaling = true;
    }
    match items {
        Some(i) if i < args.len() => bf_insert_common(ctx, args[1], &args[i..], &o),
        _ => ctx.wrong_arity(),
    }
}

/// `BF.INFO key [CAPACITY | SIZE | FILTERS | ITEMS | EXPANSION]`.
pub fn bf_info(ctx: Ctx, args: &[Arg]) {
    if args.len() != 2 && args.len() != 3 {
        return ctx.wrong_arity();
    }
    let mut key = ctx.open_key(args[1], false);
    let s = status(&mut key, Kind::Bf);
    if s != Status::Found {
        return ctx.error(strerror(s));
    }
    let v = value(&mut key, Kind::Bf);
    let Some(f) = v.filter() else {
        return ctx.error(LOADING);
    };
    let expansion = f.is_growable().then_some(v.meta.expansion as i64);
    let fields: [(&str, &str, Option<i64>); 5] = [
        ("capacity", "Capacity", Some(f.capacity() as i64)),
        ("size", "Size", Some(v.mem_usage() as i64)),
        ("filters", "Number of filters", Some(f.levels() as i64)),
        ("items", "Number of items inserted", Some(f.len() as i64)),
        ("expansion", "Expansion rate", expansion),
    ];
    let reply = |n: Option<i64>| match n {
        Some(n) => ctx.int(n),
        None => ctx.null(),
    };
    if let Some(which) = args.get(2) {
        let Some(&(_, name, n)) = fields.iter().find(|(word, _, _)| which.is(word)) else {
            return ctx.error("Invalid information value");
        };
        // RedisBloom: a map of one pair for RESP3, an array of the value for RESP2.
        if ctx.resp3() {
            ctx.map_or_array(1);
            ctx.simple(name);
        } else {
            ctx.array(1);
        }
        return reply(n);
    }
    ctx.map_or_array(fields.len() + 2);
    for (_, name, n) in fields {
        ctx.simple(name);
        reply(n);
    }
    backend(ctx, f);
}

/// `BF.CARD key`: items inserted; 0 for a missing key.
pub fn bf_card(ctx: Ctx, args: &[Arg]) {
    if args.len() != 2 {
        return ctx.wrong_arity();
    }
    let mut key = ctx.open_key(args[1], false);
    match status(&mut key, Kind::Bf) {
        Status::Empty => ctx.int(0),
        Status::Mismatch => ctx.error(WRONGTYPE),
        Status::Found => match value(&mut key, Kind::Bf).filter() {
            Some(f) => ctx.int(f.len() as i64),
            None => ctx.error(LOADING),
        },
    }
}

/// `CF.SCANDUMP key iter` and `BF.SCANDUMP`: see [`scan_chunk`].
pub fn scandump(ctx: Ctx, args: &[Arg], kind: Kind) {
    if args.len() != 3 {
        return ctx.wrong_arity();
    }
    let iter = match args[2].to_i64() {
        Some(i) if i >= 0 => i,
        _ => {
            return ctx.error(match kind {
                Kind::Cf => "Invalid position",
                Kind::Bf => "Second argument must be numeric",
            });
        }
    };
    let mut key = ctx.open_key(args[1], false);
    let s = status(&mut key, kind);
    if s != Status::Found {
        return ctx.error(strerror(s));
    }
    let v = value(&mut key, kind);
    if v.filter().is_none() {
        return ctx.error(LOADING);
    }
    let (header, bytes) = v.dump();
    ctx.array(2);
    match scan_chunk(&header, &bytes, iter) {
        Some((next, chunk)) => {
            ctx.int(next);
            ctx.bulk(chunk);
        }
        None => {
            ctx.int(0);
            ctx.null();
        }
    }
}

/// `CF.LOADCHUNK key iter data` and `BF.LOADCHUNK`: iteration 1 the header (the key must not
/// exist), then the filter's bytes in order; the last chunk is checked as a whole filter, and
/// a key whose bytes are not one is deleted with an error.
pub fn loadchunk(ctx: Ctx, args: &[Arg], kind: Kind) {
    if args.len() != 4 {
        return ctx.wrong_arity();
    }
    let mut key = ctx.open_key(args[1], true);
    let s = status(&mut key, kind);
    let iter = match args[2].to_i64() {
        Some(i) if i > 0 => i,
        _ => {
            return ctx.error(match kind {
                Kind::Cf => "Invalid position",
                Kind::Bf => "ERR Second argument must be numeric",
            });
        }
    };
    let data = args[3].bytes();
    if iter == 1 {
        if s != Status::Empty {
            return ctx.error(strerror(s));
        }
        let header = match Header::decode(data) {
            Ok(h) if h.meta.bloom != (kind == Kind::Bf) => {
                let other = if h.meta.bloom { "BF" } else { "CF" };
                ctx.log(
                    c"warning",
                    &format!("cuckoo-sst: LOADCHUNK: a dump of a {other} key"),
                );
                return ctx.error("Invalid header");
            }
            Ok(h) => h,
            Err(e) => {
                ctx.log(c"warning", &format!("cuckoo-sst: LOADCHUNK: {e}"));
                return ctx.error("Invalid header");
            }
        };
        if let Err(e) = check_size(ctx, header.total) {
            return create_error(ctx, kind, &e);
        }
        if store(ctx, &mut key, kind, Value::loading(header)) {
            ctx.replicate_verbatim();
            ctx.simple("OK");
        }
        return;
    }
    if s != Status::Found {
        return ctx.error(strerror(s));
    }
    match value(&mut key, kind).add_chunk(iter as u64 - 1, data) {
        Ok(()) => {
            ctx.replicate_verbatim();
            ctx.simple("OK");
        }
        Err(ChunkError::Position) => ctx.error("Couldn't load chunk!"),
        Err(ChunkError::Invalid(e)) => {
            ctx.log(
                c"warning",
                &format!("cuckoo-sst: LOADCHUNK: the bytes are not a filter ({e}): key deleted"),
            );
            key.delete();
            ctx.replicate_verbatim();
            ctx.error("Couldn't load chunk!");
        }
    }
}
