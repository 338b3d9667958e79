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
        let named: [SamplingChanges.Change?] = [
            temperature.map { .temperature($0) }, top_p.map { .topP($0) }, top_k.map { .topK(max($0, 0)) },
            min_p.map { .minP($0) }, seed.map { .seed(UInt64(bitPattern: $0)) }, repeat_penalty.map { .repetitionPenalty($0) },
            penaltyWindow.flatMap { $0 > 0 ? .penaltyWindow($0) : nil }, frequency_penalty.map { .frequencyPenalty($0) },
            presence_penalty.map { .presencePenalty($0) },
        ]
        return SamplingChanges(named.compactMap { $0 })
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
