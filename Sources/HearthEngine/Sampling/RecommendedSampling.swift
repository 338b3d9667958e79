import Foundation
import HearthFormats

/// The sampling a model's authors recommend, which the `balanced` preset takes for that model:
/// the family's published defaults, overridden key by key by the file's own
/// `general.sampling.*` metadata (as llama.cpp reads it: `temp`, `top_k`, `top_p`, `min_p`,
/// `penalty_repeat`, `penalty_last_n`). Stages the file or family does not name keep the
/// balanced chain's values. Keys for stages Hearth does not have (`sequence`, `xtc_*`,
/// `mirostat*`) are not read.
public struct RecommendedSampling: Sendable, Equatable {
    /// The chain to use instead of `GenerationOptions.balancedSampling`.
    public let sampling: SamplingOptions
    /// Where it comes from, for people: "the file's general.sampling keys", "Qwen3's published
    /// defaults", or both.
    public let source: String

    /// A recommendation of `sampling`, from `source`.
    public init(sampling: SamplingOptions, source: String) {
        self.sampling = sampling
        self.source = source
    }

    /// Defaults from the model cards and `generation_config.json` of each family's instruct
    /// models, by `general.architecture`. Families whose files are too varied to share one
    /// (`llama` is SmolLM2, Llama 2 and 3 and Mistral alike) have none.
    static let familyDefaults: [String: (name: String, apply: @Sendable (inout SamplingOptions) -> Void)] = [
        // Qwen3 (thinking mode, the model card's recommendation; also Qwen3-MoE).
        "qwen3": ("Qwen3", { $0.temperature = 0.6; $0.topK = 20; $0.topP = 0.95; $0.minP = 0 }),
        "qwen3moe": ("Qwen3", { $0.temperature = 0.6; $0.topK = 20; $0.topP = 0.95; $0.minP = 0 }),
        // Qwen2.5 instruct's generation_config.json.
        "qwen2": ("Qwen2.5", { $0.temperature = 0.7; $0.topK = 20; $0.topP = 0.8; $0.minP = 0; $0.repetitionPenalty = 1.05 }),
        // Gemma 3's generation_config.json (top-k 64, top-p 0.95) at the temperature its
        // authors use, 1.0.
        "gemma3": ("Gemma 3", { $0.temperature = 1; $0.topK = 64; $0.topP = 0.95; $0.minP = 0 }),
    ]

    /// What `gguf` recommends, or nil when neither its family nor its metadata says anything.
    public static func read(_ gguf: GGUFFile) -> RecommendedSampling? {
        var sampling = GenerationOptions.balancedSampling
        var sources: [String] = []
        if let architecture = gguf.string("general.architecture"), let family = familyDefaults[architecture] {
            family.apply(&sampling)
            sources.append("\(family.name)'s published defaults")
        }
        let prefix = "general.sampling."
        var fromFile = false
        if let value = gguf.float(prefix + "temp"), value.isFinite, value >= 0 { sampling.temperature = value; fromFile = true }
        if let value = gguf.int(prefix + "top_k"), value >= 0 { sampling.topK = value; fromFile = true }
        if let value = gguf.float(prefix + "top_p"), value > 0, value <= 1 { sampling.topP = value; fromFile = true }
        if let value = gguf.float(prefix + "min_p"), value >= 0, value <= 1 { sampling.minP = value; fromFile = true }
        if let value = gguf.float(prefix + "penalty_repeat"), value.isFinite, value > 0 { sampling.repetitionPenalty = value; fromFile = true }
        if let value = gguf.int(prefix + "penalty_last_n"), value >= 0 { sampling.penaltyWindow = value; fromFile = true }
        if fromFile { sources.insert("the file's general.sampling keys", at: 0) }
        guard !sources.isEmpty, (try? sampling.validate()) != nil else { return nil }
        return RecommendedSampling(sampling: sampling, source: sources.joined(separator: " over "))
    }

    /// A line for people: the chain's values.
    public var summary: String {
        var parts = [String(format: "temperature %g", sampling.temperature)]
        if let k = sampling.topK { parts.append("top-k \(k)") }
        if let p = sampling.topP { parts.append(String(format: "top-p %g", p)) }
        if let p = sampling.minP { parts.append(String(format: "min-p %g", p)) }
        if let r = sampling.repetitionPenalty, r != 1 { parts.append(String(format: "repetition penalty %g", r)) }
        return parts.joined(separator: ", ")
    }
}

/// Sampling fields a caller names, each to be set over the chain the model's authors recommend
/// (or the balanced preset's, for a model that recommends none): what an API request that sets
/// some fields and leaves the others means, as llama-server takes a file's `general.sampling`
/// keys for the fields a request leaves out.
public struct SamplingChanges: Sendable, Equatable, Codable {
    /// One field of the chain and its value.
    public enum Change: Sendable, Equatable, Codable {
        case temperature(Float), topK(Int), topP(Float), minP(Float), repetitionPenalty(Float), frequencyPenalty(Float),
             presencePenalty(Float), penaltyWindow(Int), seed(UInt64)

        /// Sets the field in `chain`.
        func apply(to chain: inout SamplingOptions) {
            switch self {
            case .temperature(let value): chain.temperature = value
            case .topK(let value): chain.topK = value
            case .topP(let value): chain.topP = value
            case .minP(let value): chain.minP = value
            case .repetitionPenalty(let value): chain.repetitionPenalty = value
            case .frequencyPenalty(let value): chain.frequencyPenalty = value
            case .presencePenalty(let value): chain.presencePenalty = value
            case .penaltyWindow(let value): chain.penaltyWindow = value
            case .seed(let value): chain.seed = value
            }
        }
    }

    /// The fields named, in order (a later change of a field wins).
    public var changes: [Change]

    /// `changes`, none by default: the recommended chain as it is.
    public init(_ changes: [Change] = []) { self.changes = changes }

    /// `chain` with each named field set.
    public func applied(to chain: SamplingOptions) -> SamplingOptions {
        var chain = chain
        for change in changes { change.apply(to: &chain) }
        return chain
    }
}

extension GenerationOptions {
    /// Whether the sampling chain is the balanced preset's, untouched but for its seed: the
    /// options a model may replace with what its authors recommend.
    public var usesBalancedSampling: Bool {
        var chain = sampling
        chain.seed = GenerationOptions.balancedSampling.seed
        return chain == GenerationOptions.balancedSampling
    }

    /// The sampling a model with `recommended` runs these options with, decided here only:
    /// with `samplingChanges`, the recommended chain (or the balanced one) with those fields
    /// set; otherwise `recommended`'s chain in place of an untouched balanced one (the seed
    /// kept), and any other chain as the caller chose it.
    public func applying(_ recommended: RecommendedSampling?) -> GenerationOptions {
        var options = self
        if let changes = samplingChanges {
            options.sampling = changes.applied(to: recommended?.sampling ?? GenerationOptions.balancedSampling)
            options.samplingChanges = nil
        } else if let recommended, usesBalancedSampling {
            options.sampling = recommended.sampling
            options.sampling.seed = sampling.seed
        }
        return options
    }
}
