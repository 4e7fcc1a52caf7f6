//! A Redis module with RedisBloom's `CF.*` and `BF.*` commands, backed by cuckoo-sst filters.
//!
//! Build it with `cargo build --release -p cuckoo-sst-redis` and load
//! `target/release/libcuckoo_sst_redis.so` with `redis-server --loadmodule <path>`. The
//! commands, their replies and where they differ from RedisBloom on purpose:
//! `integrations/redis/README.md`.
//!
//! Layout: [`ffi`] is the hand-written part of the module API and, with [`alloc`] (the global
//! allocator: the server's), the only place with `unsafe`; [`value`] the value a key holds and its dump (RDB, AOF, `SCANDUMP`); [`commands`]
//! the commands. This file registers them and the two data types.

#![deny(missing_docs)]

// `unsafe` lives in `ffi`, `alloc` and the `extern "C"` shims below, nowhere else.
pub mod alloc;
#[deny(unsafe_code)]
pub mod commands;
pub mod ffi;
#[deny(unsafe_code)]
pub mod settings;
#[deny(unsafe_code)]
pub mod value;

use std::ffi::{CStr, c_int, c_void};

use commands::{BF_TYPE, CF_TYPE, Kind};
use ffi::{Aof, Ctx, Io, RedisModuleCtx, RedisModuleIO, RedisModuleString, TypeMethods};
use value::{CHUNK, Value};

/// Every heap allocation goes through the server's allocator once the module is loaded
/// ([`alloc`]), so `used_memory` and `maxmemory` see the filters.
#[global_allocator]
static ALLOCATOR: alloc::ModuleAlloc = alloc::ModuleAlloc;

/// The module's name (`MODULE LIST`).
pub const MODULE_NAME: &CStr = c"cuckoo-sst";
/// The RDB encoding version of both data types.
const ENCVER: c_int = 1;

/// Defines an `extern "C"` command function `$name` that runs `$handler`.
macro_rules! command {
    ($name:ident, $handler:expr) => {
        unsafe extern "C" fn $name(
            ctx: *mut RedisModuleCtx,
            argv: *mut *mut RedisModuleString,
            argc: c_int,
        ) -> c_int {
            // SAFETY: Redis calls command functions with their context and arguments.
            unsafe { ffi::run_command(ctx, argv, argc, $handler) }
        }
    };
}

command!(cf_reserve, commands::cf_reserve);
command!(cf_add, commands::cf_add);
command!(cf_insert, commands::cf_insert);
command!(cf_check, commands::cf_check);
command!(cf_del, commands::cf_del);
command!(cf_info, commands::cf_info);
command!(cf_scandump, |c, a| commands::scandump(c, a, Kind::Cf));
command!(cf_loadchunk, |c, a| commands::loadchunk(c, a, Kind::Cf));
command!(bf_reserve, commands::bf_reserve);
command!(bf_add, commands::bf_add);
command!(bf_insert, commands::bf_insert);
command!(bf_check, commands::bf_check);
command!(bf_info, commands::bf_info);
command!(bf_card, commands::bf_card);
command!(bf_scandump, |c, a| commands::scandump(c, a, Kind::Bf));
command!(bf_loadchunk, |c, a| commands::loadchunk(c, a, Kind::Bf));

/// The commands: name, function, flags.
const COMMANDS: &[(&CStr, ffi::CmdFunc, &CStr)] = &[
    (c"CF.RESERVE", cf_reserve, c"write deny-oom"),
    (c"CF.ADD", cf_add, c"write deny-oom"),
    (c"CF.ADDNX", cf_add, c"write deny-oom"),
    (c"CF.INSERT", cf_insert, c"write deny-oom"),
    (c"CF.INSERTNX", cf_insert, c"write deny-oom"),
    (c"CF.EXISTS", cf_check, c"readonly fast"),
    (c"CF.MEXISTS", cf_check, c"readonly fast"),
    (c"CF.COUNT", cf_check, c"readonly fast"),
    (c"CF.DEL", cf_del, c"write fast"),
    (c"CF.INFO", cf_info, c"readonly fast"),
    (c"CF.SCANDUMP", cf_scandump, c"readonly"),
    (c"CF.LOADCHUNK", cf_loadchunk, c"write deny-oom"),
    (c"BF.RESERVE", bf_reserve, c"write deny-oom"),
    (c"BF.ADD", bf_add, c"write deny-oom"),
    (c"BF.MADD", bf_add, c"write deny-oom"),
    (c"BF.INSERT", bf_insert, c"write deny-oom"),
    (c"BF.EXISTS", bf_check, c"readonly fast"),
    (c"BF.MEXISTS", bf_check, c"readonly fast"),
    (c"BF.INFO", bf_info, c"readonly fast"),
    (c"BF.CARD", bf_card, c"readonly fast"),
    (c"BF.SCANDUMP", bf_scandump, c"readonly"),
    (c"BF.LOADCHUNK", bf_loadchunk, c"write deny-oom"),
];

/// `rdb_load`: the dump header and the filter's FORMAT.md bytes, two string buffers, checked
/// whole (`from_bytes`); a damaged entry, or one of the other kind, fails the load.
fn rdb_load(io: Io, encver: c_int, kind: Kind) -> Option<Value> {
    if encver != ENCVER {
        io.log_error(&format!(
            "cuckoo-sst: RDB encoding version {encver}, this module reads {ENCVER}"
        ));
        return None;
    }
    let header = io.load_buffer()?;
    let bytes = io.load_buffer()?;
    let v = Value::from_dump(&header, bytes)
        .map_err(|e| io.log_error(&format!("cuckoo-sst: a damaged filter in the RDB: {e}")))
        .ok()?;
    if v.meta.bloom != (kind == Kind::Bf) {
        io.log_error("cuckoo-sst: a damaged filter in the RDB: a dump of the other kind");
        return None;
    }
    Some(v)
}

unsafe extern "C" fn cf_rdb_load(io: *mut RedisModuleIO, encver: c_int) -> *mut c_void {
    // SAFETY: Redis calls rdb_load with its stream.
    unsafe { ffi::callback::rdb_load(io, encver, |io, v| rdb_load(io, v, Kind::Cf)) }
}

unsafe extern "C" fn bf_rdb_load(io: *mut RedisModuleIO, encver: c_int) -> *mut c_void {
    // SAFETY: Redis calls rdb_load with its stream.
    unsafe { ffi::callback::rdb_load(io, encver, |io, v| rdb_load(io, v, Kind::Bf)) }
}

/// `rdb_save`: the dump header and the filter's bytes.
unsafe extern "C" fn rdb_save(io: *mut RedisModuleIO, value: *mut c_void) {
    fn save(io: Io, v: &Value) {
        let (header, bytes) = v.dump();
        io.save_buffer(&header);
        io.save_buffer(&bytes);
    }
    // SAFETY: Redis's arguments; the values of both types are `Box<Value>`s.
    unsafe { ffi::callback::rdb_save(io, value, save) };
}

/// `aof_rewrite`: `LOADCHUNK` commands that rebuild the key, as `SCANDUMP` would give them.
fn emit_chunks(aof: Aof, v: &Value, command: &CStr) {
    let (header, bytes) = v.dump();
    aof.emit_chunk(command, 1, &header);
    for (i, chunk) in bytes.chunks(CHUNK).enumerate() {
        let end = i * CHUNK + chunk.len();
        aof.emit_chunk(command, 1 + end as i64, chunk);
    }
}

unsafe extern "C" fn cf_aof_rewrite(
    io: *mut RedisModuleIO,
    key: *mut RedisModuleString,
    value: *mut c_void,
) {
    // SAFETY: Redis's arguments; the values of both types are `Box<Value>`s.
    unsafe {
        ffi::callback::aof_rewrite(io, key, value, |aof, v| {
            emit_chunks(aof, v, c"CF.LOADCHUNK")
        })
    }
}

unsafe extern "C" fn bf_aof_rewrite(
    io: *mut RedisModuleIO,
    key: *mut RedisModuleString,
    value: *mut c_void,
) {
    // SAFETY: Redis's arguments; the values of both types are `Box<Value>`s.
    unsafe {
        ffi::callback::aof_rewrite(io, key, value, |aof, v| {
            emit_chunks(aof, v, c"BF.LOADCHUNK")
        })
    }
}

/// `mem_usage`: [`Value::mem_usage`].
unsafe extern "C" fn mem_usage(value: *const c_void) -> usize {
    // SAFETY: Redis's argument; the values of both types are `Box<Value>`s.
    unsafe { ffi::callback::mem_usage(value, Value::mem_usage) }
}

/// `copy` (the `COPY` command): a clone.
unsafe extern "C" fn copy(
    _from: *mut RedisModuleString,
    _to: *mut RedisModuleString,
    value: *const c_void,
) -> *mut c_void {
    // SAFETY: Redis's argument; the values of both types are `Box<Value>`s.
    unsafe { ffi::callback::copy::<Value>(value) }
}

/// `free`.
unsafe extern "C" fn free(value: *mut c_void) {
    // SAFETY: Redis's argument; the values of both types are `Box<Value>`s.
    unsafe { ffi::callback::free::<Value>(value) }
}

fn methods(
    load: unsafe extern "C" fn(*mut RedisModuleIO, c_int) -> *mut c_void,
    aof: unsafe extern "C" fn(*mut RedisModuleIO, *mut RedisModuleString, *mut c_void),
) -> TypeMethods {
    TypeMethods {
        version: 3,
        rdb_load: Some(load),
        rdb_save: Some(rdb_save),
        aof_rewrite: Some(aof),
        mem_usage: Some(mem_usage),
        digest: None,
        free: Some(free),
        aux_load: None,
        aux_save: None,
        aux_save_triggers: 0,
        free_effort: None,
        unlink: None,
        copy: Some(copy),
        defrag: None,
    }
}

fn on_load(ctx: Ctx, args: &[ffi::Arg]) -> Result<(), String> {
    let args: Vec<&[u8]> = args.iter().map(ffi::Arg::bytes).collect();
    let s = settings::Settings::parse(&args)?;
    ctx.log(c"notice", &format!("cuckoo-sst: {s:?}"));
    settings::set(s);
    // Growing filters stay on the heap, where the server's allocator (`alloc`) counts them
    // in `used_memory` and `maxmemory` sees them.
    cuckoo_sst::set_anonymous_maps(false);
    // Type names are 9 characters of A-Z a-z 0-9 _ -, unique among all modules.
    // SAFETY: every callback of `methods` takes the values as `Box<Value>`s, and `rdb_load`
    // makes `Box<Value>`s.
    unsafe {
        CF_TYPE.register(
            ctx,
            c"CKSST-CF1",
            ENCVER,
            &mut methods(cf_rdb_load, cf_aof_rewrite),
        )?;
        BF_TYPE.register(
            ctx,
            c"CKSST-BF1",
            ENCVER,
            &mut methods(bf_rdb_load, bf_aof_rewrite),
        )?;
    }
    for &(name, f, flags) in COMMANDS {
        ctx.create_command(name, f, flags)?;
    }
    Ok(())
}

/// The module's entry point, called by `redis-server --loadmodule`.
///
/// # Safety
/// Only Redis calls it, with its context.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn RedisModule_OnLoad(
    ctx: *mut RedisModuleCtx,
    argv: *mut *mut RedisModuleString,
    argc: c_int,
) -> c_int {
    // SAFETY: the context Redis passed to OnLoad.
    if let Err(e) = unsafe { ffi::init(ctx, MODULE_NAME, 1) } {
        eprintln!("cuckoo-sst module: {e}");
        return ffi::ERR;
    }
    // SAFETY: the context Redis passed to OnLoad.
    let ctx = unsafe { ffi::callback::ctx(ctx) };
    // SAFETY: the arguments Redis passed to OnLoad.
    let args = unsafe { ffi::args(argv, argc) };
    match std::panic::catch_unwind(|| on_load(ctx, args)) {
        Ok(Ok(())) => ffi::OK,
        Ok(Err(e)) => {
            ctx.log(c"warning", &format!("cuckoo-sst: {e}"));
            ffi::ERR
        }
        Err(_) => ffi::ERR,
    }
}
