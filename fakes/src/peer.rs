//! `conform peer-proxy`: puts a *real* runtime where a fake would be. It registers on the side
//! channel like a fake, spawns the real runtime as its child (same process group), relays
//! stdin and stdout line by line untouched, and reports every frame, EOF, the terminal frame,
//! forwarded signals and the exit — so a real peer's run is judged by the same checks and
//! settling proof as a scripted one, and its wire is recorded for the differential.
//!
//! The protocol's codec is used only to recognise frames (which request a response answers,
//! which frame ends the turn); nothing is validated or changed here.

use std::collections::HashMap;
use std::io::{BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use conform_protocol::lines::{LineSplitter, Piece, next_piece};
use conform_protocol::side::{Direction, FakeEvent, Role, ToFake};
use serde_json::Value;

use crate::codec::{Codec, Msg};
use crate::process;
use crate::side::Side;
use crate::wire::MAX_FRAME_BYTES;

/// Exit status for a proxy that could not do its job (not the real runtime's own status).
const FAULT_EXIT: i32 = 97;

/// Requests seen in either direction (id → method), to name what a response answers.
type Pending = Arc<Mutex<HashMap<String, String>>>;

/// `conform peer-proxy --side SOCK --run RUN --protocol NAME -- <argv…>`.
pub fn main_with_args(args: Vec<String>) -> std::process::ExitCode {
    let Some(split) = args.iter().position(|a| a == "--") else {
        eprintln!("peer-proxy: usage: --side SOCK --run RUN --protocol NAME -- <command…>");
        return std::process::ExitCode::from(2);
    };
    let (flags, argv) = (&args[..split], &args[split + 1..]);
    let flag = |name: &str| {
        flags
            .iter()
            .position(|a| a == name)
            .and_then(|i| flags.get(i + 1))
            .cloned()
    };
    let (Some(side_path), Some(run), Some(protocol)) =
        (flag("--side"), flag("--run"), flag("--protocol"))
    else {
        eprintln!("peer-proxy: --side, --run and --protocol are required");
        return std::process::ExitCode::from(2);
    };
    let codec: Box<dyn Codec> = match protocol.as_str() {
        "acp" => Box::new(crate::acp::AcpCodec::new()),
        "dsh-sdk" => Box::new(crate::dsh_sdk::DshSdkCodec::new()),
        "codex" => Box::new(crate::codex::CodexCodec::new()),
        other => {
            eprintln!("peer-proxy: no codec for protocol {other}");
            return std::process::ExitCode::from(2);
        }
    };
    if argv.is_empty() {
        eprintln!("peer-proxy: no command after --");
        return std::process::ExitCode::from(2);
    }
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
    side.send(process::register_event(Role::Runtime));
    wait_for_ack(control);
    std::process::exit(relay(side, protocol, codec, argv, set));
}

const FORWARDED: [nix::sys::signal::Signal; 3] = [
    nix::sys::signal::Signal::SIGTERM,
    nix::sys::signal::Signal::SIGINT,
    nix::sys::signal::Signal::SIGHUP,
];

fn wait_for_ack(mut control: tokio::sync::mpsc::UnboundedReceiver<ToFake>) {
    loop {
        match control.blocking_recv() {
            Some(ToFake::Ack) => return,
            Some(_) => {}
            None => {
                eprintln!("peer-proxy: side channel closed before the registration ack");
                std::process::exit(FAULT_EXIT);
            }
        }
    }
}

fn relay(
    side: Arc<Side>,
    protocol: String,
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
    let mut child_in = child.stdin.take().expect("piped");
    let child_out = child.stdout.take().expect("piped");
    {
        let (side, codec, pending) = (side.clone(), codec.clone(), pending.clone());
        std::thread::spawn(move || {
            let mut stdin = std::io::stdin().lock();
            let mut lines = LineSplitter::new(MAX_FRAME_BYTES);
            while let Ok(Some(piece)) = next_piece(&mut stdin, &mut lines) {
                let Piece::Line(bytes) = piece else {
                    side.send(FakeEvent::Violation {
                        detail: format!("a frame over the limit of {MAX_FRAME_BYTES} bytes"),
                    });
                    continue;
                };
                let frame = parse(&bytes);
                {
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
                }
                side.send(FakeEvent::Frame {
                    dir: Direction::Recv,
                    frame: frame.clone(),
                    violation: None,
                    answers: None,
                });
                if child_in
                    .write_all(&bytes)
                    .and_then(|()| child_in.write_all(b"\n"))
                    .and_then(|()| child_in.flush())
                    .is_err()
                {
                    break;
                }
            }
            side.send(FakeEvent::Eof);
            // Dropping `child_in` closes the real runtime's stdin: the same EOF.
        });
    }
    let out_side = side.clone();
    let out = std::thread::spawn(move || {
        let mut reader = BufReader::new(child_out);
        let mut lines = LineSplitter::new(MAX_FRAME_BYTES);
        let mut stdout = std::io::stdout();
        let mut seen = std::collections::HashSet::new();
        let mut turn_ended = false;
        while let Ok(Some(piece)) = next_piece(&mut reader, &mut lines) {
            let bytes = match piece {
                Piece::Line(b) => b,
                Piece::TooLong { head, .. } => head,
            };
            let frame = parse(&bytes);
            let codec = codec.lock().unwrap();
            let (answers, terminal) = match codec.classify(&frame) {
                Msg::Response { id, .. } => {
                    let method = pending.lock().unwrap().remove(&id.to_string());
                    let terminal = method.as_deref().is_some_and(|m| codec.is_terminal(m));
                    (method, terminal)
                }
                Msg::Notification { method, params } => {
                    // The codec names the terminal frame of turns it answered itself; a real
                    // Codex server's ids are its own, so its first `turn/completed` ends the turn.
                    let first_codex_end =
                        protocol == "codex" && method == "turn/completed" && !turn_ended;
                    (
                        None,
                        codec.is_terminal_notification(method, params) || first_codex_end,
                    )
                }
                _ => (None, false),
            };
            drop(codec);
            // Each kind of notification, the first time it comes, is a checkpoint: a peer
            // scenario cancels or kills at one (`[cancel] at = "turn/start"`).
            if let Some(name) = notification_kind(&frame)
                && seen.insert(name.clone())
            {
                out_side.send(FakeEvent::Checkpoint { name });
            }
            out_side.send(FakeEvent::Frame {
                dir: Direction::Sent,
                frame,
                violation: None,
                answers,
            });
            if terminal && !turn_ended {
                turn_ended = true;
                out_side.send(FakeEvent::Terminal);
            }
            if stdout
                .write_all(&bytes)
                .and_then(|()| stdout.write_all(b"\n"))
                .and_then(|()| stdout.flush())
                .is_err()
            {
                break;
            }
        }
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

/// A line as JSON, or as a JSON string holding the raw line when it is not JSON.
fn parse(bytes: &[u8]) -> Value {
    let text = String::from_utf8_lossy(bytes);
    serde_json::from_str(&text).unwrap_or_else(|_| Value::String(text.into_owned()))
}

/// The kind of a notification: a DSH SDK `session.event`'s event type, an ACP
/// `session/update`'s update kind (`tool_call`), else its method.
fn notification_kind(frame: &Value) -> Option<String> {
    if frame.get("id").is_some() {
        return None;
    }
    let method = frame.get("method")?.as_str()?;
    let sub = match method {
        "session.event" => frame.pointer("/params/event/type"),
        "session/update" => frame.pointer("/params/update/sessionUpdate"),
        _ => None,
    };
    match sub {
        Some(sub) => sub.as_str().map(str::to_owned),
        None => Some(method.to_owned()),
    }
}
