import CZlib
import Foundation
import HearthKernels

/// Whisper's rules for the next token of a hypothesis: suppressed tokens never, a blank or
/// end of text not first, timestamps in pairs and never decreasing, the first one within the
/// initial limit, and a timestamp whenever all timestamps together are likelier than any text
/// token (CTranslate2's `ApplyTimestampRules` with faster-whisper's suppression).
struct TokenRules {
    let endOfText: Int
    let noTimestamps: Int
    let timestampBegin: Int
    let suppressed: [Int]
    let suppressedAtBegin: [Int]
    let withoutTimestamps: Bool
    /// The last timestamp token allowed first.
    let maxInitialTimestamp: Int

    /// Sets the logits of the tokens the rules forbid after `generated` to −∞.
    func apply(_ logits: UnsafeMutableBufferPointer<Float>, generated tokens: [Int]) {
        let begin = timestampBegin, vocabulary = logits.count
        for s in suppressed where s < vocabulary { logits[s] = -.infinity }
        if tokens.isEmpty { for s in suppressedAtBegin where s < vocabulary { logits[s] = -.infinity } }
        if withoutTimestamps { return }
        logits[noTimestamps] = -.infinity
        var checkTimestamps = false
        if tokens.isEmpty {
            for i in 0..<begin { logits[i] = -.infinity }
            for i in min(vocabulary, maxInitialTimestamp + 1)..<vocabulary { logits[i] = -.infinity }
        } else {
            let last = tokens[tokens.count - 1]
            if last >= begin {
                let penultimate = tokens.count >= 2 ? tokens[tokens.count - 2] : last
                if penultimate >= begin {
                    // A pair is complete: text (or the end) comes next.
                    for i in begin..<vocabulary { logits[i] = -.infinity }
                } else {
                    // A single timestamp closes a segment: another timestamp or the end.
                    for i in 0..<endOfText { logits[i] = -.infinity }
                    for i in begin..<min(last, vocabulary) { logits[i] = -.infinity }
                    checkTimestamps = true
                }
            } else {
                checkTimestamps = true
                if let lastTimestamp = tokens.last(where: { $0 >= begin }) {
                    for i in begin...min(lastTimestamp, vocabulary - 1) { logits[i] = -.infinity }
                }
            }
        }
        guard checkTimestamps else { return }
        // Compared in logit space: the softmax's normalizer is the same on both sides.
        var textBest = -Float.infinity
        for i in 0..<begin where logits[i] > textBest { textBest = logits[i] }
        let timestamps = UnsafeBufferPointer(rebasing: logits[begin...])
        if Sampling.logSumExp(timestamps) > textBest {
            for i in 0..<begin { logits[i] = -.infinity }
        }
    }
}

/// The arithmetic of choosing tokens from logits.
public enum Sampling {
    /// log Σ exp(xᵢ), or −∞ when every x is −∞.
    static func logSumExp(_ x: UnsafeBufferPointer<Float>) -> Float {
        VectorMath.logSumExp(x)
    }

    /// The `k` largest values of `x` with their indices, largest first (the lower index first
    /// among equals).
    static func top(_ k: Int, of x: UnsafeBufferPointer<Float>) -> [(index: Int, value: Float)] {
        var best: [(index: Int, value: Float)] = []
        best.reserveCapacity(k + 1)
        for (i, v) in x.enumerated() {
            if best.count == k, let last = best.last, !(v > last.value) { continue }
            var at = best.count
            while at > 0 && v > best[at - 1].value { at -= 1 }
            best.insert((i, v), at: at)
            if best.count > k { best.removeLast() }
        }
        return best
    }

    /// `bytes / zlib-compressed bytes` of the text's UTF-8, as faster-whisper measures how
    /// much a transcription repeats itself (zlib's default level).
    public static func compressionRatio(_ text: String) -> Double {
        let bytes = Array(text.utf8) + [0]
        let length = bytes.count - 1
        var size = compressBound(uLong(length))
        var output = [UInt8](repeating: 0, count: Int(size))
        let status = bytes.withUnsafeBufferPointer { input in
            compress2(&output, &size, input.baseAddress!, uLong(length), Z_DEFAULT_COMPRESSION)
        }
        guard status == Z_OK, size > 0 else { return 0 }
        return Double(length) / Double(size)
    }
}

/// xoshiro256** seeded through SplitMix64: the same seed gives the same draws everywhere.
struct SeededGenerator: RandomNumberGenerator {
    private var s: (UInt64, UInt64, UInt64, UInt64)

    init(seed: UInt64) {
        var x = seed
        func next() -> UInt64 {
            x &+= 0x9E37_79B9_7F4A_7C15
            var z = x
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        s = (next(), next(), next(), next())
    }

    mutating func next() -> UInt64 {
        func rotl(_ x: UInt64, _ k: UInt64) -> UInt64 { (x << k) | (x >> (64 - k)) }
        let result = rotl(s.1 &* 5, 7) &* 9
        let t = s.1 << 17
        s.2 ^= s.0
        s.3 ^= s.1
        s.1 ^= s.2
        s.0 ^= s.3
        s.2 ^= t
        s.3 = rotl(s.3, 45)
        return result
    }

    /// A uniform draw in [0, 1).
    mutating func unit() -> Double { Double(next() >> 11) * 0x1p-53 }
}

/// A finished hypothesis: its tokens (without the end of text) and the sum of the
/// log-probabilities of every token chosen, the end of text included.
struct Hypothesis {
    var tokens: [Int]
    var logProbability: Float

    /// The score hypotheses are ranked by: the log-probability over the length to a power.
    func score(lengthPenalty: Double) -> Float {
        logProbability / Float(Foundation.pow(Double(tokens.count), lengthPenalty))
    }
}

/// Decoding strategies over one window, each as CTranslate2 runs it for faster-whisper:
/// greedy, beam search, and sampling several hypotheses at a temperature. Every strategy
/// starts from the logits after the prompt, which sequence 0 of `decoding` holds.
struct WindowSearch {
    let model: WhisperModel
    let rules: TokenRules
    let endOfText: Int
    /// Steps at most, the end of text included.
    let maxLength: Int
    let isCancelled: () -> Bool

    /// Log-probabilities of `logits` (in place), after the rules for `generated`.
    private func logProbabilities(_ logits: inout [Float], generated: [Int]) {
        logits.withUnsafeMutableBufferPointer { row in
            rules.apply(row, generated: generated)
            let shift = Sampling.logSumExp(UnsafeBufferPointer(row))
            for i in row.indices { row[i] -= shift }
        }
    }

    /// The likeliest token at each step.
    func greedy(decoding: WhisperModel.Decoding, start: [Float]) throws -> Hypothesis {
        var logits = start
        var tokens: [Int] = []
        var sum: Float = 0
        for step in 0..<maxLength {
            try checkCancelled()
            logProbabilities(&logits, generated: tokens)
            var best = 0
            for i in 1..<logits.count where logits[i] > logits[best] { best = i }
            sum += logits[best]
            if best == endOfText { break }
            tokens.append(best)
            if step + 1 == maxLength { break }
            logits = try model.decode([best], in: decoding)
        }
        return Hypothesis(tokens: tokens, logProbability: sum)
    }

    /// Beam search: `beamSize` hypotheses grow by the `2 × beamSize` likeliest continuations of
    /// all of them; one that ends is kept aside and its place taken by the next candidate that
    /// does not end, until `beamSize × patience` have ended. The best by
    /// `score(lengthPenalty:)` wins.
    func beam(decoding: WhisperModel.Decoding, start: [Float], beamSize: Int, patience: Double,
              lengthPenalty: Double) throws -> Hypothesis {
        let candidates = 2 * beamSize
        let enough = max(1, Int((Double(beamSize) * patience).rounded()))
        var finished: [Hypothesis] = []
        var rows = [start]
        var alive: [[Int]] = [[]]
        var scores: [Float] = [0]
        for step in 0..<maxLength {
            try checkCancelled()
            var pool: [(score: Float, beam: Int, token: Int)] = []
            for b in rows.indices {
                rows[b].withUnsafeMutableBufferPointer { row in
                    rules.apply(row, generated: alive[b])
                    let shift = Sampling.logSumExp(UnsafeBufferPointer(row))
                    for (token, value) in Sampling.top(candidates, of: UnsafeBufferPointer(row)) where value > -.infinity {
                        pool.append((scores[b] + (value - shift), b, token))
                    }
                }
            }
            // The best candidates over every beam, the first beam's first among equals.
            pool.sort { $0.score > $1.score || ($0.score == $1.score && ($0.beam, $0.token) < ($1.beam, $1.token)) }
            pool = Array(pool.prefix(candidates))
            guard !pool.isEmpty else { break }
            let last = step + 1 == maxLength
            var next: [(score: Float, beam: Int, token: Int)] = []
            var secondary = beamSize
            for k in 0..<min(beamSize, pool.count) {
                var pick = k
                let candidate = pool[k]
                if candidate.token == endOfText || last {
                    let tokens = alive[candidate.beam] + (candidate.token == endOfText ? [] : [candidate.token])
                    finished.append(Hypothesis(tokens: tokens, logProbability: candidate.score))
                    while secondary < pool.count {
                        defer { secondary += 1 }
                        if pool[secondary].token != endOfText {
                            pick = secondary
                            break
                        }
                    }
                }
                next.append(pool[pick])
            }
            if last || finished.count >= enough { break }
            let origins = next.map(\.beam)
            alive = next.map { alive[$0.beam] + [$0.token] }
            scores = next.map(\.score)
            decoding.reorder(origins)
            rows = try model.decode(next.map(\.token), sequences: Array(0..<next.count), in: decoding,
                                    logitsOf: Array(0..<next.count))
        }
        return best(of: finished, lengthPenalty: lengthPenalty)
    }

    /// `count` hypotheses sampled at `temperature` (each token drawn from the softmax of the
    /// log-probabilities over the temperature), each scored by the unscaled log-probabilities.
    func sample(decoding: WhisperModel.Decoding, start: [Float], count: Int, temperature: Double,
                lengthPenalty: Double, generator: inout SeededGenerator) throws -> Hypothesis {
        decoding.replicate(0, count: count)
        var rows = Array(repeating: start, count: count)
        var tokens = Array(repeating: [Int](), count: count)
        var sums = [Float](repeating: 0, count: count)
        var alive = Array(0..<count)
        var finished: [Hypothesis] = []
        let scale = Float(1 / temperature)
        for step in 0..<maxLength {
            try checkCancelled()
            var chosen: [Int] = []
            var stillAlive: [Int] = []
            for (r, h) in alive.enumerated() {
                logProbabilities(&rows[r], generated: tokens[h])
                let token = rows[r].withUnsafeBufferPointer { draw(from: $0, scale: scale, generator: &generator) }
                sums[h] += rows[r][token]
                if token != endOfText { tokens[h].append(token) }
                if token == endOfText || step + 1 == maxLength {
                    finished.append(Hypothesis(tokens: tokens[h], logProbability: sums[h]))
                } else {
                    stillAlive.append(h)
                    chosen.append(token)
                }
            }
            alive = stillAlive
            if alive.isEmpty { break }
            rows = try model.decode(chosen, sequences: alive, in: decoding, logitsOf: Array(0..<alive.count))
        }
        return best(of: finished, lengthPenalty: lengthPenalty)
    }

    /// A draw from softmax(scale · logProbabilities).
    private func draw(from logProbabilities: UnsafeBufferPointer<Float>, scale: Float, generator: inout SeededGenerator) -> Int {
        var largest = -Float.infinity
        for v in logProbabilities where v > largest { largest = v }
        var total: Double = 0
        for v in logProbabilities where v > -.infinity { total += Double(Foundation.exp((v - largest) * scale)) }
        var target = generator.unit() * total
        var fallback = 0
        for (i, v) in logProbabilities.enumerated() where v > -.infinity {
            let weight = Double(Foundation.exp((v - largest) * scale))
            fallback = i
            if target < weight { return i }
            target -= weight
        }
        return fallback
    }

    private func best(of hypotheses: [Hypothesis], lengthPenalty: Double) -> Hypothesis {
        guard var winner = hypotheses.first else { return Hypothesis(tokens: [], logProbability: -.infinity) }
        for h in hypotheses.dropFirst() where h.score(lengthPenalty: lengthPenalty) > winner.score(lengthPenalty: lengthPenalty) {
            winner = h
        }
        return winner
    }

    private func checkCancelled() throws {
        if isCancelled() { throw CancellationError() }
    }
}
