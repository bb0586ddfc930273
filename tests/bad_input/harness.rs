//! The case runner: in-process cases under `catch_unwind`, the others in a child process (this
//! test binary re-executed for one case) under a timeout; one report of every failure.

use std::io::Read;
use std::panic::AssertUnwindSafe;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

/// One bad input: a name that says what is fed to what, and the body that asserts the outcome.
pub struct Case {
    pub name: &'static str,
    pub run: fn(),
    /// Run in a child process: the case may abort, overflow the stack, allocate hugely, or run
    /// on the GPU.
    pub isolate: bool,
}

impl Case {
    /// A case that runs in-process (a panic is caught and reported).
    pub const fn new(name: &'static str, run: fn()) -> Self {
        Self {
            name,
            run,
            isolate: false,
        }
    }

    /// A case that runs in a child process.
    pub const fn isolated(name: &'static str, run: fn()) -> Self {
        Self {
            name,
            run,
            isolate: true,
        }
    }
}

/// Names the case a child process runs.
const CASE_ENV: &str = "BAD_INPUT_CASE";
/// How long one child may run.
const TIMEOUT: Duration = Duration::from_secs(60);
const PANIC_START: &str = "<<PANIC ";
const PANIC_END: &str = " PANIC>>";
const SKIP_MARK: &str = "SKIPPED";

/// The last panic of an in-process case: where and what.
static PANIC: Mutex<Option<String>> = Mutex::new(None);
/// Why the current in-process case skipped, if it did.
static SKIP: Mutex<Option<String>> = Mutex::new(None);

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Marks the running case as skipped (it checked nothing), with the reason.
pub fn skip(reason: &str) {
    eprintln!("{SKIP_MARK}: {reason}");
    *lock(&SKIP) = Some(reason.to_string());
}

/// The first frame of a backtrace inside vramkit itself, for panics raised in `core` or `std`
/// on vramkit's behalf (an overflow, `clamp`, an index).
fn library_frame(backtrace: &str) -> Option<String> {
    let lines: Vec<&str> = backtrace.lines().map(str::trim).collect();
    let at = lines.iter().position(|l| {
        l.split_once(": ")
            .is_some_and(|(n, f)| n.parse::<u32>().is_ok() && f.starts_with("vramkit::"))
    })?;
    let function = lines[at].split_once(": ").map_or("", |(_, f)| f);
    let place = lines
        .get(at + 1)
        .and_then(|l| l.strip_prefix("at "))
        .map_or(String::new(), |p| format!(" at {p}"));
    Some(format!("{function}{place}"))
}

/// Records every panic as one marked line: its location, vramkit's frame where the panic came
/// from inside `core`/`std`, and its message.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(a non-string payload)".into());
        let location = info.location().map_or("?".into(), |l| l.to_string());
        let in_tests = location.contains("tests/");
        let frame = if in_tests {
            None
        } else {
            library_frame(&std::backtrace::Backtrace::force_capture().to_string())
        };
        let text = match frame {
            Some(f) if !location.contains("src/") => {
                format!("PANIC at {location} (from {f}): {message}")
            }
            _ if in_tests => message,
            _ => format!("PANIC at {location}: {message}"),
        };
        eprintln!("{PANIC_START}{text}{PANIC_END}");
        *lock(&PANIC) = Some(text);
    }));
}

enum Outcome {
    Ok,
    Skipped(String),
    Fail(String),
}

fn run_in_process(case: &Case) -> Outcome {
    *lock(&PANIC) = None;
    *lock(&SKIP) = None;
    let result = std::panic::catch_unwind(AssertUnwindSafe(case.run));
    match (result, lock(&SKIP).take()) {
        (Ok(()), None) => Outcome::Ok,
        (Ok(()), Some(reason)) => Outcome::Skipped(reason),
        (Err(_), _) => Outcome::Fail(
            lock(&PANIC)
                .take()
                .unwrap_or_else(|| "panicked (no message recorded)".into()),
        ),
    }
}

fn read_all(mut r: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    })
}

fn wait_with_timeout(child: &mut Child) -> Option<ExitStatus> {
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if start.elapsed() < TIMEOUT => thread::sleep(Duration::from_millis(10)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

fn describe(status: ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            let name = match sig {
                6 => "SIGABRT (abort)",
                9 => "SIGKILL (out of memory?)",
                11 => "SIGSEGV (invalid memory access or stack overflow)",
                7 => "SIGBUS",
                4 => "SIGILL",
                _ => "a signal",
            };
            return format!("killed by signal {sig}, {name}");
        }
    }
    format!("exited with {status}")
}

fn run_in_child(case: &Case, test: &str) -> Outcome {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return Outcome::Fail(format!("cannot find the test binary: {e}")),
    };
    let spawned = Command::new(exe)
        .args([test, "--exact", "--nocapture", "--test-threads", "1"])
        .env(CASE_ENV, case.name)
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => return Outcome::Fail(format!("cannot start a child process: {e}")),
    };
    let out = child.stdout.take().map(read_all);
    let err = child.stderr.take().map(read_all);
    let status = wait_with_timeout(&mut child);
    let text = |h: Option<thread::JoinHandle<String>>| h.and_then(|h| h.join().ok());
    let (_out, err) = (text(out).unwrap_or_default(), text(err).unwrap_or_default());
    let panic = err.split(PANIC_START).nth(1).map(|rest| {
        rest.split(PANIC_END)
            .next()
            .unwrap_or(rest)
            .trim()
            .to_string()
    });
    let tail = || {
        let lines: Vec<&str> = err.lines().collect();
        lines[lines.len().saturating_sub(6)..].join("\n      ")
    };
    match status {
        None => Outcome::Fail(format!(
            "HANG: no result within {TIMEOUT:?}; killed. Last output:\n      {}",
            tail()
        )),
        Some(s) if s.success() => match err.lines().find(|l| l.contains(SKIP_MARK)) {
            Some(line) => Outcome::Skipped(line.trim().to_string()),
            None => Outcome::Ok,
        },
        Some(s) => Outcome::Fail(match panic {
            Some(p) => p,
            None => format!(
                "CRASH: the child {} with no panic. Last output:\n      {}",
                describe(s),
                tail()
            ),
        }),
    }
}

/// Runs one case, in a child or in-process.
fn run_one(case: &Case, test: &str, isolate_all: bool) -> Outcome {
    if case.isolate || isolate_all {
        run_in_child(case, test)
    } else {
        run_in_process(case)
    }
}

/// Runs every case (or, in a child, the one named by `BAD_INPUT_CASE`) and fails with one
/// report listing every failing case.
pub fn run_all(cases: &[&'static Case], test: &str) {
    let mut seen = std::collections::HashSet::new();
    for c in cases {
        assert!(seen.insert(c.name), "two cases are named `{}`", c.name);
    }
    install_panic_hook();
    if let Ok(name) = std::env::var(CASE_ENV) {
        let case = cases
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no case is named `{name}`"));
        (case.run)();
        return;
    }
    let only = std::env::var("BAD_INPUT_ONLY").unwrap_or_default();
    let isolate_all = std::env::var("BAD_INPUT_ISOLATE").is_ok_and(|v| v == "1");
    let chosen: Vec<&Case> = cases
        .iter()
        .copied()
        .filter(|c| c.name.contains(only.as_str()))
        .collect();
    let start = Instant::now();
    let results: Vec<Mutex<Option<Outcome>>> = chosen.iter().map(|_| Mutex::new(None)).collect();
    // In-process cases one after another (they share the panic hook's record); child processes
    // a few at a time.
    for (i, c) in chosen.iter().enumerate() {
        if !(c.isolate || isolate_all) {
            *lock(&results[i]) = Some(run_one(c, test, false));
        }
    }
    let jobs = thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 4));
    let next = AtomicUsize::new(0);
    thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(c) = chosen.get(i) else { break };
                if c.isolate || isolate_all {
                    *lock(&results[i]) = Some(run_in_child(c, test));
                }
            });
        }
    });
    let mut failures = Vec::new();
    let (mut ok, mut skipped) = (0, 0);
    for (c, r) in chosen.iter().zip(results) {
        let where_ = if c.isolate || isolate_all {
            "child"
        } else {
            "in-process"
        };
        match r.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some(Outcome::Ok) => {
                ok += 1;
                println!("ok       {} ({where_})", c.name);
            }
            Some(Outcome::Skipped(why)) => {
                skipped += 1;
                println!("SKIPPED  {}: {why}", c.name);
            }
            Some(Outcome::Fail(why)) => {
                println!("FAIL     {} ({where_}): {why}", c.name);
                failures.push(format!("- {}: {why}", c.name));
            }
            None => failures.push(format!("- {}: did not run", c.name)),
        }
    }
    println!(
        "{} cases: {ok} ok, {skipped} skipped, {} failed, in {:.1} s",
        chosen.len(),
        failures.len(),
        start.elapsed().as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "{} of {} bad-input cases failed:\n{}",
        failures.len(),
        chosen.len(),
        failures.join("\n")
    );
}
