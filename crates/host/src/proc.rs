//! Processes bench starts: each in its own process group, moved into the memcg before it runs
//! anything of the workload, killed with SIGKILL by PID/process group (never by name), and
//! reaped.

use crate::cgroup::Memcg;
use crate::cleanup::{Cleanup, Undo};
use anyhow::{bail, Context, Result};
use nix::sys::signal::{killpg, Signal};
use nix::sys::wait::{waitid, waitpid, Id, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;
use std::ffi::CString;
use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How a started process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    Exited(i32),
    Signaled(i32),
}

impl Ended {
    pub fn ok(&self) -> bool {
        *self == Ended::Exited(0)
    }
    pub fn describe(&self) -> String {
        match self {
            Ended::Exited(c) => format!("exited with status {c}"),
            Ended::Signaled(s) => format!("was killed by signal {s}"),
        }
    }
}

/// A process bench started (the leader of its own process group). Its clean-up kills the group
/// and reaps it, but only while it is unreaped: a reaped PID may belong to someone else.
pub struct Started {
    pub pid: i32,
    /// The PID while it is ours to signal (not yet reaped), else 0.
    live: Arc<AtomicI32>,
}

impl Started {
    /// A new, not yet started process and the clean-up action for it.
    fn pending() -> (Arc<AtomicI32>, impl FnOnce() -> Result<()> + Send + 'static) {
        let live = Arc::new(AtomicI32::new(0));
        let l2 = live.clone();
        (live, move || {
            let pid = l2.swap(0, Ordering::SeqCst);
            if pid > 0 {
                // Unreaped, so the PID and the group it leads are still ours.
                let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
                let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
                let _ = waitpid(Pid::from_raw(pid), None);
            }
            Ok(())
        })
    }

    /// Wait until `deadline`, calling `tick` every ~100 ms; None on timeout. Once the process
    /// has ended it is marked as no longer ours to signal, then reaped.
    pub fn wait_until(&self, deadline: Instant, tick: &mut dyn FnMut()) -> Result<Option<Ended>> {
        let pid = Pid::from_raw(self.pid);
        loop {
            let peek = waitid(
                Id::Pid(pid),
                WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT,
            )
            .with_context(|| format!("waiting for pid {pid}"))?;
            if !matches!(peek, WaitStatus::StillAlive) {
                self.live.store(0, Ordering::SeqCst);
                return match waitpid(pid, None).with_context(|| format!("reaping pid {pid}"))? {
                    WaitStatus::Exited(_, c) => Ok(Some(Ended::Exited(c))),
                    WaitStatus::Signaled(_, s, _) => Ok(Some(Ended::Signaled(s as i32))),
                    other => bail!("unexpected wait status of pid {pid}: {other:?}"),
                };
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            tick();
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Spawn `cmd` and register its clean-up. The command should put the child in its own process
/// group and the memcg (see [`JoinMemcg::in_child`]).
pub fn spawn(
    cleanup: &Cleanup,
    what: &str,
    cmd: &mut std::process::Command,
) -> Result<(Started, Undo)> {
    let (live, undo) = Started::pending();
    let (pid, u) = cleanup.apply(
        what,
        || {
            let c = cmd.spawn().with_context(|| format!("starting {what}"))?;
            live.store(c.id() as i32, Ordering::SeqCst);
            Ok(c.id() as i32)
        },
        undo,
    )?;
    Ok((Started { pid, live }, u))
}

/// Prepared in the parent so the child does not allocate before it has joined the memcg.
pub struct JoinMemcg {
    procs: CString,
}

impl JoinMemcg {
    pub fn new(cg: &Memcg) -> Result<JoinMemcg> {
        Ok(JoinMemcg {
            procs: CString::new(cg.procs_path().into_os_string().into_encoded_bytes())?,
        })
    }

    /// In the child between fork and exec: own process group, die with the parent, join the
    /// memcg. Only async-signal-safe calls.
    pub fn in_child(&self) -> std::io::Result<()> {
        // SAFETY: plain syscalls on valid pointers; no allocation.
        unsafe {
            if libc::setpgid(0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            // Our signal handlers write to bench's signal pipe: the child must not.
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGTERM, libc::SIG_DFL);
            libc::signal(libc::SIGHUP, libc::SIG_DFL);
            let fd = libc::open(self.procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // "0" moves the writing process itself.
            let r = libc::write(fd, b"0".as_ptr().cast(), 1);
            libc::close(fd);
            if r != 1 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

/// In a forked child: close every descriptor above stderr except `keep` (close_range(2),
/// Linux 5.9). No allocation: async-signal-safe.
fn close_inherited_except(keep: [RawFd; 2]) {
    let (a, b) = (keep[0].min(keep[1]), keep[0].max(keep[1]));
    let mut first: libc::c_uint = 3;
    for upto in [a as libc::c_uint, b as libc::c_uint, libc::c_uint::MAX] {
        if upto > first {
            // SAFETY: a plain syscall; the range holds no descriptor the child still uses.
            unsafe { libc::syscall(libc::SYS_close_range, first, upto - 1, 0) };
        }
        first = first.max(upto.saturating_add(1));
    }
}

/// A forked worker process with a pipe each way.
pub struct Forked {
    pub proc: Started,
    /// Lines from the child.
    pub from_child: File,
    /// Closing it (drop) tells the child to finish.
    pub to_child: Option<File>,
}

/// Fork a child that joins `cg` and runs `body(from_parent, to_parent)`, exiting 0 on Ok and 1
/// (after printing the error) on Err. The child is registered for clean-up.
///
/// The child of a multi-threaded parent: glibc keeps malloc usable after fork, and the child
/// touches no lock the parent's other threads use (it prints only with raw write(2)).
pub fn fork_in_memcg(
    cg: &Memcg,
    cleanup: &Cleanup,
    what: &str,
    body: impl FnOnce(File, File) -> Result<()>,
) -> Result<(Forked, Undo)> {
    fork_child(ChildSetup::Memcg(JoinMemcg::new(cg)?), cleanup, what, body)
}

/// What a forked child does first, before its body.
pub enum ChildSetup {
    /// Its own process group, inside the memcg (a workload's process).
    Memcg(JoinMemcg),
    /// A session of its own (setsid: its own process group and autogroup), outside the memcg
    /// (the scenario's foreign load).
    Session,
}

impl ChildSetup {
    /// Whether the child drops every descriptor it inherited but stdio and its pipes. The
    /// foreign load does: without exec, O_CLOEXEC does not apply, and a load process that
    /// kept bench's tracefs files open would keep a killed bench's trace instance busy (rmdir
    /// says EBUSY while an instance file is open) for as long as the load takes to die.
    /// Workload children keep theirs: some bodies use descriptors their closure captured.
    fn closes_inherited(&self) -> bool {
        matches!(self, ChildSetup::Session)
    }

    /// In the child after fork. Only async-signal-safe calls.
    fn in_child(&self) -> std::io::Result<()> {
        match self {
            ChildSetup::Memcg(j) => j.in_child(),
            ChildSetup::Session => {
                // SAFETY: plain syscalls; no allocation.
                unsafe {
                    if libc::setsid() < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    libc::signal(libc::SIGINT, libc::SIG_DFL);
                    libc::signal(libc::SIGTERM, libc::SIG_DFL);
                    libc::signal(libc::SIGHUP, libc::SIG_DFL);
                }
                Ok(())
            }
        }
    }
}

/// Fork a child that first does `setup`, then runs `body(from_parent, to_parent)`, exiting 0
/// on Ok and 1 (after printing the error) on Err. The child is registered for clean-up.
pub fn fork_child(
    setup: ChildSetup,
    cleanup: &Cleanup,
    what: &str,
    body: impl FnOnce(File, File) -> Result<()>,
) -> Result<(Forked, Undo)> {
    let (p_rd, c_wr): (OwnedFd, OwnedFd) = nix::unistd::pipe().context("pipe")?;
    let (c_rd, p_wr): (OwnedFd, OwnedFd) = nix::unistd::pipe().context("pipe")?;
    let parent_fds = [p_rd.as_raw_fd(), p_wr.as_raw_fd()];
    let (live, undo_action) = Started::pending();
    let l2 = live.clone();
    let (pid, undo) = cleanup.apply(
        format!("{what} (forked worker)"),
        move || {
            // SAFETY: the child only runs the code below and leaves with _exit.
            match unsafe { nix::unistd::fork() }.context("fork")? {
                nix::unistd::ForkResult::Child => {
                    let code = match setup.in_child() {
                        Err(e) => {
                            raw_eprint(&format!("reclaimlab worker: setting up the child: {e}\n"));
                            1
                        }
                        Ok(()) => {
                            for fd in parent_fds {
                                // SAFETY: the parent's ends, unused in the child.
                                unsafe { libc::close(fd) };
                            }
                            if setup.closes_inherited() {
                                close_inherited_except([c_rd.as_raw_fd(), c_wr.as_raw_fd()]);
                            }
                            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                body(File::from(c_rd), File::from(c_wr))
                            }));
                            match r {
                                Ok(Ok(())) => 0,
                                Ok(Err(e)) => {
                                    raw_eprint(&format!("reclaimlab worker: {e:#}\n"));
                                    1
                                }
                                Err(_) => 101,
                            }
                        }
                    };
                    // SAFETY: leave without the parent's atexit handlers or destructors.
                    unsafe { libc::_exit(code) }
                }
                nix::unistd::ForkResult::Parent { child } => {
                    l2.store(child.as_raw(), Ordering::SeqCst);
                    Ok(child.as_raw())
                }
            }
        },
        undo_action,
    )?;
    Ok((
        Forked {
            proc: Started { pid, live },
            from_child: File::from(p_rd),
            to_child: Some(File::from(p_wr)),
        },
        undo,
    ))
}

/// stderr without the std lock (for a forked child).
pub fn raw_eprint(m: &str) {
    // SAFETY: valid buffer.
    unsafe { libc::write(2, m.as_ptr().cast(), m.len()) };
}

/// Read one line from `f` (a pipe), waiting until `deadline`. Ok(None) on timeout, error on EOF.
pub fn read_line(f: &mut File, buf: &mut Vec<u8>, deadline: Instant) -> Result<Option<String>> {
    use std::io::Read;
    loop {
        if let Some(i) = buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buf.drain(..=i).collect();
            return Ok(Some(String::from_utf8_lossy(&line[..i]).into_owned()));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(None);
        }
        let mut pfd = libc::pollfd {
            fd: f.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = left.as_millis().min(200) as i32;
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut pfd, 1, ms) };
        if n <= 0 {
            continue;
        }
        let mut chunk = [0u8; 4096];
        let r = f.read(&mut chunk).context("reading from the worker")?;
        if r == 0 {
            bail!("the worker process ended before it reported");
        }
        buf.extend_from_slice(&chunk[..r]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    #[test]
    fn reaped_process_is_never_signalled_and_a_running_one_is_killed() {
        let c = Cleanup::new();
        let (p, undo) = spawn(
            &c,
            "true",
            std::process::Command::new("true").process_group(0),
        )
        .unwrap();
        let end = p
            .wait_until(Instant::now() + Duration::from_secs(10), &mut || {})
            .unwrap();
        assert_eq!(end, Some(Ended::Exited(0)));
        assert_eq!(
            p.live.load(Ordering::SeqCst),
            0,
            "a reaped PID is no longer ours"
        );
        undo.run().unwrap();

        let mut cmd = std::process::Command::new("sleep");
        cmd.arg("30").process_group(0);
        let (p, undo) = spawn(&c, "sleep", &mut cmd).unwrap();
        let end = p
            .wait_until(Instant::now() + Duration::from_millis(200), &mut || {})
            .unwrap();
        assert_eq!(end, None);
        undo.run().unwrap();
        assert!(!std::path::Path::new(&format!("/proc/{}", p.pid)).exists());
    }

    /// Whether each of `fds` is open in a forked child of the given set-up.
    fn open_in_child(setup: ChildSetup, fds: Vec<RawFd>) -> String {
        let c = Cleanup::new();
        let (mut f, undo) = fork_child(setup, &c, "fd probe", move |_, mut to| {
            use std::io::Write;
            let open: Vec<String> = fds
                .iter()
                // SAFETY: F_GETFD only asks; EBADF when the descriptor is closed.
                .map(|&fd| (unsafe { libc::fcntl(fd, libc::F_GETFD) } >= 0).to_string())
                .collect();
            writeln!(to, "{}", open.join(" "))?;
            Ok(())
        })
        .unwrap();
        let mut line = String::new();
        std::io::Read::read_to_string(&mut f.from_child, &mut line).unwrap();
        f.proc
            .wait_until(Instant::now() + Duration::from_secs(10), &mut || {})
            .unwrap();
        undo.run().unwrap();
        line.trim().to_string()
    }

    #[test]
    fn a_session_child_drops_the_descriptors_it_inherited_but_stdio() {
        // Opened with O_CLOEXEC, as std opens everything: a fork without exec keeps it anyway.
        let file = File::open("/proc/self/stat").unwrap();
        let fd = file.as_raw_fd();
        assert_eq!(
            open_in_child(ChildSetup::Session, vec![0, 2, fd]),
            "true true false"
        );
        drop(file);
    }
}
