//! Undo every change `bench` makes, on every exit path.
//!
//! Each change is made through [`Cleanup::apply`], which runs the change and records its undo
//! action in one process-wide registry. The actions run in reverse order:
//! - on success and on error, when the [`Cleanup`] scope is dropped (or earlier through
//!   [`Undo::run`], e.g. the memcg of one repetition);
//! - on a panic, by the same `Drop` while the stack unwinds (and, should the binary ever be built
//!   with `panic = "abort"`, from the panic hook);
//! - on SIGINT, SIGTERM or SIGHUP, from a signal thread fed by a self-pipe: it runs every
//!   registered action and exits with 128 + the signal number.
//!
//! A change and the registration of its undo happen under one lock that the signal thread also
//! takes, so a signal never sees a change without its undo. Once a signal has started the
//! clean-up, `apply` refuses new changes.

use anyhow::{bail, Result};
use std::os::fd::{AsRawFd, IntoRawFd};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, Once};

type Action = Box<dyn FnOnce() -> Result<()> + Send>;

struct Entry {
    scope: u64,
    key: u64,
    what: String,
    action: Action,
}

static REGISTRY: Mutex<Vec<Entry>> = Mutex::new(Vec::new());
/// Held while a change or an undo action runs, so the signal thread waits for it.
static RUNNING: Mutex<()> = Mutex::new(());
static STOPPING: AtomicBool = AtomicBool::new(false);
static NEXT: AtomicU64 = AtomicU64::new(1);
static SIGNAL_PIPE: AtomicI32 = AtomicI32::new(-1);
static INSTALL: Once = Once::new();

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Print a line on stderr without the std lock (usable from the signal thread while another
/// thread may hold it).
fn say(msg: &str) {
    let line = format!("reclaimlab: {msg}\n");
    // SAFETY: writing a valid buffer to fd 2.
    unsafe { libc::write(2, line.as_ptr().cast(), line.len()) };
}

/// A scope of changes: everything applied through it is undone when it is dropped.
pub struct Cleanup {
    scope: u64,
}

/// Handle to one registered undo action.
pub struct Undo {
    key: u64,
}

impl Cleanup {
    /// A new scope. Installs the signal handlers (once per process).
    pub fn new() -> Cleanup {
        INSTALL.call_once(install_handlers);
        Cleanup {
            scope: NEXT.fetch_add(1, Ordering::SeqCst),
        }
    }

    /// Make a change and register how to undo it. `what` names the change for messages.
    /// If `change` fails, nothing is registered (it must leave nothing half-done, or register
    /// its parts separately).
    pub fn apply<T>(
        &self,
        what: impl Into<String>,
        change: impl FnOnce() -> Result<T>,
        undo: impl FnOnce() -> Result<()> + Send + 'static,
    ) -> Result<(T, Undo)> {
        let what = what.into();
        let _run = lock(&RUNNING);
        if STOPPING.load(Ordering::SeqCst) {
            bail!("interrupted: not starting {what}");
        }
        let v = change()?;
        let key = NEXT.fetch_add(1, Ordering::SeqCst);
        lock(&REGISTRY).push(Entry {
            scope: self.scope,
            key,
            what,
            action: Box::new(undo),
        });
        Ok((v, Undo { key }))
    }

    /// Register an undo action for a change already made (or about to be made by someone else).
    pub fn defer(
        &self,
        what: impl Into<String>,
        undo: impl FnOnce() -> Result<()> + Send + 'static,
    ) -> Result<Undo> {
        Ok(self.apply(what, || Ok(()), undo)?.1)
    }

    /// Undo everything of this scope now, newest first. Returns the errors (also printed).
    pub fn run_all(&self) -> Vec<String> {
        run_matching(|e| e.scope == self.scope)
    }
}

impl Default for Cleanup {
    fn default() -> Self {
        Cleanup::new()
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        self.run_all();
    }
}

impl Undo {
    /// Run this undo action now (if nobody ran it yet).
    pub fn run(self) -> Result<()> {
        let _run = lock(&RUNNING);
        let e = {
            let mut r = lock(&REGISTRY);
            match r.iter().position(|e| e.key == self.key) {
                Some(i) => r.remove(i),
                None => return Ok(()),
            }
        };
        (e.action)().map_err(|err| anyhow::anyhow!("undoing {}: {err:#}", e.what))
    }
}

/// Run the matching actions newest first, one at a time, each taken out of the registry first
/// so that no action ever runs twice.
fn run_matching(pred: impl Fn(&Entry) -> bool) -> Vec<String> {
    let mut errors = Vec::new();
    let _run = lock(&RUNNING);
    loop {
        let e = {
            let mut r = lock(&REGISTRY);
            match r.iter().rposition(&pred) {
                Some(i) => r.remove(i),
                None => break,
            }
        };
        let what = e.what.clone();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(e.action)) {
            Ok(Ok(())) => {}
            Ok(Err(err)) => {
                let m = format!("clean-up: undoing {what} failed: {err:#}");
                say(&m);
                errors.push(m);
            }
            Err(_) => {
                let m = format!("clean-up: undoing {what} panicked");
                say(&m);
                errors.push(m);
            }
        }
    }
    errors
}

/// Undo every registered change of every scope (signal path).
pub fn run_everything() -> Vec<String> {
    STOPPING.store(true, Ordering::SeqCst);
    run_matching(|_| true)
}

/// If a signal started the clean-up, wait for the signal thread to exit the process.
pub fn park_if_stopping() {
    if STOPPING.load(Ordering::SeqCst) {
        loop {
            std::thread::sleep(std::time::Duration::from_secs(60));
        }
    }
}

/// Remove a file we created; one that is already gone is fine.
pub fn remove_file(p: &std::path::Path) -> Result<()> {
    match std::fs::remove_file(p) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(anyhow::Error::new(e).context(format!("removing {}", p.display())))
        }
        _ => Ok(()),
    }
}

extern "C" fn on_signal(sig: libc::c_int) {
    let fd = SIGNAL_PIPE.load(Ordering::Relaxed);
    if fd >= 0 {
        let b = sig as u8;
        // SAFETY: write(2) is async-signal-safe; the buffer is a local byte.
        unsafe { libc::write(fd, (&b as *const u8).cast(), 1) };
    }
}

fn install_handlers() {
    use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
    let Ok((rd, wr)) = nix::unistd::pipe() else {
        say("cannot create the signal pipe: SIGINT/SIGTERM will not clean up");
        return;
    };
    SIGNAL_PIPE.store(wr.into_raw_fd(), Ordering::SeqCst);
    let handler = SigAction::new(
        SigHandler::Handler(on_signal),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    for s in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        // SAFETY: the handler only calls write(2).
        let _ = unsafe { sigaction(s, &handler) };
    }
    std::thread::Builder::new()
        .name("reclaimlab-signals".into())
        .spawn(move || {
            let mut b = [0u8; 1];
            loop {
                match nix::unistd::read(rd.as_raw_fd(), &mut b) {
                    Ok(1) => break,
                    Err(nix::errno::Errno::EINTR) => continue,
                    _ => return,
                }
            }
            let sig = b[0] as i32;
            say(&format!(
                "got signal {sig}: cleaning up (memcg, workload, swap, tracing) and exiting"
            ));
            run_everything();
            std::process::exit(128 + sig);
        })
        .expect("spawn the signal thread");

    #[cfg(panic = "abort")]
    {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            prev(info);
            run_everything();
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex as M};

    #[test]
    fn undoes_in_reverse_on_drop_and_once() {
        let log = Arc::new(M::new(Vec::new()));
        {
            let c = Cleanup::new();
            for i in 0..3 {
                let l = log.clone();
                c.apply(
                    format!("step {i}"),
                    || Ok(()),
                    move || {
                        l.lock().unwrap().push(i);
                        Ok(())
                    },
                )
                .unwrap();
            }
            let l = log.clone();
            let u = c
                .defer("early", move || {
                    l.lock().unwrap().push(99);
                    Ok(())
                })
                .unwrap();
            u.run().unwrap();
        }
        assert_eq!(*log.lock().unwrap(), vec![99, 2, 1, 0]);
    }

    #[test]
    fn failed_change_registers_nothing_and_errors_do_not_stop_the_rest() {
        let log = Arc::new(M::new(Vec::new()));
        let c = Cleanup::new();
        let r: Result<((), Undo)> = c.apply("bad", || bail!("no"), || Ok(()));
        assert!(r.is_err());
        let l = log.clone();
        c.defer("first", move || {
            l.lock().unwrap().push(1);
            Ok(())
        })
        .unwrap();
        c.defer("failing", || bail!("boom")).unwrap();
        let errs = c.run_all();
        assert_eq!(errs.len(), 1);
        assert!(errs[0].contains("failing"), "{errs:?}");
        assert_eq!(*log.lock().unwrap(), vec![1]);
    }

    #[test]
    fn panic_unwinding_runs_the_scope() {
        let log = Arc::new(M::new(Vec::new()));
        let l = log.clone();
        let r = std::panic::catch_unwind(move || {
            let c = Cleanup::new();
            c.defer("x", move || {
                l.lock().unwrap().push(7);
                Ok(())
            })
            .unwrap();
            panic!("injected");
        });
        assert!(r.is_err());
        assert_eq!(*log.lock().unwrap(), vec![7]);
    }
}
