//! The part of the Redis module API (`redismodule.h`) this module calls, declared by hand, and
//! small safe wrappers over it: the only place with `unsafe`.
//!
//! Why by hand: the `redis-module` crate generates its bindings with bindgen, which needs
//! libclang when the crate builds (not installed here, and minutes in CI), and brings far more
//! than the ~30 functions used. The module API is a table of C function pointers that a module
//! looks up by name (`RedisModule_GetApi`, whose address is the first word of the context
//! passed to `RedisModule_OnLoad`); the signatures below are copied from `redismodule.h` of
//! Redis 7.0 (unchanged in later versions: the API only grows).

use std::ffi::{CStr, CString, c_char, c_int, c_long, c_longlong, c_void};
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::null_mut;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicPtr, Ordering};

/// `REDISMODULE_OK`.
pub const OK: c_int = 0;
/// `REDISMODULE_ERR`.
pub const ERR: c_int = 1;
/// `REDISMODULE_APIVER_1`.
pub const APIVER_1: c_int = 1;
const READ: c_int = 1;
const WRITE: c_int = 1 << 1;
const KEYTYPE_EMPTY: c_int = 0;
/// `REDISMODULE_OPTIONS_HANDLE_IO_ERRORS`.
const OPTIONS_HANDLE_IO_ERRORS: c_int = 1;
const KEYTYPE_MODULE: c_int = 6;
/// `REDISMODULE_CTX_FLAGS_RESP3`.
const CTX_FLAGS_RESP3: c_int = 1 << 22;
/// `REDISMODULE_CTX_FLAGS_REPLICATED`: the command came over the replication link.
const CTX_FLAGS_REPLICATED: c_int = 1 << 12;
/// `REDISMODULE_CTX_FLAGS_LOADING`: the server is loading its AOF or RDB.
const CTX_FLAGS_LOADING: c_int = 1 << 13;
/// `REDISMODULE_POSTPONED_LEN`.
const POSTPONED_LEN: c_long = -1;

macro_rules! opaque {
    ($($name:ident),*) => {$(
        /// An opaque Redis type, only ever behind a pointer.
        #[repr(C)]
        pub struct $name {
            _private: [u8; 0],
        }
    )*};
}
opaque!(
    RedisModuleCtx,
    RedisModuleString,
    RedisModuleKey,
    RedisModuleType,
    RedisModuleIO,
    RedisModuleServerInfoData
);

/// `RedisModuleCmdFunc`.
pub type CmdFunc =
    unsafe extern "C" fn(*mut RedisModuleCtx, *mut *mut RedisModuleString, c_int) -> c_int;

/// `RedisModuleTypeMethods` up to `defrag`: the fields of method version 3 (Redis 6.2 and
/// later), all a server reads when `version` is 3.
#[repr(C)]
pub struct TypeMethods {
    /// 3.
    pub version: u64,
    /// `rdb_load`.
    pub rdb_load: Option<unsafe extern "C" fn(*mut RedisModuleIO, c_int) -> *mut c_void>,
    /// `rdb_save`.
    pub rdb_save: Option<unsafe extern "C" fn(*mut RedisModuleIO, *mut c_void)>,
    /// `aof_rewrite`.
    pub aof_rewrite:
        Option<unsafe extern "C" fn(*mut RedisModuleIO, *mut RedisModuleString, *mut c_void)>,
    /// `mem_usage`.
    pub mem_usage: Option<unsafe extern "C" fn(*const c_void) -> usize>,
    /// `digest` (unused).
    pub digest: Option<unsafe extern "C" fn(*mut c_void, *mut c_void)>,
    /// `free`.
    pub free: Option<unsafe extern "C" fn(*mut c_void)>,
    /// `aux_load` (unused).
    pub aux_load: Option<unsafe extern "C" fn(*mut RedisModuleIO, c_int, c_int) -> c_int>,
    /// `aux_save` (unused).
    pub aux_save: Option<unsafe extern "C" fn(*mut RedisModuleIO, c_int)>,
    /// `aux_save_triggers` (unused: 0).
    pub aux_save_triggers: c_int,
    /// `free_effort` (unused).
    pub free_effort: Option<unsafe extern "C" fn(*mut RedisModuleString, *const c_void) -> usize>,
    /// `unlink` (unused).
    pub unlink: Option<unsafe extern "C" fn(*mut RedisModuleString, *const c_void)>,
    /// `copy` (`COPY`).
    pub copy: Option<
        unsafe extern "C" fn(
            *mut RedisModuleString,
            *mut RedisModuleString,
            *const c_void,
        ) -> *mut c_void,
    >,
    /// `defrag` (unused).
    pub defrag: Option<
        unsafe extern "C" fn(*mut c_void, *mut RedisModuleString, *mut *mut c_void) -> c_int,
    >,
}

type GetApi = unsafe extern "C" fn(*const c_char, *mut c_void) -> c_int;

/// The API functions used, looked up once in `RedisModule_OnLoad`.
struct Api {
    create_command: unsafe extern "C" fn(
        *mut RedisModuleCtx,
        *const c_char,
        CmdFunc,
        *const c_char,
        c_int,
        c_int,
        c_int,
    ) -> c_int,
    set_module_attribs: unsafe extern "C" fn(*mut RedisModuleCtx, *const c_char, c_int, c_int),
    is_module_name_busy: unsafe extern "C" fn(*const c_char) -> c_int,
    set_module_options: unsafe extern "C" fn(*mut RedisModuleCtx, c_int),
    is_io_error: unsafe extern "C" fn(*mut RedisModuleIO) -> c_int,
    create_data_type: unsafe extern "C" fn(
        *mut RedisModuleCtx,
        *const c_char,
        c_int,
        *mut TypeMethods,
    ) -> *mut RedisModuleType,
    wrong_arity: unsafe extern "C" fn(*mut RedisModuleCtx) -> c_int,
    reply_with_long_long: unsafe extern "C" fn(*mut RedisModuleCtx, c_longlong) -> c_int,
    reply_with_error: unsafe extern "C" fn(*mut RedisModuleCtx, *const c_char) -> c_int,
    reply_with_simple_string: unsafe extern "C" fn(*mut RedisModuleCtx, *const c_char) -> c_int,
    reply_with_array: unsafe extern "C" fn(*mut RedisModuleCtx, c_long) -> c_int,
    reply_set_array_length: unsafe extern "C" fn(*mut RedisModuleCtx, c_long),
    reply_with_string_buffer:
        unsafe extern "C" fn(*mut RedisModuleCtx, *const c_char, usize) -> c_int,
    reply_with_null: unsafe extern "C" fn(*mut RedisModuleCtx) -> c_int,
    reply_with_bool: unsafe extern "C" fn(*mut RedisModuleCtx, c_int) -> c_int,
    reply_with_map: unsafe extern "C" fn(*mut RedisModuleCtx, c_long) -> c_int,
    get_context_flags: unsafe extern "C" fn(*mut RedisModuleCtx) -> c_int,
    string_ptr_len: unsafe extern "C" fn(*const RedisModuleString, *mut usize) -> *const c_char,
    string_to_long_long: unsafe extern "C" fn(*const RedisModuleString, *mut c_longlong) -> c_int,
    string_to_double: unsafe extern "C" fn(*const RedisModuleString, *mut f64) -> c_int,
    open_key: unsafe extern "C" fn(
        *mut RedisModuleCtx,
        *mut RedisModuleString,
        c_int,
    ) -> *mut RedisModuleKey,
    close_key: unsafe extern "C" fn(*mut RedisModuleKey),
    key_type: unsafe extern "C" fn(*mut RedisModuleKey) -> c_int,
    delete_key: unsafe extern "C" fn(*mut RedisModuleKey) -> c_int,
    module_type_get_type: unsafe extern "C" fn(*mut RedisModuleKey) -> *mut RedisModuleType,
    module_type_get_value: unsafe extern "C" fn(*mut RedisModuleKey) -> *mut c_void,
    module_type_set_value:
        unsafe extern "C" fn(*mut RedisModuleKey, *mut RedisModuleType, *mut c_void) -> c_int,
    replicate_verbatim: unsafe extern "C" fn(*mut RedisModuleCtx) -> c_int,
    save_string_buffer: unsafe extern "C" fn(*mut RedisModuleIO, *const c_char, usize),
    load_string_buffer: unsafe extern "C" fn(*mut RedisModuleIO, *mut usize) -> *mut c_char,
    save_unsigned: unsafe extern "C" fn(*mut RedisModuleIO, u64),
    load_unsigned: unsafe extern "C" fn(*mut RedisModuleIO) -> u64,
    emit_aof: unsafe extern "C" fn(*mut RedisModuleIO, *const c_char, *const c_char, ...),
    log: unsafe extern "C" fn(*mut RedisModuleCtx, *const c_char, *const c_char, ...),
    log_io_error: unsafe extern "C" fn(*mut RedisModuleIO, *const c_char, *const c_char, ...),
    free: unsafe extern "C" fn(*mut c_void),
    get_server_info:
        unsafe extern "C" fn(*mut RedisModuleCtx, *const c_char) -> *mut RedisModuleServerInfoData,
    free_server_info: unsafe extern "C" fn(*mut RedisModuleCtx, *mut RedisModuleServerInfoData),
    server_info_get_field_unsigned:
        unsafe extern "C" fn(*mut RedisModuleServerInfoData, *const c_char, *mut c_int) -> u64,
}

static API: OnceLock<Api> = OnceLock::new();

fn api() -> &'static Api {
    API.get()
        .expect("RedisModule_OnLoad looked the API up before any call")
}

/// Looks `name` up with `get_api`; `None` when the server does not have it.
///
/// # Safety
/// `F` must be the function pointer type of `name` as `redismodule.h` declares it.
unsafe fn lookup<F: Copy>(get_api: GetApi, name: &CStr) -> Option<F> {
    assert_eq!(size_of::<F>(), size_of::<*mut c_void>());
    let mut p: *mut c_void = null_mut();
    // SAFETY: `get_api` writes the function's address (a pointer) to the pointer it is given.
    let rc = unsafe { get_api(name.as_ptr(), (&raw mut p).cast()) };
    if rc != OK || p.is_null() {
        return None;
    }
    // SAFETY: `p` is the non-null address of the function `name`, whose type the caller
    // promises `F` is (a function pointer, the size of a pointer: asserted above).
    Some(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&p) })
}

/// What `RedisModule_Init` does (`redismodule.h`): finds `RedisModule_GetApi` in the context,
/// looks up every function this module uses, and registers the module's name. `Err` with the
/// name of a function the server lacks, or when the name is taken.
///
/// # Safety
/// `ctx` must be the context Redis passed to `RedisModule_OnLoad`.
pub unsafe fn init(ctx: *mut RedisModuleCtx, name: &CStr, version: c_int) -> Result<(), String> {
    // SAFETY: the first word of the context Redis gives `RedisModule_OnLoad` is the address of
    // `RedisModule_GetApi` (`RedisModule_Init` in redismodule.h reads it the same way).
    let get_api: GetApi = unsafe { std::mem::transmute(*(ctx as *const *const c_void)) };
    // The allocator first, before anything below allocates (`crate::alloc`'s rule).
    // SAFETY: each type is the function's declaration in redismodule.h.
    // The `Try` functions (7.0, 7.4) return null where the others stop the server.
    unsafe {
        let missing = |name: &str| format!("this server has no {name}");
        let alloc = lookup(get_api, c"RedisModule_TryAlloc")
            .or_else(|| lookup(get_api, c"RedisModule_Alloc"))
            .ok_or_else(|| missing("RedisModule_Alloc"))?;
        let calloc = lookup(get_api, c"RedisModule_TryCalloc");
        let realloc = lookup(get_api, c"RedisModule_TryRealloc")
            .or_else(|| lookup(get_api, c"RedisModule_Realloc"))
            .ok_or_else(|| missing("RedisModule_Realloc"))?;
        let free =
            lookup(get_api, c"RedisModule_Free").ok_or_else(|| missing("RedisModule_Free"))?;
        crate::alloc::install(alloc, calloc, realloc, free);
    }
    macro_rules! table {
        ($($field:ident = $name:literal),* $(,)?) => {
            Api {$(
                // SAFETY: each field's type is the declaration of the function it is named
                // after, copied from redismodule.h.
                $field: unsafe { lookup(get_api, $name) }
                    .ok_or_else(|| format!("this server has no {:?}", $name))?,
            )*}
        };
    }
    let table = table! {
        create_command = c"RedisModule_CreateCommand",
        set_module_attribs = c"RedisModule_SetModuleAttribs",
        is_module_name_busy = c"RedisModule_IsModuleNameBusy",
        set_module_options = c"RedisModule_SetModuleOptions",
        is_io_error = c"RedisModule_IsIOError",
        create_data_type = c"RedisModule_CreateDataType",
        wrong_arity = c"RedisModule_WrongArity",
        reply_with_long_long = c"RedisModule_ReplyWithLongLong",
        reply_with_error = c"RedisModule_ReplyWithError",
        reply_with_simple_string = c"RedisModule_ReplyWithSimpleString",
        reply_with_array = c"RedisModule_ReplyWithArray",
        reply_set_array_length = c"RedisModule_ReplySetArrayLength",
        reply_with_string_buffer = c"RedisModule_ReplyWithStringBuffer",
        reply_with_null = c"RedisModule_ReplyWithNull",
        reply_with_bool = c"RedisModule_ReplyWithBool",
        reply_with_map = c"RedisModule_ReplyWithMap",
        get_context_flags = c"RedisModule_GetContextFlags",
        string_ptr_len = c"RedisModule_StringPtrLen",
        string_to_long_long = c"RedisModule_StringToLongLong",
        string_to_double = c"RedisModule_StringToDouble",
        open_key = c"RedisModule_OpenKey",
        close_key = c"RedisModule_CloseKey",
        key_type = c"RedisModule_KeyType",
        delete_key = c"RedisModule_DeleteKey",
        module_type_get_type = c"RedisModule_ModuleTypeGetType",
        module_type_get_value = c"RedisModule_ModuleTypeGetValue",
        module_type_set_value = c"RedisModule_ModuleTypeSetValue",
        replicate_verbatim = c"RedisModule_ReplicateVerbatim",
        save_string_buffer = c"RedisModule_SaveStringBuffer",
        load_string_buffer = c"RedisModule_LoadStringBuffer",
        save_unsigned = c"RedisModule_SaveUnsigned",
        load_unsigned = c"RedisModule_LoadUnsigned",
        emit_aof = c"RedisModule_EmitAOF",
        log = c"RedisModule_Log",
        log_io_error = c"RedisModule_LogIOError",
        free = c"RedisModule_Free",
        get_server_info = c"RedisModule_GetServerInfo",
        free_server_info = c"RedisModule_FreeServerInfo",
        server_info_get_field_unsigned = c"RedisModule_ServerInfoGetFieldUnsigned",
    };
    let api = API.get_or_init(|| table);
    // SAFETY: `name` is NUL-terminated; the functions are the server's.
    unsafe {
        if (api.is_module_name_busy)(name.as_ptr()) != 0 {
            return Err(format!("a module named {name:?} is loaded already"));
        }
        (api.set_module_attribs)(ctx, name.as_ptr(), version, APIVER_1);
        // A short or undecodable read (a damaged RESTORE payload) then returns an error to
        // `rdb_load` instead of stopping the server; `Io::load_buffer` checks for it.
        (api.set_module_options)(ctx, OPTIONS_HANDLE_IO_ERRORS);
    }
    Ok(())
}

/// A C string of `s`, with any NUL (never in this module's messages) replaced.
fn c_string(s: &str) -> CString {
    CString::new(s.replace('\0', "?")).expect("no NUL left")
}

/// The context of one call into the module.
#[derive(Clone, Copy)]
pub struct Ctx(*mut RedisModuleCtx);

impl Ctx {
    /// Registers a command (during `RedisModule_OnLoad` only).
    pub fn create_command(&self, name: &CStr, f: CmdFunc, flags: &CStr) -> Result<(), String> {
        // SAFETY: the strings are NUL-terminated and `f` has the command signature.
        let rc =
            unsafe { (api().create_command)(self.0, name.as_ptr(), f, flags.as_ptr(), 1, 1, 1) };
        if rc == OK {
            Ok(())
        } else {
            Err(format!("could not register {name:?}"))
        }
    }

    /// Logs `msg` at `level` ("warning", "notice", …) in the server's log.
    pub fn log(&self, level: &CStr, msg: &str) {
        let msg = c_string(msg);
        // SAFETY: a "%s" format with one NUL-terminated string argument.
        unsafe { (api().log)(self.0, level.as_ptr(), c"%s".as_ptr(), msg.as_ptr()) };
    }

    /// The server's `maxmemory` (0: none), from `INFO memory`.
    pub fn maxmemory(&self) -> u64 {
        // SAFETY: a live context and a NUL-terminated section name; the data is freed once.
        unsafe {
            let info = (api().get_server_info)(self.0, c"memory".as_ptr());
            if info.is_null() {
                return 0;
            }
            let mut err: c_int = 0;
            let v = (api().server_info_get_field_unsigned)(info, c"maxmemory".as_ptr(), &mut err);
            (api().free_server_info)(self.0, info);
            if err != 0 { 0 } else { v }
        }
    }

    /// Replies with the arity error.
    pub fn wrong_arity(&self) {
        // SAFETY: a live context.
        unsafe { (api().wrong_arity)(self.0) };
    }

    /// Replies with an integer.
    pub fn int(&self, v: i64) {
        // SAFETY: a live context.
        unsafe { (api().reply_with_long_long)(self.0, v) };
    }

    /// Replies with an error (its text as RedisBloom spells it, "ERR …" or not).
    pub fn error(&self, msg: &str) {
        let msg = c_string(msg);
        // SAFETY: a live context and a NUL-terminated string.
        unsafe { (api().reply_with_error)(self.0, msg.as_ptr()) };
    }

    /// Replies with a simple string.
    pub fn simple(&self, msg: &str) {
        let msg = c_string(msg);
        // SAFETY: a live context and a NUL-terminated string.
        unsafe { (api().reply_with_simple_string)(self.0, msg.as_ptr()) };
    }

    /// Starts an array reply of `len` elements.
    pub fn array(&self, len: usize) {
        // SAFETY: a live context.
        unsafe { (api().reply_with_array)(self.0, len as c_long) };
    }

    /// Starts an array reply whose length is set later with [`set_array_len`](Self::set_array_len).
    pub fn array_postponed(&self) {
        // SAFETY: a live context.
        unsafe { (api().reply_with_array)(self.0, POSTPONED_LEN) };
    }

    /// Sets the length of the array started with [`array_postponed`](Self::array_postponed).
    pub fn set_array_len(&self, len: usize) {
        // SAFETY: a live context with a postponed array open.
        unsafe { (api().reply_set_array_length)(self.0, len as c_long) };
    }

    /// Replies with a bulk string.
    pub fn bulk(&self, bytes: &[u8]) {
        // SAFETY: a live context; the server copies the `len` bytes at the pointer.
        unsafe { (api().reply_with_string_buffer)(self.0, bytes.as_ptr().cast(), bytes.len()) };
    }

    /// Replies with a null.
    pub fn null(&self) {
        // SAFETY: a live context.
        unsafe { (api().reply_with_null)(self.0) };
    }

    /// Whether the command replays one the server accepted before: it came from the primary
    /// over the replication link, or from the AOF while the server loads it.
    pub fn replayed(&self) -> bool {
        // SAFETY: a live context.
        let flags = unsafe { (api().get_context_flags)(self.0) };
        flags & (CTX_FLAGS_REPLICATED | CTX_FLAGS_LOADING) != 0
    }

    /// Whether the client speaks RESP3 (`HELLO 3`).
    pub fn resp3(&self) -> bool {
        // SAFETY: a live context.
        unsafe { (api().get_context_flags)(self.0) & CTX_FLAGS_RESP3 != 0 }
    }

    /// Replies with a boolean (RESP3; RESP2 clients get 1 or 0).
    pub fn boolean(&self, b: bool) {
        // SAFETY: a live context.
        unsafe { (api().reply_with_bool)(self.0, c_int::from(b)) };
    }

    /// Starts a map of `pairs` pairs for RESP3 clients, an array of twice as many elements
    /// for RESP2 ones (RedisBloom's `RedisModule_ReplyWithMapOrArray`).
    pub fn map_or_array(&self, pairs: usize) {
        if self.resp3() {
            // SAFETY: a live context.
            unsafe { (api().reply_with_map)(self.0, pairs as c_long) };
        } else {
            self.array(2 * pairs);
        }
    }

    /// Propagates the command as it was called to replicas and the AOF.
    pub fn replicate_verbatim(&self) {
        // SAFETY: a live context.
        unsafe { (api().replicate_verbatim)(self.0) };
    }

    /// Opens `name` for reading, or for reading and writing.
    pub fn open_key(&self, name: Arg, write: bool) -> Key {
        let mode = if write { READ | WRITE } else { READ };
        // SAFETY: a live context and a string argument of the current call.
        let ptr = unsafe { (api().open_key)(self.0, name.0, mode) };
        Key(ptr)
    }
}

/// One argument of a command (a `RedisModuleString` the server owns for the call).
#[derive(Clone, Copy)]
#[repr(transparent)]
pub struct Arg(*mut RedisModuleString);

impl Arg {
    /// The argument's bytes.
    pub fn bytes(&self) -> &[u8] {
        let mut len = 0usize;
        // SAFETY: a string argument of the current call; the bytes live as long as it, longer
        // than the borrow of `self`, which does not outlive the call.
        unsafe {
            let p = (api().string_ptr_len)(self.0, &mut len);
            if p.is_null() || len == 0 {
                return &[];
            }
            std::slice::from_raw_parts(p.cast(), len)
        }
    }

    /// The argument as an integer, as Redis parses one (`None` if it is not one).
    pub fn to_i64(&self) -> Option<i64> {
        let mut v: c_longlong = 0;
        // SAFETY: a string argument of the current call.
        (unsafe { (api().string_to_long_long)(self.0, &mut v) } == OK).then_some(v)
    }

    /// The argument as a double, as Redis parses one (`None` if it is not one).
    pub fn to_f64(&self) -> Option<f64> {
        let mut v = 0.0;
        // SAFETY: a string argument of the current call.
        (unsafe { (api().string_to_double)(self.0, &mut v) } == OK).then_some(v)
    }

    /// Whether the argument is `word`, ignoring ASCII case.
    pub fn is(&self, word: &str) -> bool {
        self.bytes().eq_ignore_ascii_case(word.as_bytes())
    }
}

/// A data type this module registered, whose values are all `Box<T>`s: [`Key::set_value`]
/// stores only those, and the type's callbacks (see [`DataType::register`]) make only those.
pub struct DataType<T> {
    ptr: AtomicPtr<RedisModuleType>,
    _values: PhantomData<fn(T) -> T>,
}

impl<T> DataType<T> {
    /// A type not registered yet.
    pub const fn new() -> DataType<T> {
        DataType {
            ptr: AtomicPtr::new(null_mut()),
            _values: PhantomData,
        }
    }

    /// Registers the type (during `RedisModule_OnLoad` only); the server copies `methods`.
    ///
    /// # Safety
    /// Every callback in `methods` must take the values of this type as `Box<T>` pointers
    /// (the wrappers in [`callback`] for `T` do) and `rdb_load` must make only those.
    pub unsafe fn register(
        &self,
        ctx: Ctx,
        name: &CStr,
        encver: c_int,
        methods: &mut TypeMethods,
    ) -> Result<(), String> {
        // SAFETY: `name` is NUL-terminated; `methods` is a valid version-1 method table that
        // the server copies before returning.
        let t = unsafe { (api().create_data_type)(ctx.0, name.as_ptr(), encver, methods) };
        if t.is_null() {
            return Err(format!("could not register the data type {name:?}"));
        }
        self.ptr.store(t, Ordering::Release);
        Ok(())
    }

    fn get(&self) -> *mut RedisModuleType {
        self.ptr.load(Ordering::Acquire)
    }
}

impl<T> Default for DataType<T> {
    fn default() -> Self {
        DataType::new()
    }
}

/// What an opened key holds.
pub enum Holds<'k, T> {
    /// Nothing.
    Empty,
    /// A value of the type asked about.
    Value(&'k mut T),
    /// Anything else (another type, of this module or not).
    Other,
}

/// An open key, closed on drop.
pub struct Key(*mut RedisModuleKey);

impl Key {
    /// What the key holds, as seen by data type `t`.
    pub fn holds<'k, T>(&'k mut self, t: &DataType<T>) -> Holds<'k, T> {
        if self.0.is_null() {
            return Holds::Empty;
        }
        // SAFETY: an open key.
        match unsafe { (api().key_type)(self.0) } {
            KEYTYPE_EMPTY => Holds::Empty,
            // SAFETY: an open key holding a module value.
            KEYTYPE_MODULE if unsafe { (api().module_type_get_type)(self.0) } == t.get() => {
                // SAFETY: the value is of type `t`, whose values are all `Box<T>`s; it stays
                // alive while the key is open and borrowed (nothing else runs on the server's
                // main thread meanwhile).
                Holds::Value(unsafe { &mut *(api().module_type_get_value)(self.0).cast::<T>() })
            }
            _ => Holds::Other,
        }
    }

    /// Stores `value` in the (open for writing) key as a value of `t`; the server frees it
    /// with the type's `free` callback. `Err` gives the value back if the server refused it.
    pub fn set_value<T>(&mut self, t: &DataType<T>, value: Box<T>) -> Result<(), Box<T>> {
        let raw = Box::into_raw(value);
        // SAFETY: an open, writable key and a type registered by this module, whose values
        // are `Box<T>`s.
        if unsafe { (api().module_type_set_value)(self.0, t.get(), raw.cast()) } == OK {
            Ok(())
        } else {
            // SAFETY: the server did not take the pointer: it is still ours.
            Err(unsafe { Box::from_raw(raw) })
        }
    }

    /// Deletes the key.
    pub fn delete(&mut self) {
        // SAFETY: an open, writable key.
        unsafe { (api().delete_key)(self.0) };
    }
}

impl Drop for Key {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: opened by `open_key` and closed only here.
            unsafe { (api().close_key)(self.0) };
        }
    }
}

/// The RDB or AOF stream of a data type callback.
#[derive(Clone, Copy)]
pub struct Io(*mut RedisModuleIO);

impl Io {
    /// Writes a string buffer to the RDB.
    pub fn save_buffer(&self, bytes: &[u8]) {
        // SAFETY: a live RDB stream; the server copies the bytes.
        unsafe { (api().save_string_buffer)(self.0, bytes.as_ptr().cast(), bytes.len()) };
    }

    /// Reads a string buffer from the RDB (`None` on a read error).
    pub fn load_buffer(&self) -> Option<Vec<u8>> {
        let mut len = 0usize;
        // SAFETY: a live RDB stream; the buffer, `len` bytes, is the module's to free with
        // `RedisModule_Free`.
        unsafe {
            let p = (api().load_string_buffer)(self.0, &mut len);
            if (api().is_io_error)(self.0) != 0 {
                if !p.is_null() {
                    (api().free)(p.cast());
                }
                return None;
            }
            if p.is_null() {
                return None;
            }
            let v = std::slice::from_raw_parts(p.cast::<u8>(), len).to_vec();
            (api().free)(p.cast());
            Some(v)
        }
    }

    /// Writes an unsigned integer to the RDB.
    pub fn save_unsigned(&self, v: u64) {
        // SAFETY: a live RDB stream.
        unsafe { (api().save_unsigned)(self.0, v) };
    }

    /// Reads an unsigned integer from the RDB.
    pub fn load_unsigned(&self) -> u64 {
        // SAFETY: a live RDB stream.
        unsafe { (api().load_unsigned)(self.0) }
    }

    /// Logs `msg` as a warning about this stream.
    pub fn log_error(&self, msg: &str) {
        let msg = c_string(msg);
        // SAFETY: a "%s" format with one NUL-terminated string argument.
        unsafe { (api().log_io_error)(self.0, c"warning".as_ptr(), c"%s".as_ptr(), msg.as_ptr()) };
    }
}

/// The AOF being rewritten, and the key whose commands it receives.
#[derive(Clone, Copy)]
pub struct Aof {
    io: *mut RedisModuleIO,
    key: *mut RedisModuleString,
}

impl Aof {
    /// Emits `command key pos bytes`.
    pub fn emit_chunk(&self, command: &CStr, pos: i64, bytes: &[u8]) {
        // SAFETY: the stream and key of the current `aof_rewrite` call; "slb" takes a
        // RedisModuleString*, a long long, then a char* and a size_t.
        unsafe {
            (api().emit_aof)(
                self.io,
                command.as_ptr(),
                c"slb".as_ptr(),
                self.key,
                pos as c_longlong,
                bytes.as_ptr().cast::<c_char>(),
                bytes.len(),
            )
        };
    }
}

/// The arguments Redis passed to a command or to `RedisModule_OnLoad`, as a slice.
///
/// # Safety
/// `argv` and `argc` must be what Redis passed, and the slice must not outlive the call.
pub unsafe fn args<'a>(argv: *mut *mut RedisModuleString, argc: c_int) -> &'a [Arg] {
    if argv.is_null() || argc <= 0 {
        &[]
    } else {
        // SAFETY: Redis passes `argc` valid string pointers; `Arg` is a transparent wrapper of
        // one pointer (a one-field tuple struct of the same layout).
        unsafe { std::slice::from_raw_parts(argv.cast::<Arg>(), argc as usize) }
    }
}

/// Runs a command handler for a call from Redis: the arguments as a slice, a panic turned into
/// an error reply instead of unwinding into C.
///
/// # Safety
/// `ctx`, `argv` and `argc` must be what Redis passed to a command function.
pub unsafe fn run_command(
    ctx: *mut RedisModuleCtx,
    argv: *mut *mut RedisModuleString,
    argc: c_int,
    handler: fn(Ctx, &[Arg]),
) -> c_int {
    let ctx = Ctx(ctx);
    // SAFETY: the caller's promise.
    let args = unsafe { args(argv, argc) };
    if catch_unwind(AssertUnwindSafe(|| handler(ctx, args))).is_err() {
        ctx.error("ERR cuckoo-sst module: internal error (a bug: see the server log)");
    }
    OK
}

/// The data type callbacks, for values that are `Box<T>`s; each catches a panic rather than
/// unwind into the server.
pub mod callback {
    use super::*;

    /// `rdb_load`: `load` reads the value; `None` fails the load.
    ///
    /// # Safety
    /// `io` must be the stream Redis passed to `rdb_load`.
    pub unsafe fn rdb_load<T>(
        io: *mut RedisModuleIO,
        encver: c_int,
        load: fn(Io, c_int) -> Option<T>,
    ) -> *mut c_void {
        match catch_unwind(AssertUnwindSafe(|| load(Io(io), encver))) {
            Ok(Some(v)) => Box::into_raw(Box::new(v)).cast(),
            _ => null_mut(),
        }
    }

    /// `rdb_save`: `save` writes the value.
    ///
    /// # Safety
    /// Redis's arguments to `rdb_save` of a type whose values are `Box<T>`s.
    pub unsafe fn rdb_save<T>(io: *mut RedisModuleIO, value: *mut c_void, save: fn(Io, &T)) {
        // SAFETY: the caller's promise; the server does not change the value meanwhile.
        let v = unsafe { &*value.cast::<T>() };
        let _ = catch_unwind(AssertUnwindSafe(|| save(Io(io), v)));
    }

    /// `aof_rewrite`: `emit` writes the commands that rebuild the value.
    ///
    /// # Safety
    /// Redis's arguments to `aof_rewrite` of a type whose values are `Box<T>`s.
    pub unsafe fn aof_rewrite<T>(
        io: *mut RedisModuleIO,
        key: *mut RedisModuleString,
        value: *mut c_void,
        emit: impl FnOnce(Aof, &T),
    ) {
        // SAFETY: the caller's promise; the server does not change the value meanwhile.
        let v = unsafe { &*value.cast::<T>() };
        let _ = catch_unwind(AssertUnwindSafe(|| emit(Aof { io, key }, v)));
    }

    /// `mem_usage`.
    ///
    /// # Safety
    /// Redis's argument to `mem_usage` of a type whose values are `Box<T>`s.
    pub unsafe fn mem_usage<T>(value: *const c_void, size: fn(&T) -> usize) -> usize {
        // SAFETY: the caller's promise.
        let v = unsafe { &*value.cast::<T>() };
        catch_unwind(AssertUnwindSafe(|| size(v))).unwrap_or(0)
    }

    /// `copy`: a clone of the value (`None` if cloning panicked: `COPY` then fails).
    ///
    /// # Safety
    /// Redis's `value` argument to `copy` of a type whose values are `Box<T>`s.
    pub unsafe fn copy<T: Clone>(value: *const c_void) -> *mut c_void {
        // SAFETY: the caller's promise.
        let v = unsafe { &*value.cast::<T>() };
        match catch_unwind(AssertUnwindSafe(|| Box::new(v.clone()))) {
            Ok(b) => Box::into_raw(b).cast(),
            Err(_) => null_mut(),
        }
    }

    /// `free`.
    ///
    /// # Safety
    /// Redis's argument to `free` of a type whose values are `Box<T>`s (freed only here).
    pub unsafe fn free<T>(value: *mut c_void) {
        // SAFETY: the caller's promise.
        drop(unsafe { Box::from_raw(value.cast::<T>()) });
    }

    /// Wraps the context of `RedisModule_OnLoad`.
    ///
    /// # Safety
    /// `ctx` must be the context Redis passed.
    pub unsafe fn ctx(ctx: *mut RedisModuleCtx) -> Ctx {
        Ctx(ctx)
    }
}
