import Foundation
import HearthCore

/// Options of the sampling chain (all optional stages off by default). The stages run in this
/// order: penalties → logit bias → top-k → top-p → min-p → temperature → seeded draw; `Sampler`
/// documents each.
public struct SamplingOptions: Sendable, Equatable {
    /// Divides the logits before the draw; 0 means greedy (the most likely token, no draw).
    public var temperature: Float
    /// Keeps the `topK` most likely tokens; nil or 0 = off.
    public var topK: Int?
    /// Keeps the most likely tokens until their probabilities add up to `topP`, including the
    /// token that crosses it; nil or 1 = off.
    public var topP: Float?
    /// Keeps tokens at least `minP` times as likely as the most likely one; nil or 0 = off.
    public var minP: Float?
    /// llama.cpp's repetition penalty: a seen token's logit becomes `logit / r` when positive and
    /// `logit * r` otherwise (above 1 discourages repeats); nil or 1 = off.
    public var repetitionPenalty: Float?
    /// OpenAI's frequency penalty: `count * f` is subtracted from a seen token's logit; nil or 0 = off.
    public var frequencyPenalty: Float?
    /// OpenAI's presence penalty: `p` is subtracted from the logit of any seen token; nil or 0 = off.
    public var presencePenalty: Float?
    /// How many of the most recent history tokens the penalties count (64, as llama.cpp); 0 = off.
    public var penaltyWindow: Int
    /// Added to a token's logit after the penalties, before top-k; `-Float.infinity` bans a token.
    public var logitBias: [Int32: Float]
    /// Seed of the draw; nil picks a random one. The same seed and options give the same tokens.
    public var seed: UInt64?

    /// Options with the given stages; the defaults are greedy with every optional stage off.
    public init(temperature: Float = 0, topK: Int? = nil, topP: Float? = nil, minP: Float? = nil,
                repetitionPenalty: Float? = nil, frequencyPenalty: Float? = nil, presencePenalty: Float? = nil,
                penaltyWindow: Int = 64, logitBias: [Int32: Float] = [:], seed: UInt64? = nil) {
        self.temperature = temperature
        self.topK = topK
        self.topP = topP
        self.minP = minP
        self.repetitionPenalty = repetitionPenalty
        self.frequencyPenalty = frequencyPenalty
        self.presencePenalty = presencePenalty
        self.penaltyWindow = penaltyWindow
        self.logitBias = logitBias
        self.seed = seed
    }

    /// Greedy decoding: the most likely token every time.
    public static let greedy = SamplingOptions()

    /// Throws `HearthError.invalidArgument` naming the first value out of range. With
    /// `vocabularySize`, also rejects biased token ids outside the vocabulary and a bias that bans
    /// every token. `Sampler` never traps on unvalidated options (an out-of-range stage is skipped),
    /// so callers taking options from users should validate them first.
    public func validate(vocabularySize: Int? = nil) throws {
        func fail(_ text: String) -> HearthError { .invalidArgument(text) }
        guard temperature.isFinite, temperature >= 0 else {
            throw fail("temperature must be a finite number ≥ 0 (0 = greedy), not \(temperature).")
        }
        if let topK, topK < 0 { throw fail("topK must be ≥ 0 (0 = off), not \(topK).") }
        if let topP, !(topP > 0 && topP <= 1) {
            throw fail("topP must be in (0, 1] (1 = off), not \(topP).")
        }
        if let minP, !(minP >= 0 && minP <= 1) {
            throw fail("minP must be in [0, 1] (0 = off), not \(minP).")
        }
        if let repetitionPenalty, !(repetitionPenalty.isFinite && repetitionPenalty > 0) {
            throw fail("repetitionPenalty must be a finite number > 0 (1 = off), not \(repetitionPenalty).")
        }
        if let frequencyPenalty, !frequencyPenalty.isFinite {
            throw fail("frequencyPenalty must be a finite number (0 = off), not \(frequencyPenalty).")
        }
        if let presencePenalty, !presencePenalty.isFinite {
            throw fail("presencePenalty must be a finite number (0 = off), not \(presencePenalty).")
        }
        guard penaltyWindow >= 0 else {
            throw fail("penaltyWindow must be ≥ 0 (0 = off), not \(penaltyWindow).")
        }
        for (token, bias) in logitBias.sorted(by: { $0.key < $1.key }) {
            guard token >= 0 else { throw fail("logitBias has a negative token id \(token).") }
            guard !bias.isNaN, bias != .infinity else {
                throw fail("logitBias for token \(token) must be a number or -infinity (to ban it), not \(bias).")
            }
            if let vocabularySize, Int(token) >= vocabularySize {
                throw fail("logitBias names token \(token), outside the vocabulary of \(vocabularySize) tokens.")
            }
        }
        if let vocabularySize, vocabularySize > 0,
           logitBias.count >= vocabularySize,
           logitBias.values.filter({ $0 == -.infinity }).count >= vocabularySize {
            throw fail("logitBias bans every token of the vocabulary; leave at least one allowed.")
        }
    }
}

extension SamplingOptions: Codable {
    private enum CodingKeys: String, CodingKey {
        case temperature, topK, topP, minP, repetitionPenalty, frequencyPenalty, presencePenalty
        case penaltyWindow, logitBias, seed
    }

    /// Decodes options, taking the defaults for missing keys; `logitBias` is an object keyed by
    /// token id in decimal, as in OpenAI's API.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let bias = try c.decodeIfPresent([String: Float].self, forKey: .logitBias) ?? [:]
        var logitBias: [Int32: Float] = [:]
        for (key, value) in bias {
            guard let token = Int32(key) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .logitBias, in: c, debugDescription: "logitBias key \"\(key)\" is not a token id.")
            }
            logitBias[token] = value
        }
        self.init(temperature: try c.decodeIfPresent(Float.self, forKey: .temperature) ?? 0,
                  topK: try c.decodeIfPresent(Int.self, forKey: .topK),
                  topP: try c.decodeIfPresent(Float.self, forKey: .topP),
                  minP: try c.decodeIfPresent(Float.self, forKey: .minP),
                  repetitionPenalty: try c.decodeIfPresent(Float.self, forKey: .repetitionPenalty),
                  frequencyPenalty: try c.decodeIfPresent(Float.self, forKey: .frequencyPenalty),
                  presencePenalty: try c.decodeIfPresent(Float.self, forKey: .presencePenalty),
                  penaltyWindow: try c.decodeIfPresent(Int.self, forKey: .penaltyWindow) ?? 64,
                  logitBias: logitBias,
                  seed: try c.decodeIfPresent(UInt64.self, forKey: .seed))
    }

    /// Encodes the options; nil stages are left out.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(temperature, forKey: .temperature)
        try c.encodeIfPresent(topK, forKey: .topK)
        try c.encodeIfPresent(topP, forKey: .topP)
        try c.encodeIfPresent(minP, forKey: .minP)
        try c.encodeIfPresent(repetitionPenalty, forKey: .repetitionPenalty)
        try c.encodeIfPresent(frequencyPenalty, forKey: .frequencyPenalty)
        try c.encodeIfPresent(presencePenalty, forKey: .presencePenalty)
        try c.encode(penaltyWindow, forKey: .penaltyWindow)
        if !logitBias.isEmpty {
            try c.encode(Dictionary(uniqueKeysWithValues: logitBias.map { (String($0.key), $0.value) }),
                         forKey: .logitBias)
        }
        try c.encodeIfPresent(seed, forKey: .seed)
    }
}
