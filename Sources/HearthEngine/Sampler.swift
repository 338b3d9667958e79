import Foundation

/// Picks the next token from logits: the most likely one at temperature 0, otherwise a draw
/// from `softmax(logits / temperature)` with a seeded generator, so the same seed gives the
/// same tokens.
public struct Sampler: Sendable {
    /// 0 means greedy.
    public var temperature: Float
    private var generator: SplitMix64

    /// A sampler at `temperature`, seeded with `seed` (random when nil).
    public init(temperature: Float = 0, seed: UInt64? = nil) {
        self.temperature = temperature
        generator = SplitMix64(seed: seed ?? UInt64.random(in: .min ... .max))
    }

    /// The next token.
    public mutating func sample(_ logits: UnsafeBufferPointer<Float>) -> Int32 {
        if temperature <= 0 {
            return Int32(TensorMath.argmax(logits.baseAddress!, count: logits.count))
        }
        var maxLogit = -Float.infinity
        for v in logits where v > maxLogit { maxLogit = v }
        var weights = [Double](repeating: 0, count: logits.count)
        var total: Double = 0
        for (i, v) in logits.enumerated() {
            let w = exp(Double((v - maxLogit) / temperature))
            weights[i] = w
            total += w
        }
        var target = Double(generator.next() >> 11) / Double(1 << 53) * total
        for (i, w) in weights.enumerated() {
            target -= w
            if target < 0 { return Int32(i) }
        }
        return Int32(logits.count - 1)
    }
}

/// A small, fast, seedable generator (Steele, Lea and Flood's SplitMix64).
struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
