//! Headless Chromium driven over the DevTools protocol, for what `--dump-dom` cannot do: press
//! keys, resize the window, follow a page as its address changes. The browser reads
//! NUL-terminated JSON commands on its fd 3 and writes its answers and events, NUL-terminated,
//! on its fd 4 (`--remote-debugging-pipe`): two pipes, no websocket. Every wait reads the
//! browser's next message, bounded by [`PATIENCE`]; the browser is closed, what is left of its
//! process group killed, and the browser reaped when the [`Page`] is dropped.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use serde_json::{Value, json};

/// How long one answer or event may take before the test fails instead of hanging.
const PATIENCE: Duration = Duration::from_secs(90);

/// A key as `Input.dispatchKeyEvent` presses it.
#[derive(Clone, Copy)]
pub enum Key {
    Tab,
    Enter,
}

impl Key {
    /// The key's fields; a key that types a character is sent as `keyDown` with its text (so
    /// Enter activates a button), one that does not as `rawKeyDown`.
    fn fields(self) -> (Value, &'static str) {
        match self {
            Key::Tab => (
                json!({"key": "Tab", "code": "Tab", "windowsVirtualKeyCode": 9}),
                "rawKeyDown",
            ),
            Key::Enter => (
                json!({"key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13, "text": "\r"}),
                "keyDown",
            ),
        }
    }
}

/// One tab of a browser of its own (its own profile, killed at drop).
pub struct Page {
    child: Child,
    commands: std::io::PipeWriter,
    messages: Receiver<Value>,
    /// Events read while waiting for something else, in the order they came.
    pending: VecDeque<Value>,
    next_id: u64,
    session: String,
    _profile: tempfile::TempDir,
}

impl Page {
    /// Starts `browser` headless and attaches to a new blank tab.
    pub fn launch(browser: &Path) -> Page {
        let profile = tempfile::tempdir().unwrap();
        let (browser_reads, commands) = std::io::pipe().unwrap();
        let (answers, browser_writes) = std::io::pipe().unwrap();
        let mut cmd = Command::new(browser);
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--remote-debugging-pipe",
            // A test does in a second what a person does in minutes (opening hundreds of
            // failures, each of which writes the address): no throttling of address changes.
            "--disable-ipc-flooding-protection",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("about:blank")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Its own group: the renderers and helpers it starts die with it.
        .process_group(0);
        let (from, to) = (browser_reads.as_raw_fd(), browser_writes.as_raw_fd());
        // SAFETY: between fork and exec, only async-signal-safe calls (fcntl, dup2).
        unsafe {
            cmd.pre_exec(move || on_fds_3_and_4(from, to));
        }
        let child = cmd.spawn().expect("Chromium starts");
        // The browser's ends are its own now: its exit closes the answers.
        drop((browser_reads, browser_writes));
        let (tx, messages) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(answers);
            let mut buf = Vec::new();
            while reader.read_until(0, &mut buf).is_ok_and(|n| n > 0) {
                buf.pop_if(|b| *b == 0);
                if let Ok(v) = serde_json::from_slice(&buf)
                    && tx.send(v).is_err()
                {
                    break;
                }
                buf.clear();
            }
        });
        let mut page = Page {
            child,
            commands,
            messages,
            pending: VecDeque::new(),
            next_id: 0,
            session: String::new(),
            _profile: profile,
        };
        let target = page.browser_call("Target.createTarget", json!({"url": "about:blank"}));
        let attached = page.browser_call(
            "Target.attachToTarget",
            json!({"targetId": target["targetId"], "flatten": true}),
        );
        page.session = attached["sessionId"].as_str().unwrap().to_owned();
        page.call("Page.enable", json!({}));
        page.call("Page.setLifecycleEventsEnabled", json!({"enabled": true}));
        page.call("Runtime.enable", json!({}));
        page.call("Log.enable", json!({}));
        // Keys reach the page as they would a focused window.
        page.call(
            "Emulation.setFocusEmulationEnabled",
            json!({"enabled": true}),
        );
        page
    }

    /// Loads `url` afresh (from a blank page, so an address differing only in its hash loads
    /// too) and waits for its `load`.
    pub fn open(&mut self, url: &str) {
        self.navigate("about:blank");
        self.navigate(url);
    }

    fn navigate(&mut self, url: &str) {
        let nav = self.call("Page.navigate", json!({"url": url}));
        assert!(nav.get("errorText").is_none(), "{url}: {nav}");
        let loader = nav["loaderId"].clone();
        self.wait_for(|m| {
            m["method"] == "Page.lifecycleEvent"
                && m["params"]["name"] == "load"
                && m["params"]["loaderId"] == loader
        });
    }

    /// The value of a JavaScript expression in the page (a promise awaited).
    pub fn eval(&mut self, expression: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
        );
        assert!(
            r.get("exceptionDetails").is_none(),
            "{expression}: {}",
            r["exceptionDetails"]
        );
        r["result"]["value"].clone()
    }

    /// Sets the address's hash as a link or a hand edit would, and returns once the page's
    /// `hashchange` listeners have run.
    pub fn change_hash(&mut self, hash: &str) {
        let hash = serde_json::to_string(hash).unwrap();
        self.eval(&format!(
            "new Promise((done) => {{ addEventListener('hashchange', () => done(), {{ once: true }}); location.hash = {hash}; }})"
        ));
    }

    /// Presses and releases `key` in the focused element.
    pub fn press(&mut self, key: Key) {
        let (fields, down) = key.fields();
        let mut event = fields.clone();
        event["type"] = down.into();
        self.call("Input.dispatchKeyEvent", event);
        let mut up = fields;
        up["type"] = "keyUp".into();
        up.as_object_mut().unwrap().remove("text");
        self.call("Input.dispatchKeyEvent", up);
    }

    /// The window's size as a device of `width` × `height` CSS pixels.
    pub fn resize(&mut self, width: u32, height: u32) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}),
        );
    }

    /// A PNG of what the window shows, written to `png`.
    pub fn screenshot(&mut self, png: &Path) {
        use base64::Engine as _;
        let shot = self.call("Page.captureScreenshot", json!({"format": "png"}));
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap())
            .unwrap();
        std::fs::write(png, bytes).unwrap();
    }

    /// The accessible name the browser gives the element an expression yields (what a screen
    /// reader says of it).
    pub fn accessible_name(&mut self, element: &str) -> String {
        let r = self.call("Runtime.evaluate", json!({"expression": element}));
        let object = r["result"]["objectId"]
            .as_str()
            .unwrap_or_else(|| panic!("{element} is no element: {r}"))
            .to_owned();
        let tree = self.call(
            "Accessibility.getPartialAXTree",
            json!({"objectId": object, "fetchRelatives": false}),
        );
        tree["nodes"][0]["name"]["value"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// What the page logged as an error, or threw, or was refused (a Content-Security-Policy
    /// violation), among the events read so far.
    pub fn errors(&mut self) -> Vec<String> {
        self.drain();
        self.pending
            .iter()
            .filter_map(|m| match m["method"].as_str()? {
                "Runtime.exceptionThrown" => Some(m["params"]["exceptionDetails"].to_string()),
                "Runtime.consoleAPICalled" if m["params"]["type"] == "error" => {
                    Some(m["params"]["args"].to_string())
                }
                "Log.entryAdded" if m["params"]["entry"]["level"] == "error" => {
                    Some(m["params"]["entry"]["text"].to_string())
                }
                _ => None,
            })
            .collect()
    }

    /// Every message already arrived, kept as pending events.
    fn drain(&mut self) {
        while let Ok(m) = self.messages.try_recv() {
            self.pending.push_back(m);
        }
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        let session = self.session.clone();
        self.send(method, params, Some(&session))
    }

    fn browser_call(&mut self, method: &str, params: Value) -> Value {
        self.send(method, params, None)
    }

    fn send(&mut self, method: &str, params: Value, session: Option<&str>) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut command = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            command["sessionId"] = s.into();
        }
        let mut bytes = serde_json::to_vec(&command).unwrap();
        bytes.push(0);
        self.commands
            .write_all(&bytes)
            .unwrap_or_else(|e| panic!("Chromium stopped reading ({method}): {e}"));
        let answer = self.next_message(|m| m["id"] == id, method);
        if let Some(error) = answer.get("error") {
            panic!("{method}: {error}");
        }
        answer["result"].clone()
    }

    /// Waits for an event of this page's session for which `wanted` holds.
    fn wait_for(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        let session = self.session.clone();
        if let Some(at) = self
            .pending
            .iter()
            .position(|m| m["sessionId"] == session.as_str() && wanted(m))
        {
            return self.pending.remove(at).unwrap();
        }
        self.next_message(
            |m| m["sessionId"] == session.as_str() && wanted(m),
            "an event",
        )
    }

    /// Reads messages until one for which `wanted` holds; the others are kept as pending.
    fn next_message(&mut self, wanted: impl Fn(&Value) -> bool, what: &str) -> Value {
        loop {
            match self.messages.recv_timeout(PATIENCE) {
                Ok(m) if wanted(&m) => return m,
                Ok(m) => self.pending.push_back(m),
                Err(RecvTimeoutError::Timeout) => {
                    panic!("Chromium said nothing of {what} in {PATIENCE:?}")
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!(
                        "Chromium exited while waiting for {what}: {:?}",
                        self.child.try_wait()
                    )
                }
            }
        }
    }
}

/// In the child: the pipe ends `from` and `to` as fds 3 and 4. Each is first copied above 9, as
/// either may already sit at 3 or 4; `dup2` then leaves the copies open across exec.
fn on_fds_3_and_4(from: i32, to: i32) -> std::io::Result<()> {
    // SAFETY: plain descriptor calls on descriptors this process holds.
    unsafe {
        let (high_from, high_to) = (
            libc::fcntl(from, libc::F_DUPFD_CLOEXEC, 10),
            libc::fcntl(to, libc::F_DUPFD_CLOEXEC, 10),
        );
        if high_from < 0
            || high_to < 0
            || libc::dup2(high_from, 3) < 0
            || libc::dup2(high_to, 4) < 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

impl Drop for Page {
    fn drop(&mut self) {
        // Asked to close, the browser ends its renderers and reaps them; its answers' pipe
        // closing says it is gone (bounded, as every wait here).
        let mut close = serde_json::to_vec(&json!({"id": 0, "method": "Browser.close"})).unwrap();
        close.push(0);
        if self.commands.write_all(&close).is_ok() {
            while self.messages.recv_timeout(PATIENCE).is_ok() {}
        }
        // Then whatever of its group is left (a browser that would not close), and the browser
        // reaped.
        let group = self.child.id() as i32;
        // SAFETY: a signal to the process group this page started.
        unsafe {
            libc::kill(-group, libc::SIGKILL);
        }
        let _ = self.child.wait();
    }
}
