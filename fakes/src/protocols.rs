//! Which codec speaks each provider's protocol: the one place that knows every protocol, above
//! them all, so the seam they are written against ([`crate::codec`]) knows none of them.

use conform_protocol::vocab::Provider;

use crate::codec::Codec;

/// The codec of a provider's protocol.
pub fn codec_for(provider: Provider) -> Box<dyn Codec> {
    match provider {
        Provider::Acp => Box::new(crate::acp::AcpCodec::new()),
        Provider::DshSdk => Box::new(crate::dsh_sdk::DshSdkCodec::new()),
        Provider::Codex => Box::new(crate::codex::CodexCodec::new()),
        Provider::ClaudeCode => Box::new(crate::claude_code::ClaudeCodeCodec::new()),
    }
}
