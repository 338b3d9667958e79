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

    /// The sampling fields the request set, to go over the model's recommended chain.
    var changes: SamplingChanges {
        var changes = SamplingChanges()
        changes.temperature = temperature
        changes.topP = top_p
        changes.topK = top_k.map { $0 > 0 ? $0 : 0 }
        changes.minP = min_p
        changes.seed = seed.map { UInt64(bitPattern: $0) }
        changes.repetitionPenalty = repeat_penalty
        changes.penaltyWindow = penaltyWindow.flatMap { $0 > 0 ? $0 : nil }
        changes.frequencyPenalty = frequency_penalty
        changes.presencePenalty = presence_penalty
        return changes
    }

    /// Options whose sampling is the model's recommended chain (the balanced preset's, where
    /// it recommends none) with each field the request set; the length is each API's own field.
    func options() -> GenerationOptions {
        var options = GenerationOptions.balanced
        options.samplingChanges = changes
        options.stop = stop?.all ?? []
        return options
    }
}
