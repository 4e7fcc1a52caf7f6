//! A real `redis-server` with the module loaded, on a free port in a temporary directory,
//! killed on drop; and a small RESP2 client over `TcpStream`.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A reply.
#[derive(Clone, Debug, PartialEq)]
pub enum R {
    /// `+…`
    Simple(String),
    /// `-…`
    Err(String),
    /// `:…`
    Int(i64),
    /// `$…`
    Bulk(Vec<u8>),
    /// `$-1` or `*-1`
    Nil,
    /// `*…`
    Array(Vec<R>),
    /// `#t`, `#f` (RESP3)
    Bool(bool),
    /// `%…` (RESP3): keys and values, alternating
    Map(Vec<R>),
}

impl R {
    pub fn int(&self) -> i64 {
        match self {
            R::Int(n) => *n,
            other => panic!("expected an integer, got {other:?}"),
        }
    }

    pub fn ints(&self) -> Vec<i64> {
        match self {
            R::Array(v) => v.iter().map(R::int).collect(),
            other => panic!("expected an array, got {other:?}"),
        }
    }

    pub fn err(&self) -> &str {
        match self {
            R::Err(e) => e,
            other => panic!("expected an error, got {other:?}"),
        }
    }

    pub fn bytes(&self) -> &[u8] {
        match self {
            R::Bulk(b) => b,
            other => panic!("expected a bulk string, got {other:?}"),
        }
    }

    /// An `*INFO` reply as (field, value) pairs.
    pub fn pairs(&self) -> Vec<(String, R)> {
        let (R::Array(v) | R::Map(v)) = self else {
            panic!("expected an array or a map, got {self:?}")
        };
        v.chunks(2)
            .map(|p| match &p[0] {
                R::Simple(s) => (s.clone(), p[1].clone()),
                other => panic!("expected a field name, got {other:?}"),
            })
            .collect()
    }

    /// The value of `field` in an `*INFO` reply.
    pub fn field(&self, field: &str) -> R {
        self.pairs()
            .into_iter()
            .find(|(f, _)| f == field)
            .unwrap_or_else(|| panic!("no {field} in {self:?}"))
            .1
    }
}

/// A connection.
pub struct Client {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Client {
    pub fn connect(port: u16) -> std::io::Result<Client> {
        let s = TcpStream::connect(("127.0.0.1", port))?;
        s.set_read_timeout(Some(Duration::from_secs(60)))?;
        Ok(Client {
            reader: BufReader::new(s.try_clone()?),
            writer: s,
        })
    }

    /// Sends one command of byte-string arguments and reads its reply.
    pub fn call<A: AsRef<[u8]>>(&mut self, args: &[A]) -> R {
        self.send(args);
        self.read()
    }

    /// Sends one command of string arguments (split on spaces) and reads its reply.
    pub fn q(&mut self, line: &str) -> R {
        let args: Vec<&str> = line.split(' ').filter(|s| !s.is_empty()).collect();
        self.call(&args)
    }

    pub fn send<A: AsRef<[u8]>>(&mut self, args: &[A]) {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            let a = a.as_ref();
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        self.writer.write_all(&out).expect("send");
    }

    pub fn read(&mut self) -> R {
        let mut line = Vec::new();
        self.reader.read_until(b'\n', &mut line).expect("read");
        assert!(line.ends_with(b"\r\n"), "a reply line: {line:?}");
        let body = String::from_utf8_lossy(&line[1..line.len() - 2]).into_owned();
        match line[0] {
            b'+' => R::Simple(body),
            b'-' => R::Err(body),
            b':' => R::Int(body.parse().expect("an integer")),
            b'$' => {
                let n: i64 = body.parse().expect("a length");
                if n < 0 {
                    return R::Nil;
                }
                let mut b = vec![0; n as usize + 2];
                self.reader.read_exact(&mut b).expect("read");
                b.truncate(n as usize);
                R::Bulk(b)
            }
            b'*' => {
                let n: i64 = body.parse().expect("a length");
                if n < 0 {
                    return R::Nil;
                }
                R::Array((0..n).map(|_| self.read()).collect())
            }
            b'#' => R::Bool(body == "t"),
            b'_' => R::Nil,
            b'%' => {
                let n: usize = body.parse().expect("a length");
                R::Map((0..2 * n).map(|_| self.read()).collect())
            }
            other => panic!("unknown reply type {other:?}"),
        }
    }
}

/// The module: next to this test's binary (cargo builds the library's cdylib for the tests,
/// in `target/<profile>/deps`), or, for an example (`target/<profile>/examples`), in
/// `target/<profile>` or its `deps`.
pub fn module() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary");
    let dir = exe.parent().expect("target/<profile>/deps");
    let profile = dir.parent();
    [
        Some(dir.to_path_buf()),
        profile.map(Path::to_path_buf),
        profile.map(|p| p.join("deps")),
    ]
    .into_iter()
    .flatten()
    .map(|d| d.join("libcuckoo_sst_redis.so"))
    .find(|p| p.is_file())
    .expect("libcuckoo_sst_redis.so next to the test binary")
}

/// `redis-server`: `REDIS_SERVER`, or the one on the PATH, installed by
/// `scripts/install-redis` if there is none.
pub fn redis_server() -> &'static Path {
    static SERVER: OnceLock<PathBuf> = OnceLock::new();
    SERVER.get_or_init(|| {
        if let Some(p) = std::env::var_os("REDIS_SERVER") {
            return PathBuf::from(p);
        }
        let works = || {
            Command::new("redis-server")
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        };
        if !works() {
            let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/install-redis");
            let status = Command::new(&script)
                .status()
                .unwrap_or_else(|e| panic!("running {}: {e}", script.display()));
            assert!(
                status.success() && works(),
                "no redis-server, and {} could not install one: install Redis 7 or set \
                 REDIS_SERVER",
                script.display()
            );
        }
        PathBuf::from("redis-server")
    })
}

fn free_port() -> u16 {
    TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// A running server, killed (and waited for) on drop.
pub struct Server {
    child: Option<Child>,
    pub port: u16,
    pub dir: PathBuf,
    extra: Vec<String>,
    /// A command the server runs under (`prlimit --as=… --`), or none.
    prefix: Vec<String>,
}

impl Server {
    /// A server with the module in a new directory under `root`, with `extra` settings
    /// (`["--appendonly", "yes"]`, …).
    pub fn start(root: &Path, extra: &[&str]) -> Server {
        Server::start_under(root, &[], extra)
    }

    /// [`start`](Self::start), the server run by `prefix` (`["prlimit", "--as=…", "--"]`).
    pub fn start_under(root: &Path, prefix: &[&str], extra: &[&str]) -> Server {
        let dir = root.join(format!("server-{}", free_port()));
        std::fs::create_dir_all(&dir).expect("server dir");
        let mut s = Server {
            child: None,
            port: 0,
            dir,
            extra: extra.iter().map(|s| s.to_string()).collect(),
            prefix: prefix.iter().map(|s| s.to_string()).collect(),
        };
        s.spawn();
        s
    }

    fn spawn(&mut self) {
        for _attempt in 0..5 {
            let port = free_port();
            let mut cmd = match self.prefix.split_first() {
                Some((program, args)) => {
                    let mut c = Command::new(program);
                    c.args(args).arg(redis_server());
                    c
                }
                None => Command::new(redis_server()),
            };
            cmd.current_dir(&self.dir)
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--dir", self.dir.to_str().expect("utf-8 path")])
                .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
                .args(["--enable-debug-command", "yes", "--logfile", "redis.log"])
                .arg("--loadmodule")
                .arg(module())
                .args(&self.extra)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            let mut child = cmd.spawn().expect("start redis-server");
            let deadline = Instant::now() + Duration::from_secs(20);
            loop {
                if let Ok(Some(_)) = child.try_wait() {
                    break; // exited: the port was taken, or the module failed (see the log)
                }
                if let Ok(mut c) = Client::connect(port)
                    && c.q("PING") == R::Simple("PONG".into())
                {
                    self.child = Some(child);
                    self.port = port;
                    return;
                }
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        panic!("redis-server did not start; its log:\n{}", self.log());
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("redis.log")).unwrap_or_default()
    }

    pub fn client(&self) -> Client {
        Client::connect(self.port).expect("connect")
    }

    /// Kills the server (no save) and starts it again in the same directory.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// [`restart`](Self::restart) with other settings (module arguments first).
    pub fn restart_with(&mut self, extra: &[&str]) {
        self.kill();
        self.extra = extra.iter().map(|s| s.to_string()).collect();
        self.spawn();
    }

    /// Whether the server process is still running.
    pub fn alive(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            let log = self.log();
            let tail: Vec<&str> = log.lines().rev().take(400).collect();
            eprintln!("the server's log, last lines:");
            for line in tail.iter().rev() {
                eprintln!("  {line}");
            }
        }
    }
}
