import Foundation
import Hearth

/// One line of a `--prompts` file: a prompt as plain text, or a JSON object with the prompt and
/// options of its own.
///
///     Why is the sky blue?
///     {"prompt": "Name three rivers.", "max_tokens": 32, "temperature": 0}
///     {"messages": [{"role": "user", "content": "Hi"}], "system": "Be brief.", "id": "greeting"}
///     {"prompt": "Once upon a time", "raw": true, "stop": ["\n"], "seed": 7}
struct PromptLine: Sendable {
    /// 1-based line number in the file.
    var line: Int
    /// What to answer.
    var prompt: Prompt
    /// The text echoed in the output: the prompt, or the last user message.
    var text: String
    /// The caller's own identifier, echoed back.
    var id: JSONValue?
    var options: GenerationOptions

    /// Keys a JSON line may have.
    static let keys: Set<String> = [
        "id", "prompt", "messages", "system", "raw", "max_tokens", "temperature", "seed", "top_k", "top_p", "min_p",
        "repeat_penalty", "frequency_penalty", "presence_penalty", "stop", "preset",
    ]

    /// Parses `text`, line `line` of the file, over `defaults`; nil for a blank line. `raw` and
    /// `system` are the command line's, which a JSON line may override.
    static func parse(_ text: String, line: Int, defaults: GenerationOptions, raw: Bool, system: String?) throws -> PromptLine? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { return nil }
        guard trimmed.hasPrefix("{") else {
            let prompt: Prompt = raw ? .text(text) : .chat(messages(system: system, user: text))
            return PromptLine(line: line, prompt: prompt, text: text, id: nil, options: defaults)
        }
        func fail(_ message: String) -> HearthError { HearthError.invalidArgument("line \(line): \(message)") }
        guard let object = try? JSONDecoder().decode([String: JSONValue].self, from: Data(trimmed.utf8)) else {
            throw fail("not a valid JSON object; write a prompt as plain text or as a JSON object such as {\"prompt\": \"…\"}.")
        }
        if let unknown = object.keys.sorted().first(where: { !keys.contains($0) }) {
            throw fail("unknown key \"\(unknown)\"; the keys are \(keys.sorted().joined(separator: ", ")).")
        }
        func string(_ key: String) throws -> String? {
            switch object[key] {
            case nil: return nil
            case .string(let text)?: return text
            default: throw fail("\"\(key)\" must be a string.")
            }
        }
        func number(_ key: String) throws -> Double? {
            switch object[key] {
            case nil: return nil
            case .number(let value)?: return value
            default: throw fail("\"\(key)\" must be a number.")
            }
        }
        func integer(_ key: String) throws -> Int? {
            guard let value = try number(key) else { return nil }
            guard let exact = Int(exactly: value) else { throw fail("\"\(key)\" must be a whole number.") }
            return exact
        }
        var options = defaults
        if let preset = try string("preset") {
            guard let named = GenerationOptions.preset(named: preset) else {
                throw fail("unknown preset \"\(preset)\"; use one of \(GenerationOptions.presets.map(\.name).joined(separator: ", ")).")
            }
            options = named
            options.stop = defaults.stop
            options.maxTokens = defaults.maxTokens
        }
        if let value = try integer("max_tokens") { options.maxTokens = value }
        if let value = try number("temperature") { options.sampling.temperature = Float(value) }
        if let value = try integer("seed") {
            guard let seed = UInt64(exactly: value) else { throw fail("\"seed\" must not be negative.") }
            options.sampling.seed = seed
        }
        if let value = try integer("top_k") { options.sampling.topK = value }
        if let value = try number("top_p") { options.sampling.topP = Float(value) }
        if let value = try number("min_p") { options.sampling.minP = Float(value) }
        if let value = try number("repeat_penalty") { options.sampling.repetitionPenalty = Float(value) }
        if let value = try number("frequency_penalty") { options.sampling.frequencyPenalty = Float(value) }
        if let value = try number("presence_penalty") { options.sampling.presencePenalty = Float(value) }
        switch object["stop"] {
        case nil: break
        case .string(let one)?: options.stop = [one]
        case .array(let many)? where many.allSatisfy({ if case .string = $0 { true } else { false } }):
            options.stop = many.compactMap { if case .string(let text) = $0 { text } else { nil } }
        default: throw fail("\"stop\" must be a string or an array of strings.")
        }
        do {
            try options.validate()
        } catch let error as HearthError {
            throw fail(error.message)
        }
        let isRaw: Bool
        switch object["raw"] {
        case nil: isRaw = raw
        case .bool(let flag)?: isRaw = flag
        default: throw fail("\"raw\" must be true or false.")
        }
        let system = try string("system") ?? system
        let id = object["id"]
        switch (try string("prompt"), object["messages"]) {
        case (let prompt?, nil):
            return PromptLine(line: line, prompt: isRaw ? .text(prompt) : .chat(messages(system: system, user: prompt)),
                              text: prompt, id: id, options: options)
        case (nil, let value?):
            guard !isRaw else { throw fail("\"messages\" need the chat format; drop \"raw\".") }
            guard case .array(let list) = value, !list.isEmpty else {
                throw fail("\"messages\" must be a non-empty array of {\"role\": …, \"content\": …} objects.")
            }
            var conversation = try list.map { message -> ChatMessage in
                guard case .string(let name)? = message["role"],
                      let role = ChatMessage.Role(rawValue: name), case .string(let content)? = message["content"] else {
                    throw fail("each message needs a \"role\" (system, user or assistant) and a string \"content\".")
                }
                return ChatMessage(role: role, content: content)
            }
            if let system, conversation.first?.role != .system {
                conversation.insert(ChatMessage(role: .system, content: system), at: 0)
            }
            guard conversation.last?.role == .user else { throw fail("the last message must be the user's.") }
            return PromptLine(line: line, prompt: .chat(conversation), text: conversation.last!.content, id: id, options: options)
        case (nil, nil):
            throw fail("a JSON line needs \"prompt\" (a string) or \"messages\".")
        case (_?, _?):
            throw fail("give \"prompt\" or \"messages\", not both.")
        }
    }

    private static func messages(system: String?, user: String) -> [ChatMessage] {
        (system.map { [ChatMessage(role: .system, content: $0)] } ?? []) + [ChatMessage(role: .user, content: user)]
    }
}
