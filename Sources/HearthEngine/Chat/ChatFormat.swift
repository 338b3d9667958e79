import HearthCore
import HearthFormats
import HearthTemplates

/// One message of a conversation.
public struct ChatMessage: Sendable, Equatable, Codable {
    /// Who wrote a message.
    public enum Role: String, Sendable, Codable {
        case system, user, assistant
        /// A tool's result, answering one of the assistant's calls.
        case tool
    }

    /// Who wrote it.
    public var role: Role
    /// What it says: for an answer of a reasoning model, the answer without its thoughts.
    public var content: String
    /// The thoughts before an assistant's answer, if it had any. A template that asks for them
    /// (`reasoning_content`) gets them; to others they are not shown.
    public var reasoning: String?
    /// The calls an assistant's message made.
    public var toolCalls: [ToolCall]?
    /// For a tool's result: the call it answers.
    public var toolCallID: String?
    /// For a tool's result: the tool's name.
    public var name: String?

    /// A message from `role`.
    public init(role: Role, content: String, reasoning: String? = nil, toolCalls: [ToolCall]? = nil, toolCallID: String? = nil,
                name: String? = nil) {
        self.role = role
        self.content = content
        self.reasoning = reasoning
        self.toolCalls = toolCalls
        self.toolCallID = toolCallID
        self.name = name
    }

    /// A tool's result for `call`.
    public static func toolResult(_ content: String, for call: ToolCall) -> ChatMessage {
        ChatMessage(role: .tool, content: content, toolCallID: call.id, name: call.name)
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
    /// How the model's thoughts are marked, or nil when it does not reason before answering:
    /// harmony's analysis channel when its template writes one (gpt-oss), else `<think>…</think>`
    /// when its template mentions `<think>` or `enable_thinking` or its vocabulary has `<think>`
    /// and `</think>` tokens.
    public let reasoningMarkers: ReasoningSplitter.Markers?
    /// Whether the model reasons before answering.
    public var thinks: Bool { reasoningMarkers != nil }
    /// Whether the template shows an earlier answer's thoughts (`reasoning_content`).
    public let showsReasoning: Bool

    /// Whether the template writes the tools a model may call (it reads `tools`).
    public var takesTools: Bool { template.source.contains("tools") }

    /// How this model writes tool calls.
    public var toolCallFormat: ToolCallFormat { ToolCallFormat.detect(template: template.source) }

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
        let source = template.source
        if source.contains("<|channel|>analysis<|message|>") {
            reasoningMarkers = .harmony
        } else if source.contains("<|channel>thought") {
            reasoningMarkers = .gemma4
        } else if source.contains(ReasoningSplitter.openingTag) || source.contains("enable_thinking")
                    || (tokens.contains(ReasoningSplitter.openingTag) && tokens.contains(ReasoningSplitter.closingTag)) {
            reasoningMarkers = .think
        } else {
            reasoningMarkers = nil
        }
        showsReasoning = source.contains("reasoning_content")
    }

    /// The prompt text for `messages`, ending where the assistant's answer starts. `system`
    /// (when given) goes before the messages. The template sees the variables llama.cpp's server
    /// gives it (see ``ChatTemplate/render(messages:addGenerationPrompt:bosToken:eosToken:tools:extra:options:)``),
    /// so the prompt is the one llama-server would write.
    ///
    /// When the tokenizer adds BOS itself, a BOS the template writes at the start is dropped,
    /// as llama.cpp does, so the prompt does not begin with two.
    ///
    /// `enableThinking` (when given) is the template's `enable_thinking`: false asks a
    /// reasoning model to answer without thoughts. An assistant message's `reasoning` is
    /// passed as `reasoning_content` only to a template that reads it.
    public func render(_ messages: [ChatMessage], system: String? = nil, enableThinking: Bool? = nil,
                       tools: [ToolDefinition] = [], toolChoice: ToolChoice = .auto) throws -> String {
        var all = messages
        if let system { all.insert(ChatMessage(role: .system, content: system), at: 0) }
        let format = toolCallFormat
        let offered = toolChoice == .none ? [] : tools
        // A family without tool calls of its own learns the tools and the answer's shape from
        // the system prompt, and sees earlier calls in that shape.
        if format == .generic {
            if let instructions = format.instructions(tools: offered, choice: toolChoice), !offered.isEmpty {
                if all.first?.role == .system {
                    all[0].content += "\n\n" + instructions
                } else {
                    all.insert(ChatMessage(role: .system, content: instructions), at: 0)
                }
            }
            all = all.map { message in
                guard let calls = message.toolCalls, !calls.isEmpty else { return message }
                var written = message
                let list = calls.map { JSONValue.object([("name", .string($0.name)), ("arguments", $0.arguments)]) }
                written.content = JSONValue.object([("tool_calls", .array(list))]).jsonText
                written.toolCalls = nil
                return written
            }
        }
        let values = all.map { message -> TemplateObject in
            var object: TemplateObject = ["role": .string(message.role.rawValue), "content": .string(message.content)]
            if showsReasoning, message.role == .assistant, let reasoning = message.reasoning, !reasoning.isEmpty {
                object["reasoning_content"] = .string(reasoning)
            }
            // gpt-oss's template reads an answer's analysis as `thinking`, as llama.cpp gives it,
            // and refuses a call's message that has both (llama.cpp keeps the thinking).
            if reasoningMarkers == .harmony, message.role == .assistant, let reasoning = message.reasoning, !reasoning.isEmpty {
                object["thinking"] = .string(reasoning)
                if message.toolCalls?.isEmpty == false { object["content"] = .string("") }
            }
            if let calls = message.toolCalls, !calls.isEmpty {
                object["tool_calls"] = .array(calls.map { call in
                    .object(["id": .string(call.id), "type": "function",
                             "function": .object(["name": .string(call.name), "arguments": TemplateValue(json: call.arguments)])])
                })
            }
            if let id = message.toolCallID { object["tool_call_id"] = .string(id) }
            if let name = message.name { object["name"] = .string(name) }
            return object
        }
        let extra: [String: TemplateValue] = enableThinking.map { ["enable_thinking": .bool($0)] } ?? [:]
        let templateTools = format == .generic ? nil : offered.map { TemplateValue(json: $0.openAIShape) }
        var text = try template.render(messages: values, addGenerationPrompt: true, bosToken: bosText, eosToken: eosText,
                                       tools: templateTools, extra: extra)
        if tokenizerAddsBOS, !bosText.isEmpty, text.hasPrefix(bosText) {
            text.removeFirst(bosText.count)
        }
        return text
    }

    /// Whether `prompt` leaves the answer inside the thoughts: its generation prompt opened
    /// `<think>` (QwQ, DeepSeek R1), so the output starts with thoughts and no tag.
    public static func opensThoughts(_ prompt: String) -> Bool {
        var scalars = prompt.unicodeScalars
        while let last = scalars.last, [" ", "\n", "\r", "\t"].contains(last) { scalars.removeLast() }
        return String(scalars).hasSuffix(ReasoningSplitter.openingTag)
    }
}

extension TemplateValue {
    /// A JSON value as a template sees it: whole numbers as integers, objects in their order.
    public init(json: JSONValue) {
        switch json {
        case .null: self = .none
        case .bool(let b): self = .bool(b)
        case .number(let n): self = n == n.rounded() && abs(n) < 1e15 ? .int(Int(n)) : .double(n)
        case .string(let s): self = .string(s)
        case .array(let items): self = .array(items.map(TemplateValue.init(json:)))
        case .object(let members): self = .object(TemplateObject(members.map { ($0.key, TemplateValue(json: $0.value)) }))
        }
    }
}
