import HearthFormats
import HearthTemplates

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

/// How a model wants a conversation written as prompt text: the model's own Jinja chat
/// template (`tokenizer.chat_template`), or, for a file that ships none, the known template of
/// its family. A file with neither is refused rather than guessed.
public struct ChatFormat: Sendable {
    /// The template in use.
    public let template: ChatTemplate
    /// Whether the template came from the model file (false: the family's known template).
    public let isModelTemplate: Bool
    private let bosText: String
    private let eosText: String
    private let tokenizerAddsBOS: Bool

    /// The chat format of the model in `gguf`.
    public init(gguf: GGUFFile) throws {
        if let source = gguf.string("tokenizer.chat_template") {
            template = try ChatTemplate(source: source)
            isModelTemplate = true
        } else {
            switch gguf.architecture {
            case "gemma3":
                template = try ChatTemplate(source: KnownTemplates.gemma3)
                isModelTemplate = false
            default:
                throw HearthError.unsupportedModel(
                    reason: "the model has no chat template and its family (\(gguf.architecture ?? "unknown")) has no known one; run it with --raw")
            }
        }
        let tokens = gguf.stringArray("tokenizer.ggml.tokens") ?? []
        func text(_ key: String) -> String {
            guard let id = gguf.int(key), tokens.indices.contains(id) else { return "" }
            return tokens[id]
        }
        bosText = text("tokenizer.ggml.bos_token_id")
        eosText = text("tokenizer.ggml.eos_token_id")
        tokenizerAddsBOS = gguf.bool("tokenizer.ggml.add_bos_token") ?? false
    }

    /// The prompt text for `messages`, ending where the assistant's answer starts. `system`
    /// (when given) goes before the messages. The template sees the variables llama.cpp's server
    /// gives it (see ``ChatTemplate/render(messages:addGenerationPrompt:bosToken:eosToken:tools:extra:options:)``),
    /// so the prompt is the one llama-server would write.
    ///
    /// When the tokenizer adds BOS itself, a BOS the template writes at the start is dropped,
    /// as llama.cpp does, so the prompt does not begin with two.
    public func render(_ messages: [ChatMessage], system: String? = nil) throws -> String {
        var all = messages
        if let system { all.insert(ChatMessage(role: .system, content: system), at: 0) }
        let values = all.map { message -> TemplateObject in ["role": .string(message.role.rawValue), "content": .string(message.content)] }
        var text = try template.render(messages: values, addGenerationPrompt: true, bosToken: bosText, eosToken: eosText)
        if tokenizerAddsBOS, !bosText.isEmpty, text.hasPrefix(bosText) {
            text.removeFirst(bosText.count)
        }
        return text
    }
}
