use super::*;

struct Recorder(Mutex<Vec<String>>);
impl Handler for Recorder {
    fn on_request(&self, _id: &Value, method: &str, _params: Value) -> Reply {
        self.0.lock().unwrap().push(format!("req {method}"));
        Reply::Error(ErrorObject::method_not_found(method))
    }
    fn on_notification(&self, method: &str, _params: Value) {
        self.0.lock().unwrap().push(format!("note {method}"));
    }
}

#[tokio::test]
async fn request_response_and_ordering() {
    let (client_side, peer_side) = tokio::io::duplex(4096);
    let (peer_read, mut peer_write) = tokio::io::split(peer_side);
    let (client_read, client_write) = tokio::io::split(client_side);
    let rec = Arc::new(Recorder(Mutex::new(Vec::new())));
    let rpc = JsonRpc::new(client_read, client_write, rec.clone());
    let peer = tokio::spawn(async move {
        let mut lines = BufReader::new(peer_read).lines();
        let first = lines.next_line().await.unwrap().unwrap();
        let v: Value = serde_json::from_str(&first).unwrap();
        assert_eq!(v["method"], "ping");
        assert_eq!(v["jsonrpc"], "2.0");
        peer_write
            .write_all(b"garbage\n{\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"x\"}\n")
            .await
            .unwrap();
        let frame = json!({"jsonrpc":"2.0","id":v["id"],"result":{"ok":true}});
        peer_write
            .write_all(format!("{frame}\n").as_bytes())
            .await
            .unwrap();
        let answer = lines.next_line().await.unwrap().unwrap();
        let a: Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(a["id"], 5);
        assert_eq!(a["error"]["code"], -32601);
        drop(peer_write);
    });
    let res = rpc.request("ping", json!({})).await.unwrap();
    assert_eq!(res, json!({"ok": true}));
    assert_eq!(*rec.0.lock().unwrap(), vec!["note n", "req x"]);
    peer.await.unwrap();
    let mut eof = rpc.eof_watch();
    eof.wait_for(|e| *e).await.unwrap();
    assert!(matches!(
        rpc.request("late", json!({})).await,
        Err(RpcError::WireLost(_))
    ));
}

#[tokio::test]
async fn prefixed_string_ids() {
    let (client_side, peer_side) = tokio::io::duplex(4096);
    let (peer_read, mut peer_write) = tokio::io::split(peer_side);
    let (client_read, client_write) = tokio::io::split(client_side);
    let rec = Arc::new(Recorder(Mutex::new(Vec::new())));
    let rpc = JsonRpc::with_ids(
        client_read,
        client_write,
        rec,
        IdStyle::Prefixed("req_"),
        Reading::Lines,
    );
    let peer = tokio::spawn(async move {
        let mut lines = BufReader::new(peer_read).lines();
        let v: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        let id = v["id"].as_str().unwrap().to_owned();
        assert!(id.starts_with("req_") && id.len() == 36, "{id}");
        // A numeric id, or the id's text as a number, is not this request.
        for frame in [
            json!({"jsonrpc": "2.0", "id": 0, "result": "wrong"}),
            json!({"jsonrpc": "2.0", "id": id, "result": "right"}),
        ] {
            peer_write
                .write_all(format!("{frame}\n").as_bytes())
                .await
                .unwrap();
        }
    });
    assert_eq!(rpc.request("x", json!({})).await.unwrap(), json!("right"));
    peer.await.unwrap();
}
