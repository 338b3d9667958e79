/// A chat answer's chunks as every reader gets them (the SDK, the command line, each API): a
/// reasoning model's thoughts kept apart from its answer, and tool calls kept out of the text
/// and given, parsed, on the last chunk. Plain-text completions pass through unchanged.
public struct ChatOutput: Sendable {
    private var thoughts: ThoughtSeparation?
    private var toolCalls: ToolCallSeparation?

    /// Output that splits thoughts with `splitter` (nil: the model does not reason here) and
    /// separates calls as `toolCalls` does (nil: no tools).
    public init(splitter: ReasoningSplitter?, toolCalls: ToolCallSeparation?) {
        thoughts = splitter.map { ThoughtSeparation(splitter: $0) }
        self.toolCalls = toolCalls
    }

    /// Whether any chunk is changed at all.
    public var isEmpty: Bool { thoughts == nil && toolCalls == nil }

    /// `chunk` as readers get it: thoughts first taken out of its text, then calls out of what
    /// is left.
    public mutating func process(_ chunk: GenerationChunk) -> GenerationChunk {
        var chunk = thoughts?.separate(chunk) ?? chunk
        chunk = toolCalls?.separate(chunk) ?? chunk
        return chunk
    }
}

/// One generation's thoughts kept apart from its answer, chunk by chunk, with the tokens spent
/// on them counted.
struct ThoughtSeparation: Sendable {
    var splitter: ReasoningSplitter
    var tokens = 0

    /// `chunk` with its text divided between `reasoning` and `text`; the last chunk also
    /// gives out what the splitter held back, and its statistics count the reasoning tokens.
    mutating func separate(_ chunk: GenerationChunk) -> GenerationChunk {
        var chunk = chunk
        let wasInThoughts = splitter.isInThoughts
        var part = splitter.append(chunk.text)
        if chunk.token != nil, wasInThoughts || splitter.isInThoughts { tokens += 1 }
        if chunk.finishReason != nil {
            let rest = splitter.finish()
            part.reasoning += rest.reasoning
            part.answer += rest.answer
            chunk.statistics?.reasoningTokens = tokens
        }
        chunk.text = part.answer
        chunk.reasoning += part.reasoning
        return chunk
    }
}

extension ChatFormat {
    /// How to read a reasoning model's answer to `prompt`: inside the thoughts from the start
    /// when the prompt opened them, else watching for a `<think>` at the start, unless thinking
    /// was turned off. Nil for other models, whose output stays as it is, and for JSON answers,
    /// which are held to one object from their first token.
    /// A harmony model (gpt-oss) writes its analysis channel whatever it is asked, so its output
    /// is always split.
    public func reasoningSplitter(prompt: String, options: GenerationOptions) -> ReasoningSplitter? {
        guard let markers = reasoningMarkers, options.format != .json else { return nil }
        // gpt-oss writes its analysis channel whatever it is asked; Gemma 4 may open its thought
        // channel, empty, even when thinking is off.
        if markers == .harmony || markers == .gemma4 { return ReasoningSplitter(startsInThoughts: false, markers: markers) }
        if Self.opensThoughts(prompt) { return ReasoningSplitter(startsInThoughts: true) }
        return options.thinking == false ? nil : ReasoningSplitter(startsInThoughts: false)
    }
}

extension FinishReason {
    /// Whether an answer that ended this way, having made `calls`, ended by calling tools: it
    /// stopped on its own with calls to make (OpenAI's `tool_calls` finish).
    public func endsInToolCalls(_ calls: [ToolCall]?) -> Bool {
        self == .stop && calls?.isEmpty == false
    }
}
