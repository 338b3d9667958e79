import Foundation
import Hearth
import HearthTestSupport
import Testing

// Most tests use one logit vector whose softmax was computed by hand (Python, float64):
//   L = [2, 1, 0, -1, 3]
//   softmax(L)     = [0.234122, 0.086129, 0.031685, 0.011656, 0.636409]
//   softmax(L / 2) = [0.259993, 0.157694, 0.095646, 0.058012, 0.428656]
//   log-sum-exp(L) = 3.451914
private let L: [Float] = [2, 1, 0, -1, 3]

extension Sampler {
    fileprivate mutating func sample(_ logits: [Float], history: [Int32] = []) -> Int32 {
        logits.withUnsafeBufferPointer { sample($0, history: history) }
    }

    fileprivate func distribution(_ logits: [Float], history: [Int32] = []) -> [Int32: Float] {
        let pairs = logits.withUnsafeBufferPointer { distribution($0, history: history) }
        return Dictionary(uniqueKeysWithValues: pairs.map { ($0.token, $0.probability) })
    }

    fileprivate func adjusted(_ logits: [Float], history: [Int32]) -> [Float] {
        logits.withUnsafeBufferPointer { adjustedLogits($0, history: history) }
    }
}

private func expectDistribution(_ actual: [Int32: Float], _ expected: [Int32: Float], tolerance: Float = 1e-5,
                                sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(Set(actual.keys) == Set(expected.keys), sourceLocation: sourceLocation)
    for (token, p) in expected {
        #expect(abs((actual[token] ?? -1) - p) < tolerance, "token \(token)", sourceLocation: sourceLocation)
    }
}

/// Frequencies of `draws` seeded draws.
private func frequencies(_ options: SamplingOptions, _ logits: [Float], history: [Int32] = [],
                         draws: Int = 100_000) -> [Int32: Float] {
    var sampler = Sampler(options: options)
    var counts: [Int32: Int] = [:]
    for _ in 0..<draws { counts[sampler.sample(logits, history: history), default: 0] += 1 }
    return counts.mapValues { Float($0) / Float(draws) }
}

/// Deterministic pseudo-random logits, so tests never depend on the run.
private struct TestLogits {
    var state: UInt64

    mutating func uniform() -> Double {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return (Double(state >> 11) + 0.5) * 0x1p-53
    }

    mutating func normal() -> Float {
        Float((-2 * log(uniform())).squareRoot() * cos(2 * Double.pi * uniform()))
    }

    /// Like a language model's: broad noise with a few tokens far above it.
    mutating func peaked(count: Int) -> [Float] {
        var x = (0..<count).map { _ in 2 * normal() }
        for i in 0..<8 { x[(i * 7919 + 13) % count] = 10 + Float(i) }
        return x
    }

    mutating func flat(count: Int) -> [Float] { (0..<count).map { _ in 2.5 * normal() } }
}

@Suite struct SamplerStageTests {
    @Test("greedy is the argmax, the first index on ties")
    func greedy() {
        var sampler = Sampler(temperature: 0)
        #expect(sampler.sample(L) == 4)
        #expect(sampler.sample([1, 5, 5, 2]) == 1)
        #expect(sampler.sample([.nan, 1, 0]) == 1)
        // Filters cannot change the greedy token: each keeps the most likely one.
        var filtered = Sampler(options: SamplingOptions(temperature: 0, topK: 2, topP: 0.5, minP: 0.9))
        #expect(filtered.sample([1, 5, 5, 2]) == 1)
    }

    @Test("greedy sees penalties and bias")
    func greedyAfterAdjusting() {
        var biased = Sampler(options: SamplingOptions(logitBias: [1: 1]))
        #expect(biased.sample([2, 1]) == 0) // a tie after the bias: the first wins
        var banned = Sampler(options: SamplingOptions(logitBias: [4: -.infinity]))
        #expect(banned.sample(L) == 0)
        var penalised = Sampler(options: SamplingOptions(repetitionPenalty: 2))
        #expect(penalised.sample(L, history: [4]) == 0) // 3 / 2 = 1.5 < 2
    }

    @Test("repetition penalty: positive logits divided, negative multiplied")
    func repetitionPenalty() {
        let sampler = Sampler(options: SamplingOptions(repetitionPenalty: 2))
        #expect(sampler.adjusted(L, history: [4, 4, 0, 3, 2]) == [1, 1, 0, -2, 1.5])
    }

    @Test("frequency penalty subtracts count × f")
    func frequencyPenalty() {
        let sampler = Sampler(options: SamplingOptions(frequencyPenalty: 0.5))
        #expect(sampler.adjusted(L, history: [4, 4, 0, 3]) == [1.5, 1, 0, -1.5, 2])
    }

    @Test("presence penalty subtracts p once per seen token")
    func presencePenalty() {
        let sampler = Sampler(options: SamplingOptions(presencePenalty: 0.25))
        #expect(sampler.adjusted(L, history: [4, 4, 0, 3]) == [1.75, 1, 0, -1.25, 2.75])
    }

    @Test("all three penalties: repetition first, then frequency and presence")
    func allPenalties() {
        let sampler = Sampler(options: SamplingOptions(repetitionPenalty: 2, frequencyPenalty: 0.5, presencePenalty: 0.25))
        // token 4: 3 / 2 - (2 × 0.5 + 0.25); token 0: 2 / 2 - (0.5 + 0.25); token 3: -1 × 2 - 0.75
        #expect(sampler.adjusted(L, history: [4, 4, 0, 3]) == [0.25, 1, 0, -2.75, 0.25])
    }

    @Test("penalties count only the last penaltyWindow tokens")
    func penaltyWindow() {
        let last2 = Sampler(options: SamplingOptions(frequencyPenalty: 0.5, penaltyWindow: 2))
        #expect(last2.adjusted(L, history: [4, 4, 0, 3]) == [1.5, 1, 0, -1.5, 3])
        let off = Sampler(options: SamplingOptions(frequencyPenalty: 0.5, penaltyWindow: 0))
        #expect(off.adjusted(L, history: [4, 4, 0, 3]) == L)
        // Tokens outside the vocabulary in the history are ignored, not trapped on.
        let outside = Sampler(options: SamplingOptions(frequencyPenalty: 0.5))
        #expect(outside.adjusted(L, history: [-1, 99, 4]) == [2, 1, 0, -1, 2.5])
        // Any collection of token ids works as history.
        let presence = Sampler(options: SamplingOptions(presencePenalty: 1))
        let history: [Int32] = [0, 9, 0]
        #expect(L.withUnsafeBufferPointer { presence.adjustedLogits($0, history: history[1...]) } == [1, 1, 0, -1, 3])
    }

    @Test("logit bias is added after the penalties; -infinity bans")
    func logitBias() {
        let sampler = Sampler(options: SamplingOptions(logitBias: [1: 2.5, 4: -.infinity]))
        #expect(sampler.adjusted(L, history: []) == [2, 3.5, 0, -1, -.infinity])
        // Penalty then bias: 2 / 2 + 1 = 2, where bias then penalty would give (2 + 1) / 2 = 1.5.
        let both = Sampler(options: SamplingOptions(repetitionPenalty: 2, logitBias: [0: 1]))
        #expect(both.adjusted(L, history: [0]) == [2, 1, 0, -1, 3])
        // A banned token is never drawn, even at a high temperature.
        let banned = SamplingOptions(temperature: 5, logitBias: [4: -.infinity], seed: 1)
        #expect(frequencies(banned, L, draws: 10_000)[4] == nil)
        #expect(Sampler(options: banned).distribution(L)[4] == nil)
    }

    @Test("top-k keeps the k highest logits and renormalises")
    func topK() {
        let k2 = Sampler(options: SamplingOptions(temperature: 1, topK: 2))
        expectDistribution(k2.distribution(L), [0: 0.268941, 4: 0.731059])
        // Ties at the cut go to the lower token id.
        let ties = Sampler(options: SamplingOptions(temperature: 1, topK: 2))
        expectDistribution(ties.distribution([1, 3, 3, 0, 3]), [1: 0.5, 2: 0.5])
        // k ≥ vocabulary, and k = 0, are off.
        let all = Sampler(options: SamplingOptions(temperature: 1, topK: 5))
        let off = Sampler(options: SamplingOptions(temperature: 1, topK: 0))
        let full: [Int32: Float] = [0: 0.234122, 1: 0.086129, 2: 0.031685, 3: 0.011656, 4: 0.636409]
        expectDistribution(all.distribution(L), full)
        expectDistribution(off.distribution(L), full)
    }

    @Test("top-p keeps the most likely tokens up to and including the one that crosses p")
    func topP() {
        func survivors(_ p: Float) -> Set<Int32> {
            Set(Sampler(options: SamplingOptions(temperature: 1, topP: p)).distribution(L).keys)
        }
        #expect(survivors(0.6) == [4])            // 0.636 ≥ 0.6
        #expect(survivors(0.8) == [4, 0])         // 0.636 < 0.8 ≤ 0.870
        #expect(survivors(0.9) == [4, 0, 1])      // 0.870 < 0.9 ≤ 0.957
        #expect(survivors(0.99) == [4, 0, 1, 2, 3])
        #expect(survivors(1) == [4, 0, 1, 2, 3])
        let p08 = Sampler(options: SamplingOptions(temperature: 1, topP: 0.8))
        expectDistribution(p08.distribution(L), [0: 0.268941, 4: 0.731059])
    }

    @Test("min-p keeps tokens at least minP times as likely as the most likely")
    func minP() {
        func survivors(_ p: Float) -> Set<Int32> {
            Set(Sampler(options: SamplingOptions(temperature: 1, minP: p)).distribution(L).keys)
        }
        // Keeps logit ≥ 3 + ln(minP): 1.391 for 0.2, 0.004 for 0.05.
        #expect(survivors(0.2) == [4, 0])
        #expect(survivors(0.05) == [4, 0, 1])
        #expect(survivors(1) == [4])
        #expect(survivors(0) == [4, 0, 1, 2, 3])
        let p02 = Sampler(options: SamplingOptions(temperature: 1, minP: 0.2))
        expectDistribution(p02.distribution(L), [0: 0.268941, 4: 0.731059])
    }

    @Test("temperature reshapes the distribution; draws follow it")
    func temperature() {
        let t2 = SamplingOptions(temperature: 2, seed: 7)
        let expected2: [Int32: Float] = [0: 0.259993, 1: 0.157694, 2: 0.095646, 3: 0.058012, 4: 0.428656]
        expectDistribution(Sampler(options: t2).distribution(L), expected2)
        // 100,000 draws: one standard deviation of a frequency is at most 0.0016, so 0.01 is > 6σ.
        expectDistribution(frequencies(t2, L), expected2, tolerance: 0.01)

        let t05 = SamplingOptions(temperature: 0.5, seed: 8)
        let expected05: [Int32: Float] = [0: 0.117025, 1: 0.015838, 2: 0.002143, 3: 0.000290, 4: 0.864704]
        expectDistribution(Sampler(options: t05).distribution(L), expected05)
        let drawn = frequencies(t05, L)
        for (token, p) in expected05 { #expect(abs((drawn[token] ?? 0) - p) < 0.01, "token \(token)") }

        let t1 = SamplingOptions(temperature: 1, seed: 9)
        let expected1: [Int32: Float] = [0: 0.234122, 1: 0.086129, 2: 0.031685, 3: 0.011656, 4: 0.636409]
        expectDistribution(frequencies(t1, L), expected1, tolerance: 0.01)
    }

    @Test("a tiny temperature is greedy in effect, without overflow")
    func tinyTemperature() {
        let sampler = Sampler(options: SamplingOptions(temperature: 1e-38))
        expectDistribution(sampler.distribution(L), [4: 1])
        expectDistribution(sampler.distribution([1, 3, 3]), [1: 0.5, 2: 0.5])
    }

    @Test("NaN and infinite logits are never candidates")
    func nonFiniteLogits() {
        let sampler = Sampler(options: SamplingOptions(temperature: 1, seed: 3))
        expectDistribution(sampler.distribution([.nan, 0, .infinity, 0]), [1: 0.5, 3: 0.5])
        // With nothing finite left, the raw argmax rather than a trap.
        var banned = Sampler(options: SamplingOptions(temperature: 1, logitBias: [0: -.infinity, 1: -.infinity]))
        #expect(banned.sample([1, 2]) == 1)
    }
}

/// A case of llama.cpp's `tests/test-sampling.cpp`: logits log(probs), one stage, and the
/// probabilities llama.cpp expects after it, most likely first.
struct LlamaCppSamplingCase: Sendable, CustomTestStringConvertible {
    let name: String
    let probs: [Float]
    let history: [Int32]
    let options: SamplingOptions
    let expected: [Float]
    var testDescription: String { name }

    static let all: [Self] = {
        let p: [Float] = [0.1, 0.2, 0.3, 0.4]
        let flat: [Float] = [0.2, 0.2, 0.2, 0.2, 0.2]
        func c(_ name: String, _ probs: [Float], _ options: SamplingOptions, _ expected: [Float],
               history: [Int32] = []) -> Self {
            Self(name: name, probs: probs, history: history, options: options, expected: expected)
        }
        func penalties(_ r: Float, _ f: Float, _ pr: Float, window: Int) -> SamplingOptions {
            SamplingOptions(temperature: 1, repetitionPenalty: r, frequencyPenalty: f, presencePenalty: pr,
                            penaltyWindow: window)
        }
        return [
            c("temp 1", p, .init(temperature: 1), [0.4, 0.3, 0.2, 0.1]),
            c("temp 0", p, .init(temperature: 0), [1]),
            c("top_k 1", p, .init(temperature: 1, topK: 1), [1]),
            c("top_k 3", p, .init(temperature: 1, topK: 3), [0.44444, 0.33333, 0.22222]),
            c("top_k 4", p, .init(temperature: 1, topK: 4), [0.4, 0.3, 0.2, 0.1]),
            c("top_k 0", p, .init(temperature: 1, topK: 0), [0.4, 0.3, 0.2, 0.1]),
            c("top_p 0.7", p, .init(temperature: 1, topP: 0.7), [0.571429, 0.428571]),
            c("top_p 0.8", p, .init(temperature: 1, topP: 0.8), [0.44444, 0.33333, 0.22222]),
            c("top_p 1", p, .init(temperature: 1, topP: 1), [0.4, 0.3, 0.2, 0.1]),
            c("min_p 0", p, .init(temperature: 1, minP: 0), [0.4, 0.3, 0.2, 0.1]),
            c("min_p 0.24", p, .init(temperature: 1, minP: 0.24), [0.4, 0.3, 0.2, 0.1]),
            c("min_p 0.26", p, .init(temperature: 1, minP: 0.26), [0.4 / 0.9, 0.3 / 0.9, 0.2 / 0.9]),
            c("min_p 0.49", p, .init(temperature: 1, minP: 0.49), [0.4 / 0.9, 0.3 / 0.9, 0.2 / 0.9]),
            c("min_p 0.51", p, .init(temperature: 1, minP: 0.51), [0.4 / 0.7, 0.3 / 0.7]),
            c("min_p 0.74", p, .init(temperature: 1, minP: 0.74), [0.4 / 0.7, 0.3 / 0.7]),
            c("min_p 0.76", p, .init(temperature: 1, minP: 0.76), [1]),
            c("min_p 1", p, .init(temperature: 1, minP: 1), [1]),
            c("repeat 50, [0]", flat, penalties(50, 0, 0, window: 1), [0.25, 0.25, 0.25, 0.25, 0], history: [0]),
            c("repeat 50, [0 1 2]", flat, penalties(50, 0, 0, window: 3), [0.5, 0.5, 0, 0, 0], history: [0, 1, 2]),
            c("repeat 50, [0 1 2 0 0]", flat, penalties(50, 0, 0, window: 5), [0.5, 0.5, 0, 0, 0],
              history: [0, 1, 2, 0, 0]),
            c("freq 5 presence 5, [0]", flat, penalties(1, 5, 5, window: 1),
              [0.249997, 0.249997, 0.249997, 0.249997, 0.000011], history: [0]),
            c("freq 5 presence 5, [0 1 2]", flat, penalties(1, 5, 5, window: 3),
              [0.499966, 0.499966, 0.000023, 0.000023, 0.000023], history: [0, 1, 2]),
            c("freq 5 presence 5, [0 1 2 0 0]", flat, penalties(1, 5, 5, window: 5),
              [0.499977, 0.499977, 0.000023, 0.000023, 0], history: [0, 1, 2, 0, 0]),
        ]
    }()
}

@Suite struct SamplerLlamaCppTests {
    @Test("llama.cpp's test-sampling cases give llama.cpp's probabilities", arguments: LlamaCppSamplingCase.all)
    func llamaCppCase(_ c: LlamaCppSamplingCase) {
        let logits = c.probs.map { log($0) }
        let sampler = Sampler(options: c.options)
        var got = sampler.distribution(logits, history: c.history).values.sorted(by: >)
        #expect(got.count <= c.expected.count, "\(got)")
        got += [Float](repeating: 0, count: max(0, c.expected.count - got.count))
        // llama.cpp's own tolerance.
        for (a, b) in zip(got, c.expected) { #expect(abs(a - b) < 1e-5, "\(got)") }
    }
}

@Suite struct SamplerChainTests {
    @Test("the full chain, stage by stage, on one vector")
    func fullChain() {
        let logits: [Float] = [2, 1, 0, -1, 3, 1.8, 0.5, -2]
        let options = SamplingOptions(temperature: 0.5, topK: 5, topP: 0.9, minP: 0.5,
                                      repetitionPenalty: 1.5, frequencyPenalty: 0.25,
                                      logitBias: [7: 4, 5: -.infinity], seed: 11)
        let history: [Int32] = [4, 4]
        let sampler = Sampler(options: options)
        // 1–2: token 4: 3 / 1.5 - 2 × 0.25 = 1.5; token 7: -2 + 4; token 5 banned.
        #expect(sampler.adjusted(logits, history: history) == [2, 1, 0, -1, 1.5, -.infinity, 0.5, 2])
        // 3: top-5 = {0, 7, 4, 1, 6} (0 and 7 tie at 2), dropping 2 and 3.
        // 4: their probabilities 0.3127, 0.3127, 0.1897, 0.1151, 0.0698: the sum crosses 0.9 at
        //    token 1 (0.9302), dropping 6.
        // 5: min-p 0.5 keeps logits ≥ 2 + ln 0.5 = 1.307: {0, 7, 4}, dropping 1.
        // 6: softmax([2, 1.5, 2] / 0.5).
        let expected: [Int32: Float] = [0: 0.422319, 4: 0.155362, 7: 0.422319]
        expectDistribution(sampler.distribution(logits, history: history), expected)
        expectDistribution(frequencies(options, logits, history: history), expected, tolerance: 0.01)
        // At temperature 0 the same options pick the first of the tied maxima after stage 2.
        var greedy = Sampler(options: SamplingOptions(repetitionPenalty: 1.5, frequencyPenalty: 0.25,
                                                      logitBias: [7: 4, 5: -.infinity]))
        #expect(greedy.sample(logits, history: history) == 0)
    }

    @Test("order matters: top-p sees the probabilities renormalised by top-k")
    func topKBeforeTopP() {
        // Alone, top-p 0.9 on L keeps {4, 0, 1} (see topP). After top-3, the probabilities are
        // [0.665, 0.245, 0.090] and 0.665 + 0.245 = 0.910 already reaches 0.9.
        let chained = Sampler(options: SamplingOptions(temperature: 1, topK: 3, topP: 0.9))
        expectDistribution(chained.distribution(L), [0: 0.268941, 4: 0.731059])
    }

    @Test("order matters: min-p runs before temperature")
    func minPBeforeTemperature() {
        // At temperature 1, min-p 0.2 keeps logits ≥ 1.391: {0, 4}. Had temperature 0.5 run
        // first, it would keep logits/0.5 ≥ 6 + ln 0.2 = 4.39, only {4}.
        let sampler = Sampler(options: SamplingOptions(temperature: 0.5, minP: 0.2))
        expectDistribution(sampler.distribution(L), [0: 0.119203, 4: 0.880797])
    }

    @Test("same seed, same tokens; different seeds, different tokens")
    func determinism() {
        var random = TestLogits(state: 5)
        let steps = (0..<200).map { _ in random.flat(count: 1000) }
        let options = SamplingOptions(temperature: 0.9, topK: 100, topP: 0.95, minP: 0.02,
                                      repetitionPenalty: 1.1, presencePenalty: 0.3)
        func run(seed: UInt64) -> [Int32] {
            var sampler = Sampler(options: { var o = options; o.seed = seed; return o }())
            var history: [Int32] = []
            for logits in steps { history.append(sampler.sample(logits, history: history)) }
            return history
        }
        #expect(run(seed: 42) == run(seed: 42))
        #expect(run(seed: 42) != run(seed: 43))
        #expect(Set(run(seed: 42)).count > 20, "a real draw, not a constant")
    }

    @Test("samplers on concurrent tasks give the same tokens as one on its own")
    func determinismAcrossThreads() async {
        var random = TestLogits(state: 6)
        let steps = (0..<100).map { _ in random.flat(count: 4096) }
        let options = SamplingOptions(temperature: 1, topK: 50, minP: 0.01, seed: 99)
        @Sendable func run() -> [Int32] {
            var sampler = Sampler(options: options)
            return steps.map { sampler.sample($0) }
        }
        let serial = run()
        let parallel = await withTaskGroup(of: [Int32].self) { group in
            for _ in 0..<4 { group.addTask { run() } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(parallel.allSatisfy { $0 == serial })
    }

    @Test("a copied sampler continues the same sequence")
    func copies() {
        var a = Sampler(options: SamplingOptions(temperature: 1, seed: 5))
        _ = a.sample(L)
        var b = a
        #expect((0..<50).map { _ in a.sample(L) } == (0..<50).map { _ in b.sample(L) })
    }

    @Test("Sampler(temperature:seed:) still samples as before: greedy at 0, seeded above")
    func compatibility() {
        var greedy = Sampler()
        #expect(L.withUnsafeBufferPointer { greedy.sample($0) } == 4)
        var a = Sampler(temperature: 1, seed: 3), b = Sampler(temperature: 1, seed: 3)
        let x = (0..<100).map { _ in L.withUnsafeBufferPointer { a.sample($0) } }
        let y = (0..<100).map { _ in L.withUnsafeBufferPointer { b.sample($0) } }
        #expect(x == y)
        #expect(Sampler(temperature: 0.7).options == SamplingOptions(temperature: 0.7))
    }
}

@Suite struct SamplerLogprobTests {
    @Test("logprobs are the log-softmax of the raw logits")
    func logprobs() {
        var sampler = Sampler()
        let result = L.withUnsafeBufferPointer { sampler.sampleWithLogprobs($0, history: [Int32](), top: 3) }
        #expect(result.token == 4)
        #expect(abs(result.logprob - -0.451914) < 1e-5)
        #expect(result.top.map(\.token) == [4, 0, 1])
        let expected: [Float] = [-0.451914, -1.451914, -2.451914]
        for (got, want) in zip(result.top.map(\.logprob), expected) { #expect(abs(got - want) < 1e-5) }
    }

    @Test("logprobs ignore the chain: a banned favourite still shows its raw probability")
    func logprobsAreRaw() {
        var sampler = Sampler(options: SamplingOptions(temperature: 0.3, logitBias: [4: -.infinity], seed: 1))
        let result = L.withUnsafeBufferPointer { sampler.sampleWithLogprobs($0, history: [Int32](), top: 1) }
        #expect(result.token != 4)
        #expect(abs(result.logprob - ([-1.451914, -2.451914, -3.451914, -4.451914] as [Float])[Int(result.token)]) < 1e-5)
        #expect(result.top == [TokenLogprob(token: 4, logprob: result.top[0].logprob)])
        #expect(abs(result.top[0].logprob - -0.451914) < 1e-5)
    }

    @Test("top logprobs: ties by lower id, never more than the vocabulary")
    func topLogprobs() {
        var sampler = Sampler()
        let ties = [Float](arrayLiteral: 0, 1, 1, 0).withUnsafeBufferPointer {
            sampler.sampleWithLogprobs($0, history: [Int32](), top: 10)
        }
        #expect(ties.token == 1)
        #expect(ties.top.map(\.token) == [1, 2, 0, 3])
        // log(e / (2e + 2)) = 1 - log(2e + 2)
        #expect(abs(ties.top[0].logprob - Float(1 - log(2 * exp(1.0) + 2))) < 1e-5)
        let none = L.withUnsafeBufferPointer { sampler.sampleWithLogprobs($0, history: [Int32](), top: 0) }
        #expect(none.top.isEmpty)
    }
}

@Suite struct SamplingOptionsTests {
    @Test("valid options pass")
    func valid() throws {
        try SamplingOptions().validate()
        try SamplingOptions(temperature: 0.7, topK: 40, topP: 1, minP: 0, repetitionPenalty: 1.1,
                            frequencyPenalty: -0.5, presencePenalty: 2, penaltyWindow: 0,
                            logitBias: [3: -.infinity, 4: -100], seed: 1).validate(vocabularySize: 5)
    }

    @Test("invalid options throw invalidArgument", arguments: [
        SamplingOptions(temperature: -0.1),
        SamplingOptions(temperature: .nan),
        SamplingOptions(temperature: .infinity),
        SamplingOptions(topK: -1),
        SamplingOptions(topP: 0),
        SamplingOptions(topP: 1.5),
        SamplingOptions(topP: .nan),
        SamplingOptions(minP: -0.1),
        SamplingOptions(minP: 1.1),
        SamplingOptions(minP: .nan),
        SamplingOptions(repetitionPenalty: 0),
        SamplingOptions(repetitionPenalty: .nan),
        SamplingOptions(frequencyPenalty: .infinity),
        SamplingOptions(presencePenalty: .nan),
        SamplingOptions(penaltyWindow: -1),
        SamplingOptions(logitBias: [-1: 1]),
        SamplingOptions(logitBias: [1: .nan]),
        SamplingOptions(logitBias: [1: .infinity]),
    ])
    func invalid(_ options: SamplingOptions) {
        let error = #expect(throws: HearthError.self) { try options.validate() }
        if case .invalidArgument(let text)? = error {
            #expect(!text.isEmpty)
        } else {
            Issue.record("expected invalidArgument, got \(String(describing: error))")
        }
    }

    @Test("the vocabulary bounds the biased tokens, and some token must stay allowed")
    func vocabulary() throws {
        try SamplingOptions(logitBias: [5: 1]).validate()
        #expect(throws: HearthError.self) { try SamplingOptions(logitBias: [5: 1]).validate(vocabularySize: 5) }
        #expect(throws: HearthError.self) {
            try SamplingOptions(logitBias: [0: -.infinity, 1: -.infinity]).validate(vocabularySize: 2)
        }
        try SamplingOptions(logitBias: [0: -.infinity, 1: -100]).validate(vocabularySize: 2)
    }

    @Test("Codable: round trip, defaults for missing keys, logitBias keyed by token id")
    func codable() throws {
        let options = SamplingOptions(temperature: 0.8, topK: 40, topP: 0.95, minP: 0.05, repetitionPenalty: 1.1,
                                      frequencyPenalty: 0.2, presencePenalty: 0.1, penaltyWindow: 32,
                                      logitBias: [7: -100, 12: 2], seed: 123)
        let data = try JSONEncoder().encode(options)
        #expect(try JSONDecoder().decode(SamplingOptions.self, from: data) == options)
        #expect(try JSONDecoder().decode(SamplingOptions.self, from: Data("{}".utf8)) == SamplingOptions())
        let json = #"{"temperature": 0.5, "logitBias": {"42": -100}}"#
        #expect(try JSONDecoder().decode(SamplingOptions.self, from: Data(json.utf8))
            == SamplingOptions(temperature: 0.5, logitBias: [42: -100]))
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(SamplingOptions.self, from: Data(#"{"logitBias": {"x": 1}}"#.utf8))
        }
    }
}

/// The slow twin: the chain by its definition, with a full sort, in Double.
private func referenceDistribution(_ logits: [Float], history: [Int32], options o: SamplingOptions) -> [Int32: Float] {
    var a = logits
    let window = o.penaltyWindow > 0 ? Array(history.suffix(o.penaltyWindow)) : []
    for (token, count) in Dictionary(grouping: window, by: { $0 }).mapValues(\.count) {
        var v = a[Int(token)]
        if let r = o.repetitionPenalty { v = v > 0 ? v / r : v * r }
        v -= Float(count) * (o.frequencyPenalty ?? 0) + (o.presencePenalty ?? 0)
        a[Int(token)] = v
    }
    for (token, bias) in o.logitBias { a[Int(token)] += bias }
    var order = a.indices.filter { a[$0].isFinite }.sorted { a[$0] > a[$1] || (a[$0] == a[$1] && $0 < $1) }
    if let k = o.topK, k > 0 { order = Array(order.prefix(k)) }
    let top = Double(a[order[0]])
    if let p = o.topP, p < 1 {
        let weights = order.map { exp(Double(a[$0]) - top) }
        let total = weights.reduce(0, +)
        var cumulative = 0.0
        var keep = order.count
        for (i, w) in weights.enumerated() {
            cumulative += w / total
            if cumulative >= Double(p) { keep = i + 1; break }
        }
        order = Array(order.prefix(keep))
    }
    if let m = o.minP, m > 0 {
        let threshold = a[order[0]] + log(m)
        order = order.filter { a[$0] >= threshold }
    }
    let weights = order.map { exp((Double(a[$0]) - top) / Double(o.temperature)) }
    let total = weights.reduce(0, +)
    return Dictionary(uniqueKeysWithValues: zip(order, weights).map { (Int32($0), Float($1 / total)) })
}

@Suite struct SamplerVocabularyTests {
    static let vocabulary = 262_144

    static let configurations: [(String, SamplingOptions)] = [
        ("temperature 1", SamplingOptions(temperature: 1)),
        ("top-k 40", SamplingOptions(temperature: 1, topK: 40)),
        ("top-k 10000", SamplingOptions(temperature: 0.7, topK: 10_000)),
        ("top-p 0.95", SamplingOptions(temperature: 1, topP: 0.95)),
        ("top-p 0.999", SamplingOptions(temperature: 1, topP: 0.999)),
        ("min-p 0.05", SamplingOptions(temperature: 1, minP: 0.05)),
        ("llama.cpp defaults", SamplingOptions(temperature: 0.8, topK: 40, topP: 0.95, minP: 0.05)),
        ("top-k 1000 + bias", SamplingOptions(temperature: 1, topK: 1000, logitBias: [3: 8, 5: -.infinity])),
        ("penalties + bias + top-p", SamplingOptions(temperature: 1.2, topP: 0.9, repetitionPenalty: 1.3,
                                                      frequencyPenalty: 0.4, presencePenalty: 0.2,
                                                      logitBias: [3: 5, 13: -.infinity])),
    ]

    @Test("the fast chain equals its slow twin on a 262,144-token vocabulary", arguments: SamplerVocabularyTests.configurations.indices)
    func matchesReference(_ index: Int) {
        let (name, options) = Self.configurations[index]
        var random = TestLogits(state: 17)
        let history = (0..<200).map { _ in Int32(random.uniform() * Double(Self.vocabulary)) } + [13, 13, 3]
        var broken = random.flat(count: Self.vocabulary)
        for (i, v) in [(100, Float.nan), (200, .infinity), (300, -.infinity)] { broken[i] = v }
        for logits in [random.peaked(count: Self.vocabulary), random.flat(count: Self.vocabulary), broken] {
            let sampler = Sampler(options: options)
            let fast = sampler.distribution(logits, history: history)
            let slow = referenceDistribution(logits, history: history, options: options)
            let missing = slow.keys.filter { fast[$0] == nil }.sorted()
            let extra = fast.keys.filter { slow[$0] == nil }.sorted()
            let difference = "\(name): \(fast.count) survivors vs \(slow.count); missing \(missing.prefix(5)), extra \(extra.prefix(5))"
            if options.topP == nil {
                #expect(missing.isEmpty && extra.isEmpty, "\(difference)")
            } else {
                // Top-p's cut is a sum of float probabilities (the engine's softmax), so it may
                // move by tokens of negligible mass against the Double reference.
                let mass = missing.reduce(0) { $0 + slow[$1]! } + extra.reduce(0) { $0 + fast[$1]! }
                #expect(mass < 1e-5, "\(difference)")
            }
            let worst = slow.compactMap { t, p in fast[t].map { abs($0 - p) } }.max() ?? 0
            #expect(worst < 1e-5, "\(name)")
        }
    }

    @Test("logprobs on a 262,144-token vocabulary equal a log-softmax in Double")
    func logprobsMatchReference() {
        var random = TestLogits(state: 29)
        let logits = random.peaked(count: Self.vocabulary)
        let top = logits.max()!
        let logSum = Double(top) + log(logits.reduce(0.0) { $0 + exp(Double($1 - top)) })
        let expected = logits.indices.sorted { logits[$0] > logits[$1] || (logits[$0] == logits[$1] && $0 < $1) }
            .prefix(20).map { (Int32($0), Double(logits[$0]) - logSum) }
        var sampler = Sampler(options: SamplingOptions(temperature: 1, seed: 4))
        let result = logits.withUnsafeBufferPointer { sampler.sampleWithLogprobs($0, history: [Int32](), top: 20) }
        #expect(result.top.map(\.token) == expected.map(\.0))
        for (got, want) in zip(result.top, expected) { #expect(abs(Double(got.logprob) - want.1) < 1e-4) }
        #expect(abs(Double(result.logprob) - (Double(logits[Int(result.token)]) - logSum)) < 1e-4)
    }

    @Test("timing on a 262,144-token vocabulary (printed, not asserted)")
    func timing() {
        var random = TestLogits(state: 23)
        let peaked = random.peaked(count: Self.vocabulary)
        let flat = random.flat(count: Self.vocabulary)
        let history = (0..<64).map { _ in Int32(random.uniform() * Double(Self.vocabulary)) }
        let clock = ContinuousClock()
        var lines: [String] = []
        // The fastest of 20 runs: other tests run in parallel, and the minimum is the least disturbed.
        func fastest(_ body: () -> Void) -> Duration {
            body()
            return (0..<20).map { _ in clock.measure(body) }.min()!
        }
        func row(_ name: String, _ shape: String, _ time: Duration) -> String {
            let microseconds = Double(time.components.seconds) * 1e6 + Double(time.components.attoseconds) * 1e-12
            return name.padding(toLength: 28, withPad: " ", startingAt: 0)
                + shape.padding(toLength: 8, withPad: " ", startingAt: 0)
                + String(format: "%8.0f µs", microseconds)
        }
        let cases = [("greedy", SamplingOptions()),
                     ("greedy + penalties", SamplingOptions(repetitionPenalty: 1.1, presencePenalty: 0.5))]
            + Self.configurations
        for (name, options) in cases {
            for (shape, logits) in [("peaked", peaked), ("flat", flat)] {
                var sampler = Sampler(options: { var o = options; o.seed = 1; return o }())
                lines.append(row(name, shape, fastest { _ = sampler.sample(logits, history: history) }))
            }
        }
        var sampler = Sampler(options: SamplingOptions(temperature: 0.8, topK: 40, seed: 1))
        lines.append(row("top-k 40 + logprobs top 5", "peaked", fastest {
            _ = peaked.withUnsafeBufferPointer { sampler.sampleWithLogprobs($0, history: history, top: 5) }
        }))
        print("Sampler, one token from 262,144 logits:\n" + lines.joined(separator: "\n"))
    }
}

private let samplingModel = Result { try TransformerModel(path: TestFiles.model(TestFiles.smolLM2), threads: 2) }

@Suite("Sampling SmolLM2")
struct SamplerModelTests {
    private func generate(_ model: TransformerModel, _ prompt: String, count: Int, options: SamplingOptions) throws -> [Int32] {
        let tokens = model.tokenizer.encode(prompt, addSpecial: true, parseSpecial: false)
        let state = try model.makeSequence(contextLength: 256)
        var out: [Int32] = []
        try model.generate(prompt: tokens, options: GenerationOptions(sampling: options, maxTokens: count), sequence: state) {
            if let token = $0.token { out.append(token) }
            return true
        }
        return out
    }

    @Test("the full chain repeats itself for a seed, on one thread or three")
    func seededAcrossThreadCounts() throws {
        let two = try samplingModel.get()
        let one = try TransformerModel(path: TestFiles.model(TestFiles.smolLM2), threads: 1)
        let three = try TransformerModel(path: TestFiles.model(TestFiles.smolLM2), threads: 3)
        var options = SamplingOptions(temperature: 0.9, topK: 40, topP: 0.95, minP: 0.05, repetitionPenalty: 1.1,
                                      presencePenalty: 0.5, seed: 1234)
        let prompt = "My favourite food is"
        let reference = try generate(two, prompt, count: 24, options: options)
        #expect(try generate(two, prompt, count: 24, options: options) == reference)
        #expect(try generate(one, prompt, count: 24, options: options) == reference)
        #expect(try generate(three, prompt, count: 24, options: options) == reference)
        options.seed = 1235
        #expect(try generate(two, prompt, count: 24, options: options) != reference)
    }

    @Test("generation hands the history to the penalties: a large presence penalty forbids repeats")
    func penaltiesSeeTheHistory() throws {
        let model = try samplingModel.get()
        let prompt = "1, 2, 1, 2, 1, 2, 1, 2,"
        let plain = try generate(model, prompt, count: 16, options: .greedy)
        #expect(Set(plain).count < plain.count, "the plain continuation repeats itself: \(plain)")
        let penalised = try generate(model, prompt, count: 16, options: SamplingOptions(presencePenalty: 100))
        let promptTokens = Set(model.tokenizer.encode(prompt, addSpecial: true, parseSpecial: false))
        #expect(Set(penalised).count == penalised.count, "\(penalised)")
        #expect(promptTokens.isDisjoint(with: penalised))
    }
}
