//! `conform peer-proxy`: puts a *real* runtime where a fake would be. It registers on the side
//! channel like a fake, spawns the real runtime as its child (same process group), relays
//! stdin and stdout line by line untouched, and reports every frame, EOF, the terminal frame,
//! forwarded signals and the exit — so a real peer's run is judged by the same checks and
//! settling proof as a scripted one, and its wire is recorded for the differential.
//!
//! The protocol's codec is used only to recognise frames (which request a response answers,
//! which frame ends the turn); nothing is validated or changed here.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use conform_protocol::lines::{LineSplitter, Piece, show_bytes};
use conform_protocol::side::{Direction, FakeEvent, Role};
use serde_json::Value;

use conform_protocol::script::RpcError;

use crate::codec::{Codec, Msg};
use crate::process;
use crate::side::Side;
use crate::wire::{MAX_FRAME_BYTES, parse_frame};

/// Exit status for a proxy that could not do its job (not the real runtime's own status).
const FAULT_EXIT: i32 = 97;

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
    let codec = crate::codec::for_provider(args.protocol);
    // Termination signals are taken by one thread (and forwarded), never by default action:
    // the proxy must outlive the real runtime to report its exit. Blocked before any thread.
    let mut set = nix::sys::signal::SigSet::empty();
    for s in FORWARDED {
        set.add(s);
    }
    if let Err(e) = set.thread_block() {
        eprintln!("peer-proxy: cannot block signals: {e}");
        std::process::exit(FAULT_EXIT);
    }
    let (side, control) = match Side::connect(&side_path, &run) {
        Ok(ok) => ok,
        Err(e) => {
            eprintln!("peer-proxy: {e}");
            std::process::exit(FAULT_EXIT);
        }
    };
    let side = Arc::new(side);
    side.send(process::register_event(Role::Runtime, &[]));
    // The harness opens a pidfd before it acknowledges: only then may the real runtime start.
    let ack = tokio::runtime::Builder::new_current_thread()
        .build()
        .map(|rt| rt.block_on(crate::side::wait_for_ack(control)));
    if ack.is_err() {
        std::process::exit(FAULT_EXIT);
    }
    std::process::exit(relay(side, codec, argv, set));
}

const FORWARDED: [nix::sys::signal::Signal; 3] = [
    nix::sys::signal::Signal::SIGTERM,
    nix::sys::signal::Signal::SIGINT,
    nix::sys::signal::Signal::SIGHUP,
];

fn relay(
    side: Arc<Side>,
    codec: Box<dyn Codec>,
    argv: &[String],
    signals: nix::sys::signal::SigSet,
) -> i32 {
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
    let mut child = match command.spawn() {
        Ok(c) => c,
        Err(e) => {
            let detail = format!("cannot start the real runtime `{}`: {e}", argv[0]);
            eprintln!("peer-proxy: {detail}");
            side.send(FakeEvent::Fault { detail });
            return FAULT_EXIT;
        }
    };
    let pid = child.id() as i32;
    side.send(FakeEvent::Spawned { child: pid });
    let codec = Arc::new(Mutex::new(codec));
    let pending: Pending = Arc::default();

    // Signals: forwarded to the real runtime (which shares the group, but a provider may signal
    // only its direct child, the proxy).
    {
        let side = side.clone();
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
    let child_in = child.stdin.take().expect("piped");
    let child_out = child.stdout.take().expect("piped");
    {
        let (side, codec, pending) = (side.clone(), codec.clone(), pending.clone());
        std::thread::spawn(move || {
            pump(std::io::stdin().lock(), child_in, |piece| {
                let Piece::Line(bytes) = piece else {
                    side.send(FakeEvent::Violation {
                        detail: format!("a frame over the limit of {MAX_FRAME_BYTES} bytes"),
                    });
                    return;
                };
                let frame = parse_frame(&bytes);
                let mut codec = codec.lock().unwrap();
                let request = match codec.classify(&frame) {
                    Msg::Request { id, method, params } => {
                        Some((id.to_string(), method.to_owned(), params.cloned()))
                    }
                    _ => None,
                };
                if let Some((id, method, params)) = request {
                    codec.received(&method, params.as_ref());
                    pending.lock().unwrap().insert(id, method);
                }
                side.send(FakeEvent::Frame {
                    dir: Direction::Recv,
                    frame,
                    violation: None,
                    answers: None,
                });
            });
            side.send(FakeEvent::Eof);
            // `pump` dropped the real runtime's stdin: it sees the same EOF.
        });
    }
    let out_side = side.clone();
    let out = std::thread::spawn(move || {
        let mut seen = std::collections::HashSet::new();
        pump(child_out, std::io::stdout(), |piece| {
            let frame = match piece {
                Piece::Line(bytes) => parse_frame(&bytes),
                Piece::TooLong { head, size } => Value::String(format!(
                    "(a frame of {size} bytes, relayed whole; its head:) {}",
                    show_bytes(&head, 200)
                )),
            };
            let mut codec = codec.lock().unwrap();
            let (answers, terminal) = match codec.classify(&frame) {
                Msg::Response { id, outcome } => {
                    let method = pending.lock().unwrap().remove(&id.to_string());
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
            let kind = codec.notification_kind(&frame).map(str::to_owned);
            drop(codec);
            // Each kind of notification, the first time it comes, is a checkpoint: a peer
            // scenario cancels or kills at one (`[cancel] at = "turn/start"`).
            if frame.get("id").is_none()
                && let Some(name) = kind
                && seen.insert(name.clone())
            {
                out_side.send(FakeEvent::Checkpoint {
                    name: name.to_owned(),
                });
            }
            out_side.send(FakeEvent::Frame {
                dir: Direction::Sent,
                frame,
                violation: None,
                answers,
            });
            if terminal {
                out_side.send(FakeEvent::Terminal);
            }
        });
        // The real runtime closed its stdout: so does the proxy.
        process::close_stdout();
    });
    let status = child.wait();
    let _ = out.join();
    use std::os::unix::process::ExitStatusExt;
    match status {
        Ok(s) if s.signal().is_some() => {
            let sig = nix::sys::signal::Signal::try_from(s.signal().unwrap_or(9))
                .unwrap_or(nix::sys::signal::Signal::SIGKILL);
            side.send(FakeEvent::Exit {
                code: None,
                signal: Some(sig.as_str().to_owned()),
                // The proxy's own peak says nothing of the real runtime.
                peak_rss_kib: None,
            });
            // Die the same way, so the provider sees the real runtime's fate.
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
        Ok(s) => {
            let code = s.code().unwrap_or(FAULT_EXIT);
            side.send(FakeEvent::Exit {
                code: Some(code),
                signal: None,
                // The proxy's own peak says nothing of the real runtime.
                peak_rss_kib: None,
            });
            code
        }
        Err(e) => {
            side.send(FakeEvent::Fault {
                detail: format!("waiting for the real runtime failed: {e}"),
            });
            FAULT_EXIT
        }
    }
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
