import Hearth

/// The sampling fields a request may set, as OpenAI's and Ollama's APIs both name them: the
/// one mapping from a request to `GenerationOptions`.
struct RequestSampling: Decodable, Sendable {
    var temperature: Float?
    var top_p: Float?
    var top_k: Int?
    var min_p: Float?
    var seed: Int64?
    var stop: OneOrMany<String>?
    var frequency_penalty: Float?
    var presence_penalty: Float?
    var repeat_penalty: Float?
    /// Ollama's `repeat_last_n`, which its options carry and OpenAI's requests do not.
    var penaltyWindow: Int?

    private enum CodingKeys: String, CodingKey {
        case temperature, top_p, top_k, min_p, seed, stop, frequency_penalty, presence_penalty, repeat_penalty
    }

    /// Each sampling field the request set, over `chain` (the model's recommended chain, or the
    /// balanced preset's).
    func apply(to chain: inout SamplingOptions) {
        if let temperature { chain.temperature = temperature }
        if let top_p { chain.topP = top_p }
        if let top_k { chain.topK = top_k > 0 ? top_k : nil }
        if let min_p { chain.minP = min_p }
        if let seed { chain.seed = UInt64(bitPattern: seed) }
        if let repeat_penalty { chain.repetitionPenalty = repeat_penalty }
        if let penaltyWindow, penaltyWindow > 0 { chain.penaltyWindow = penaltyWindow }
        if let frequency_penalty { chain.frequencyPenalty = frequency_penalty }
        if let presence_penalty { chain.presencePenalty = presence_penalty }
    }

    /// Options from the balanced preset with each field the request set; the length is each
    /// API's own field.
    func options() -> GenerationOptions {
        var options = GenerationOptions.balanced
        apply(to: &options.sampling)
        options.stop = stop?.all ?? []
        return options
    }
}
