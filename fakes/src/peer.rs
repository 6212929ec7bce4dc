//! `conform peer-proxy`: puts a *real* runtime where a fake would be. It registers on the side
//! channel like a fake, spawns the real runtime as its child (same process group), relays
//! stdin and stdout line by line untouched, and reports every frame, EOF, the terminal frame,
//! forwarded signals and the exit — so a real peer's run is judged by the same checks and
//! settling proof as a scripted one, and its wire is recorded for the differential.
//!
//! The protocol's codec is used only to recognise frames (which request a response answers,
//! which frame ends the turn); nothing is validated or changed here.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use conform_protocol::lines::{LineSplitter, Piece, show_bytes};
use conform_protocol::side::{Direction, FakeEvent, Role};
use serde_json::Value;

use conform_protocol::script::RpcError;

use crate::codec::{Codec, Msg};
use crate::process;
use crate::side::Side;
use crate::wire::{MAX_FRAME_BYTES, parse_frame};

/// Exit status for a proxy that could not do its job. Otherwise the proxy exits with the real
/// runtime's own status, so this is not a fake's [`crate::error::FAULT_EXIT`] (2): a real
/// runtime exits 2 by itself.
const PROXY_FAULT_EXIT: i32 = 97;

/// Requests seen in either direction (id → method), to name what a response answers.
type Pending = Arc<Mutex<HashMap<String, String>>>;

/// `conform peer-proxy --side SOCK --run RUN --protocol NAME -- <argv…>`.
pub fn main_with_args(args: Vec<String>) -> std::process::ExitCode {
    /// Puts a real runtime where a fake would be, recording its wire on the side channel.
    #[derive(clap::Parser)]
    #[command(name = "peer-proxy", no_binary_name = true)]
    struct Args {
        #[arg(long)]
        side: String,
        #[arg(long)]
        run: String,
        /// The provider whose protocol the runtime speaks.
        #[arg(long)]
        protocol: conform_protocol::vocab::Provider,
        /// The real runtime's command line.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    }
    let args = match <Args as clap::Parser>::try_parse_from(args) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return std::process::ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    let (side_path, run, argv) = (args.side, args.run, &args.command[..]);
    let codec = crate::protocols::codec_for(args.protocol);
    // Termination signals are taken by one thread (and forwarded), never by default action:
    // the proxy must outlive the real runtime to report its exit. Blocked before any thread.
    let mut set = nix::sys::signal::SigSet::empty();
    for s in FORWARDED {
        set.add(s);
    }
    if let Err(e) = set.thread_block() {
        eprintln!("peer-proxy: cannot block signals: {e}");
        std::process::exit(PROXY_FAULT_EXIT);
    }
    let (side, control) = match Side::connect(&side_path, &run) {
        Ok(ok) => ok,
        Err(e) => {
            eprintln!("peer-proxy: {e}");
            std::process::exit(PROXY_FAULT_EXIT);
        }
    };
    let side = Arc::new(side);
    side.send(process::register_event(Role::Runtime, &[]));
    // The harness opens a pidfd before it acknowledges: only then may the real runtime start.
    let ack = tokio::runtime::Builder::new_current_thread()
        .build()
        .map(|rt| rt.block_on(crate::side::wait_for_ack(&side, Role::Runtime, control)));
    if ack.is_err() {
        std::process::exit(PROXY_FAULT_EXIT);
    }
    std::process::exit(relay(side, codec, argv, set));
}

const FORWARDED: [nix::sys::signal::Signal; 3] = [
    nix::sys::signal::Signal::SIGTERM,
    nix::sys::signal::Signal::SIGINT,
    nix::sys::signal::Signal::SIGHUP,
];

/// Runs the real runtime behind the proxy, start to finish: spawn it, forward signals, relay
/// both directions, then report its end. Returns the proxy's exit code.
fn relay(
    side: Arc<Side>,
    codec: Box<dyn Codec>,
    argv: &[String],
    signals: nix::sys::signal::SigSet,
) -> i32 {
    let mut child = match spawn_runtime(argv, signals) {
        Ok(c) => c,
        Err(e) => {
            let detail = format!("cannot start the real runtime `{}`: {e}", argv[0]);
            eprintln!("peer-proxy: {detail}");
            side.send(FakeEvent::Fault { detail });
            return PROXY_FAULT_EXIT;
        }
    };
    let pid = child.id() as i32;
    side.send(FakeEvent::Spawned { child: pid });
    forward_signals(side.clone(), signals, pid);
    let ledger = Ledger {
        side: side.clone(),
        codec: Arc::new(Mutex::new(codec)),
        pending: Pending::default(),
    };
    let child_in = child.stdin.take().expect("piped");
    let child_out = child.stdout.take().expect("piped");
    ledger.clone().relay_requests(child_in);
    let out = ledger.relay_replies(child_out);
    let status = child.wait();
    let _ = out.join();
    match status {
        Ok(status) => report_exit(&side, status),
        Err(e) => {
            side.send(FakeEvent::Fault {
                detail: format!("waiting for the real runtime failed: {e}"),
            });
            PROXY_FAULT_EXIT
        }
    }
}

/// Starts the real runtime on pipes, with the forwarded signals unblocked again in it (the
/// proxy blocked them for itself only).
fn spawn_runtime(argv: &[String], signals: nix::sys::signal::SigSet) -> std::io::Result<Child> {
    let mut command = Command::new(&argv[0]);
    command
        .args(&argv[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    // SAFETY: only async-signal-safe calls between fork and exec (unblocking the mask).
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut command, move || {
            signals
                .thread_unblock()
                .map_err(|e| std::io::Error::from_raw_os_error(e as i32))
        });
    }
    command.spawn()
}

/// Forwards every termination signal to the real runtime, on a thread of its own: it shares the
/// proxy's group, but a provider may signal only its direct child, the proxy.
fn forward_signals(side: Arc<Side>, signals: nix::sys::signal::SigSet, pid: i32) {
    std::thread::spawn(move || {
        while let Ok(sig) = signals.wait() {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig);
            side.send(FakeEvent::Signal {
                signal: sig.as_str().to_owned(),
                action: "forwarded".into(),
            });
        }
    });
}

/// What both directions of the relay share: the side channel, the codec that recognises frames,
/// and the requests not answered yet (id → method).
#[derive(Clone)]
struct Ledger {
    side: Arc<Side>,
    codec: Arc<Mutex<Box<dyn Codec>>>,
    pending: Pending,
}

impl Ledger {
    /// Relays the provider's stdin to the real runtime, on a thread of its own, reporting every
    /// frame; at EOF the real runtime's stdin is closed too (`pump` drops it), so it sees the
    /// same EOF.
    fn relay_requests(self, child_in: ChildStdin) {
        std::thread::spawn(move || {
            pump(std::io::stdin().lock(), child_in, |piece| {
                self.received(piece)
            });
            self.side.send(FakeEvent::Eof);
        });
    }

    /// Relays the real runtime's stdout to the provider, on a thread of its own, reporting every
    /// frame; the proxy's stdout closes when the runtime's does. Joined before the exit is
    /// reported, so every frame is on the ledger first.
    fn relay_replies(self, child_out: ChildStdout) -> JoinHandle<()> {
        std::thread::spawn(move || {
            let mut seen = HashSet::new();
            pump(child_out, std::io::stdout(), |piece| {
                self.sent(piece, &mut seen)
            });
            process::close_stdout();
        })
    }

    /// A line the provider wrote: a request is remembered (and shown to the codec) so its
    /// answer can be named. The codec stays locked until the frame is reported, so the other
    /// direction recognises nothing in between.
    fn received(&self, piece: Piece) {
        let Piece::Line(bytes) = piece else {
            self.side.send(FakeEvent::Violation {
                detail: format!("a frame over the limit of {MAX_FRAME_BYTES} bytes"),
            });
            return;
        };
        let frame = parse_frame(&bytes);
        let mut codec = self.codec.lock().unwrap();
        let request = match codec.classify(&frame) {
            Msg::Request { id, method, params } => {
                Some((id.to_string(), method.to_owned(), params.cloned()))
            }
            _ => None,
        };
        if let Some((id, method, params)) = request {
            codec.received(&method, params.as_ref());
            self.pending.lock().unwrap().insert(id, method);
        }
        self.side.send(FakeEvent::Frame {
            dir: Direction::Recv,
            frame,
            violation: None,
            answers: None,
        });
    }

    /// A line the real runtime wrote: reported with the request it answers, after the checkpoint
    /// it is and before the `Terminal` it makes. `seen`: the notification kinds met so far.
    fn sent(&self, piece: Piece, seen: &mut HashSet<String>) {
        let frame = match piece {
            Piece::Line(bytes) => parse_frame(&bytes),
            Piece::TooLong { head, size } => Value::String(format!(
                "(a frame of {size} bytes, relayed whole; its head:) {}",
                show_bytes(&head, 200)
            )),
        };
        let Recognised {
            answers,
            terminal,
            kind,
        } = self.recognise(&frame);
        // Each kind of notification, the first time it comes, is a checkpoint: a peer
        // scenario cancels or kills at one (`[cancel] at = "turn/start"`).
        if frame.get("id").is_none()
            && let Some(name) = kind
            && seen.insert(name.clone())
        {
            self.side.send(FakeEvent::Checkpoint { name });
        }
        self.side.send(FakeEvent::Frame {
            dir: Direction::Sent,
            frame,
            violation: None,
            answers,
        });
        if terminal {
            self.side.send(FakeEvent::Terminal);
        }
    }

    /// What the codec makes of a frame the real runtime wrote; an answer settles its request.
    fn recognise(&self, frame: &Value) -> Recognised {
        let mut codec = self.codec.lock().unwrap();
        let (answers, terminal) = match codec.classify(frame) {
            Msg::Response { id, outcome } => {
                let method = self.pending.lock().unwrap().remove(&id.to_string());
                // The codec learns from the real runtime's answers what it learns from its
                // own in a fake (Codex: the thread and turn ids its terminal frame names).
                if let Some(m) = &method {
                    let outcome = outcome.cloned().map_err(|e| RpcError {
                        code: e.get("code").and_then(Value::as_i64).unwrap_or(0),
                        message: String::new(),
                        data: None,
                    });
                    codec.answered(m, &outcome);
                }
                let terminal = method.as_deref().is_some_and(|m| codec.is_terminal(m));
                (method, terminal)
            }
            Msg::Notification { method, params } => {
                (None, codec.is_terminal_notification(method, params))
            }
            _ => (None, false),
        };
        let kind = codec.notification_kind(frame).map(str::to_owned);
        Recognised {
            answers,
            terminal,
            kind,
        }
    }
}

/// A frame of the real runtime, as the codec recognises it.
struct Recognised {
    /// The method of the request it answers.
    answers: Option<String>,
    /// Whether it ends the turn.
    terminal: bool,
    /// Its notification kind (a checkpoint's name).
    kind: Option<String>,
}

/// Reports how the real runtime ended and returns the proxy's exit code. A runtime killed by a
/// signal takes the proxy with it by the same signal, so the provider sees the real fate.
fn report_exit(side: &Side, status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    // The proxy's own peak says nothing of the real runtime.
    let exit = |code, signal| FakeEvent::Exit {
        code,
        signal,
        peak_rss_kib: None,
    };
    let Some(raw) = status.signal() else {
        let code = status.code().unwrap_or(PROXY_FAULT_EXIT);
        side.send(exit(Some(code), None));
        return code;
    };
    let sig = nix::sys::signal::Signal::try_from(raw).unwrap_or(nix::sys::signal::Signal::SIGKILL);
    side.send(exit(None, Some(sig.as_str().to_owned())));
    die_alike(sig)
}

/// Raises `sig` on the proxy with its default disposition; returns the shell's code for a
/// death by it, should the signal not end the process.
fn die_alike(sig: nix::sys::signal::Signal) -> i32 {
    // SAFETY: resetting a disposition and raising a signal on ourselves.
    unsafe {
        let _ = nix::sys::signal::signal(sig, nix::sys::signal::SigHandler::SigDfl);
    }
    let mut one = nix::sys::signal::SigSet::empty();
    one.add(sig);
    let _ = one.thread_unblock();
    let _ = nix::sys::signal::raise(sig);
    128 + sig as i32
}

/// Copies `from` to `to` untouched, chunk by chunk, and hands every complete line to
/// `each` — before the chunk that completes it is written, so a request is on the ledger before
/// its answer can be. A line over the limit is still relayed whole; only its report is cut.
/// Ends at EOF or when `to` is gone; drops `to` (closing it).
fn pump<R: std::io::Read, W: Write>(from: R, mut to: W, mut each: impl FnMut(Piece)) {
    let mut reader = BufReader::new(from);
    let mut lines = LineSplitter::new(MAX_FRAME_BYTES);
    loop {
        let chunk = match reader.fill_buf() {
            Ok(c) => c,
            Err(_) => &[],
        };
        if chunk.is_empty() {
            lines.finish();
            while let Some(p) = lines.pop() {
                each(p);
            }
            return;
        }
        lines.push(chunk);
        while let Some(p) = lines.pop() {
            each(p);
        }
        if to.write_all(chunk).and_then(|()| to.flush()).is_err() {
            return;
        }
        let n = chunk.len();
        reader.consume(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pump_relays_bytes_untouched_and_reports_lines() {
        // A frame over the report limit, a CRLF line and an unterminated tail.
        let mut input = vec![b'x'; MAX_FRAME_BYTES + 10];
        input.extend_from_slice(b"\n{\"a\":1}\r\ntail");
        let mut out = Vec::new();
        let mut pieces = Vec::new();
        pump(&input[..], &mut out, |p| pieces.push(p));
        assert_eq!(out, input, "relayed whole, byte for byte");
        assert!(matches!(&pieces[0], Piece::TooLong { size, .. } if *size == MAX_FRAME_BYTES + 10));
        assert_eq!(pieces[1], Piece::Line(b"{\"a\":1}".to_vec()));
        assert_eq!(pieces[2], Piece::Line(b"tail".to_vec()));
    }
}
