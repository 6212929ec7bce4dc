//! The single stdout writer: every subject message goes through one task, one line each, so
//! lines never interleave. Also hosts the `crash-after-dispatch` defect.

use conform_protocol::subject::FromSubject;
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, oneshot};

enum WriterMsg {
    Line(FromSubject),
    Flush(oneshot::Sender<()>),
}

/// Handle to the stdout writer. Cheap to clone.
#[derive(Clone)]
pub struct Out {
    tx: mpsc::UnboundedSender<WriterMsg>,
}

impl Out {
    pub fn send(&self, msg: FromSubject) {
        let _ = self.tx.send(WriterMsg::Line(msg));
    }

    /// Resolves once everything sent before has been written and flushed.
    pub async fn flush(&self) {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(WriterMsg::Flush(tx)).is_ok() {
            let _ = rx.await;
        }
    }
}

/// Start the writer task. With `crash_after_dispatch`, the process exits with code 70 right
/// after the first `dispatched` line is flushed, abandoning every child.
pub fn start(crash_after_dispatch: bool) -> Out {
    let (tx, mut rx) = mpsc::unbounded_channel::<WriterMsg>();
    tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        let mut broken = false;
        while let Some(msg) = rx.recv().await {
            match msg {
                WriterMsg::Line(msg) => {
                    let mut line = serde_json::to_vec(&msg).expect("subject message serializes");
                    line.push(b'\n');
                    if broken {
                        continue;
                    }
                    if stdout.write_all(&line).await.is_err() || stdout.flush().await.is_err() {
                        // The harness is gone; stdin EOF will follow and tear everything down.
                        eprintln!("conform-reference: stdout closed");
                        broken = true;
                        continue;
                    }
                    if crash_after_dispatch && matches!(msg, FromSubject::Dispatched { .. }) {
                        eprintln!("conform-reference: crash-after-dispatch defect: exiting 70");
                        std::process::exit(70);
                    }
                }
                WriterMsg::Flush(done) => {
                    let _ = stdout.flush().await;
                    let _ = done.send(());
                }
            }
        }
    });
    Out { tx }
}
