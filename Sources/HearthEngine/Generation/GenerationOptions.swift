import HearthConstraints
import HearthCore

/// The shape an answer must take.
public enum OutputFormat: String, Sendable, Equatable, Codable {
    /// Any text.
    case text
    /// One JSON object: only tokens that keep the answer a valid beginning of a JSON object
    /// are sampled, and the answer ends when the object closes.
    case json
}

/// What to generate and how: the sampling chain, a token budget, stop sequences and whether to
/// report log-probabilities. The presets are starting points; change any field of a copy.
///
/// ```swift
/// var options = GenerationOptions.precise
/// options.maxTokens = 64
/// options.stop = ["\n\n"]
/// ```
public struct GenerationOptions: Sendable, Equatable, Codable {
    /// The sampling chain (temperature 0 is greedy).
    public var sampling: SamplingOptions
    /// Most tokens to generate; nil generates until the model stops or the context is full.
    public var maxTokens: Int?
    /// Texts that end the answer when generated; the stop text itself is never emitted. They
    /// match across token boundaries.
    public var stop: [String]
    /// Report each token's log-probability (of the raw logits, as OpenAI does).
    public var logprobs: Bool
    /// How many of the most likely alternatives to report beside each token (with `logprobs`).
    public var topLogprobs: Int
    /// The shape the answer must take. With `.json` the answer is one JSON object unless
    /// `maxTokens`, the context, a stop sequence or cancellation cuts it short first (the finish
    /// reason is then `length`, `stop` or `cancelled`; a complete object always ends with `stop`).
    /// Ask for JSON in the prompt as well: held to JSON without being asked for it, a small model
    /// may answer `{}` or keep adding to the object until `maxTokens`.
    public var format: OutputFormat = .text
    /// A grammar the answer must match (GBNF, or compiled from a JSON schema): only tokens that
    /// keep the answer a beginning of a match are sampled, an end-of-generation token only once
    /// it matches, and the answer ends when nothing more can follow. Ask for the shape in the
    /// prompt as well. A grammar takes the place of `format`.
    public var grammar: Grammar?
    /// A JSON Schema the answer must be valid under: compiled to a grammar for a local model,
    /// sent as `response_format` `json_schema` to a remote one. A `grammar` takes its place.
    public var jsonSchema: JSONValue?
    /// With `grammar`: the answer is free until it contains one of these texts, and the
    /// grammar holds from the first of them on (it must match the trigger too). Empty: from
    /// the start.
    public var grammarTriggers: [String] = []
    /// Tools the model may call in a chat (see `ToolCallFormat`): the prompt offers them and the
    /// calls are generated under their schemas; the last chunk carries the calls.
    public var tools: [ToolDefinition] = []
    /// Whether and which tool the model must call.
    public var toolChoice: ToolChoice = .auto
    /// Whether the model may make several calls in one answer.
    public var parallelToolCalls: Bool = true
    /// Whether a reasoning model thinks before answering, in a chat: the chat template's
    /// `enable_thinking`. nil leaves it to the template (thinking, for the templates that ask);
    /// false asks for an answer without thoughts. A model whose prompt opens the thoughts
    /// regardless still has them separated from the answer.
    public var thinking: Bool?
    /// Fields to set over the model's recommended sampling chain, in place of `sampling` (see
    /// `applying(_:)`); nil: `sampling` as it is.
    public var samplingChanges: SamplingChanges?

    /// Options with the given parts; by default the `.balanced` sampling chain.
    public init(sampling: SamplingOptions = GenerationOptions.balancedSampling, maxTokens: Int? = nil,
                stop: [String] = [], logprobs: Bool = false, topLogprobs: Int = 0, format: OutputFormat = .text,
                thinking: Bool? = nil) {
        self.sampling = sampling
        self.maxTokens = maxTokens
        self.stop = stop
        self.logprobs = logprobs
        self.topLogprobs = topLogprobs
        self.format = format
        self.thinking = thinking
    }

    private enum CodingKeys: String, CodingKey {
        case sampling, maxTokens, stop, logprobs, topLogprobs, format, thinking, grammar, grammarTriggers, tools, toolChoice,
             parallelToolCalls, jsonSchema, samplingChanges
    }

    /// Decodes options; a missing `format` is `.text` and a missing `thinking` nil, as options
    /// stored before they existed mean.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(sampling: try c.decode(SamplingOptions.self, forKey: .sampling),
                  maxTokens: try c.decodeIfPresent(Int.self, forKey: .maxTokens),
                  stop: try c.decode([String].self, forKey: .stop),
                  logprobs: try c.decode(Bool.self, forKey: .logprobs),
                  topLogprobs: try c.decode(Int.self, forKey: .topLogprobs),
                  format: try c.decodeIfPresent(OutputFormat.self, forKey: .format) ?? .text,
                  thinking: try c.decodeIfPresent(Bool.self, forKey: .thinking))
        grammar = try c.decodeIfPresent(Grammar.self, forKey: .grammar)
        jsonSchema = try c.decodeIfPresent(JSONValue.self, forKey: .jsonSchema)
        grammarTriggers = try c.decodeIfPresent([String].self, forKey: .grammarTriggers) ?? []
        tools = try c.decodeIfPresent([ToolDefinition].self, forKey: .tools) ?? []
        toolChoice = try c.decodeIfPresent(ToolChoice.self, forKey: .toolChoice) ?? .auto
        parallelToolCalls = try c.decodeIfPresent(Bool.self, forKey: .parallelToolCalls) ?? true
        samplingChanges = try c.decodeIfPresent(SamplingChanges.self, forKey: .samplingChanges)
    }

    /// The sampling temperature (0: always the most likely token).
    public var temperature: Float {
        get { sampling.temperature }
        set { sampling.temperature = newValue }
    }

    /// The seed of the draw; the same seed and options give the same tokens from the same cache
    /// state. A prompt partly reused from a context's cache evaluates its new tokens in other
    /// batches than a fresh one, which can move the logits in their last bits and so, at a
    /// temperature above 0, the draw.
    public var seed: UInt64? {
        get { sampling.seed }
        set { sampling.seed = newValue }
    }

    /// llama.cpp's default chain: temperature 0.8, top-k 40, top-p 0.95, min-p 0.05.
    public static let balancedSampling = SamplingOptions(temperature: 0.8, topK: 40, topP: 0.95, minP: 0.05)

    /// Varied, loose answers: temperature 0.9, top-p 0.95, min-p 0.05, a light presence penalty.
    public static let creative = GenerationOptions(
        sampling: SamplingOptions(temperature: 0.9, topK: 100, topP: 0.95, minP: 0.05, presencePenalty: 0.3))
    /// The general-purpose default (see `balancedSampling`). A local model whose authors
    /// recommend other sampling (`RecommendedSampling`) uses theirs when given these options
    /// with the chain untouched (a seed may be set).
    public static let balanced = GenerationOptions()
    /// Focused, factual answers: temperature 0.25, top-k 40, top-p 0.9, min-p 0.1.
    public static let precise = GenerationOptions(
        sampling: SamplingOptions(temperature: 0.25, topK: 40, topP: 0.9, minP: 0.1))
    /// Source code: temperature 0.2, top-k 40, top-p 0.95, min-p 0.05, no repetition penalty
    /// (code repeats itself on purpose).
    public static let code = GenerationOptions(
        sampling: SamplingOptions(temperature: 0.2, topK: 40, topP: 0.95, minP: 0.05))
    /// Always the most likely token: repeatable output, the one the reference tests compare.
    public static let greedy = GenerationOptions(sampling: .greedy)

    /// The presets by name, for command lines and settings screens.
    public static let presets: [(name: String, options: GenerationOptions)] = [
        ("creative", .creative), ("balanced", .balanced), ("precise", .precise), ("code", .code), ("greedy", .greedy),
    ]

    /// The preset called `name` (case-insensitive), or nil.
    public static func preset(named name: String) -> GenerationOptions? {
        presets.first { $0.name == name.lowercased() }?.options
    }

    /// Throws `HearthError.invalidArgument` naming the first value out of range.
    public func validate(vocabularySize: Int? = nil) throws {
        try sampling.validate(vocabularySize: vocabularySize)
        if let maxTokens, maxTokens < 0 {
            throw HearthError.invalidArgument("maxTokens must be ≥ 0, not \(maxTokens).")
        }
        guard (0...20).contains(topLogprobs) else {
            throw HearthError.invalidArgument("topLogprobs must be between 0 and 20, not \(topLogprobs).")
        }
        if stop.count > 16 { throw HearthError.invalidArgument("At most 16 stop sequences, not \(stop.count).") }
        if stop.contains(where: \.isEmpty) { throw HearthError.invalidArgument("A stop sequence must not be empty.") }
        if !grammarTriggers.isEmpty && grammar == nil {
            throw HearthError.invalidArgument("Grammar triggers need a grammar.")
        }
        if grammarTriggers.contains(where: \.isEmpty) { throw HearthError.invalidArgument("A grammar trigger must not be empty.") }
        var names = Set<String>()
        for tool in tools {
            guard !tool.name.isEmpty, tool.name.count <= 64,
                  tool.name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" || $0 == "." }) else {
                throw HearthError.invalidArgument("Tool name \"\(tool.name)\" must be 1 to 64 letters, digits, _, - or .")
            }
            guard names.insert(tool.name).inserted else { throw HearthError.invalidArgument("Two tools are named \(tool.name).") }
        }
        if case .tool(let name) = toolChoice, !names.contains(name) {
            throw HearthError.invalidArgument("tool_choice names \(name), which is not among the tools.")
        }
        if toolChoice == .required && tools.isEmpty {
            throw HearthError.invalidArgument("tool_choice is required, but there are no tools.")
        }
    }
}
