import HearthFormats

/// One message of a conversation.
public struct ChatMessage: Sendable, Equatable, Codable {
    /// Who wrote a message.
    public enum Role: String, Sendable, Codable {
        case system, user, assistant
    }

    /// Who wrote it.
    public var role: Role
    /// What it says.
    public var content: String

    /// A message from `role`.
    public init(role: Role, content: String) {
        self.role = role
        self.content = content
    }
}

/// The well-known chat formats, recognised from a model's template or its architecture.
///
/// A model's own Jinja template is the authority; these are the fixed layouts that the
/// templates of the supported families produce for plain conversations.
public enum ChatFormat: Sendable, Equatable {
    /// `<|im_start|>role\n…<|im_end|>\n` (SmolLM, Qwen, many others), with the system message the
    /// template adds when the conversation has none.
    case chatML(defaultSystem: String?)
    /// Llama 3: `<|start_header_id|>role<|end_header_id|>\n\n…<|eot_id|>`.
    case llama3
    /// Gemma: `<start_of_turn>user\n…<end_of_turn>\n`, the system message folded into the first user turn.
    case gemma

    /// The format of the model in `gguf`, from its `tokenizer.chat_template` or, when it has none,
    /// its architecture.
    public init(gguf: GGUFFile) throws {
        if let template = gguf.string("tokenizer.chat_template") {
            if template.contains("<|im_start|>") {
                self = .chatML(defaultSystem: Self.literalSystemMessage(in: template))
            } else if template.contains("<|start_header_id|>") {
                self = .llama3
            } else if template.contains("<start_of_turn>") {
                self = .gemma
            } else {
                throw HearthError.unsupportedModel(reason: "its chat template is not one of the known formats (ChatML, Llama 3, Gemma); run it with --raw")
            }
            return
        }
        switch gguf.architecture {
        case "gemma", "gemma2", "gemma3": self = .gemma
        default:
            throw HearthError.unsupportedModel(reason: "the model has no chat template; run it with --raw")
        }
    }

    /// The prompt text for `messages`, ending where the assistant's answer starts. `system`
    /// (when given) goes before the messages.
    public func render(_ messages: [ChatMessage], system: String? = nil) -> String {
        var all = messages
        if let system { all.insert(ChatMessage(role: .system, content: system), at: 0) }
        var out = ""
        switch self {
        case .chatML(let defaultSystem):
            if all.first?.role != .system, let defaultSystem {
                out += "<|im_start|>system\n\(defaultSystem)<|im_end|>\n"
            }
            for m in all { out += "<|im_start|>\(m.role.rawValue)\n\(m.content)<|im_end|>\n" }
            out += "<|im_start|>assistant\n"
        case .llama3:
            // BOS comes from the tokenizer (add_bos_token), not the text.
            for m in all {
                out += "<|start_header_id|>\(m.role.rawValue)<|end_header_id|>\n\n\(m.content)<|eot_id|>"
            }
            out += "<|start_header_id|>assistant<|end_header_id|>\n\n"
        case .gemma:
            var pendingSystem: String?
            for m in all {
                switch m.role {
                case .system:
                    pendingSystem = m.content
                case .user:
                    let prefix = pendingSystem.map { $0 + "\n\n" } ?? ""
                    pendingSystem = nil
                    out += "<start_of_turn>user\n\(prefix)\(m.content)<end_of_turn>\n"
                case .assistant:
                    out += "<start_of_turn>model\n\(m.content)<end_of_turn>\n"
                }
            }
            out += "<start_of_turn>model\n"
        }
        return out
    }

    /// The system message a ChatML template writes out literally when a conversation has none
    /// (SmolLM2's "You are a helpful AI assistant named SmolLM…").
    static func literalSystemMessage(in template: String) -> String? {
        let marker = "<|im_start|>system\\n"
        for marker in [marker, "<|im_start|>system\n"] {
            guard let start = template.range(of: marker),
                  let end = template.range(of: "<|im_end|>", range: start.upperBound..<template.endIndex) else { continue }
            let text = String(template[start.upperBound..<end.lowerBound])
            // A literal message, not an expression such as `' + message['content'] + '`.
            guard !text.contains("{{"), !text.contains("'"), !text.contains("\""), !text.contains("+") else { continue }
            return text.replacingOccurrences(of: "\\n", with: "\n")
        }
        return nil
    }
}
