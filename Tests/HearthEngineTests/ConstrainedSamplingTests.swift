import Foundation
import Hearth
import Testing

/// Allows the tokens a rule picks, and counts the questions.
private final class RuleConstraint: TokenConstraint {
    let rule: (Int32) -> Bool
    var questions = 0
    var marks = 0

    init(_ rule: @escaping (Int32) -> Bool) { self.rule = rule }

    func allows(_ token: Int32) -> Bool {
        questions += 1
        return rule(token)
    }

    func markAllowed(in mask: UnsafeMutableBufferPointer<UInt64>, vocabularySize: Int) {
        marks += 1
        for t in 0..<vocabularySize where rule(Int32(t)) { mask[t >> 6] |= 1 << UInt64(t & 63) }
    }
}

/// Seeded logits shaped like a model's: noise with a few tokens far above it.
private func peakedLogits(count: Int, seed: UInt64) -> [Float] {
    var state = seed
    func uniform() -> Double {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return (Double(state >> 11) + 0.5) * 0x1p-53
    }
    var x = (0..<count).map { _ in Float((-2 * log(uniform())).squareRoot() * cos(2 * Double.pi * uniform())) * 2 }
    for i in 0..<12 { x[(i * 7919 + 13) % count] = 10 + Float(i % 5) }
    return x
}

@Suite struct ConstrainedSamplingTests {
    static let vocabulary = 49_152

    static let configurations: [(String, SamplingOptions)] = [
        ("greedy", SamplingOptions()),
        ("top-k 1", SamplingOptions(temperature: 1, topK: 1)),
        ("top-k 40", SamplingOptions(temperature: 1, topK: 40)),
        ("balanced", GenerationOptions.balancedSampling),
        ("creative + penalties", SamplingOptions(temperature: 0.9, topK: 100, topP: 0.95, minP: 0.05, presencePenalty: 0.3)),
        ("top-k 1000", SamplingOptions(temperature: 0.7, topK: 1000)),
        ("temperature 1", SamplingOptions(temperature: 1)),
        ("top-p 0.9", SamplingOptions(temperature: 0.8, topP: 0.9)),
        ("min-p 0.05 + bias", SamplingOptions(temperature: 1, minP: 0.05, logitBias: [13: 3, 7932: -.infinity])),
    ]

    static let rules: [(String, @Sendable (Int32) -> Bool)] = [
        ("every third token", { $0 % 3 == 0 }),
        ("the peaks refused", { ![13, 7932, 15851, 23770, 31689].contains($0) }),
        ("one token in 500", { $0 % 500 == 7 }),
        ("everything", { _ in true }),
    ]

    @Test("a constraint gives the distribution of the logits with refused tokens at -infinity, exactly",
          arguments: configurations.indices, rules.indices)
    func equalsMaskedLogits(_ configuration: Int, _ rule: Int) {
        let (name, base) = Self.configurations[configuration]
        let (ruleName, allows) = Self.rules[rule]
        let history: [Int32] = [13, 13, 42, 7932, 100]
        for seed in [1, 2, 3] as [UInt64] {
            let logits = peakedLogits(count: Self.vocabulary, seed: seed)
            var options = base
            options.seed = seed
            // The slow twin: refused tokens banned through the logit bias, which runs at the same
            // point of the chain as the constraint.
            var banned = options
            for t in 0..<Int32(Self.vocabulary) where !allows(t) { banned.logitBias[t] = -.infinity }
            let constraint = RuleConstraint(allows)
            let sampler = Sampler(options: options)
            let fast = logits.withUnsafeBufferPointer { sampler.distribution($0, history: history, constraint: constraint) }
            let slow = logits.withUnsafeBufferPointer { Sampler(options: banned).distribution($0, history: history) }
            // Exact, but where top-k has no more allowed tokens than k to choose from: the chain
            // then sums over the whole vocabulary, the constraint over the kept tokens only.
            let few = (base.topK ?? 0) > 0 && (0..<Int32(Self.vocabulary)).filter(allows).count <= base.topK!
            if few {
                #expect(fast.map(\.token) == slow.map(\.token), "\(name), \(ruleName), seed \(seed)")
                for (a, b) in zip(fast, slow) { #expect(abs(a.probability - b.probability) < 1e-6) }
            } else {
                #expect(fast == slow, "\(name), \(ruleName), seed \(seed)")
            }
            var a = Sampler(options: options), b = Sampler(options: banned)
            for _ in 0..<20 {
                let x = logits.withUnsafeBufferPointer { a.sample($0, history: history, constraint: constraint) }
                let y = logits.withUnsafeBufferPointer { b.sample($0, history: history) }
                #expect(x == y, "\(name), \(ruleName), seed \(seed)")
            }
        }
    }

    @Test("greedy and top-k ask about the best k + 16 candidates, and mark the whole vocabulary only when too few are allowed")
    func asksLittle() {
        let logits = peakedLogits(count: Self.vocabulary, seed: 9)
        func sample(_ options: SamplingOptions, _ constraint: RuleConstraint) -> Int32? {
            var sampler = Sampler(options: options)
            return logits.withUnsafeBufferPointer { sampler.sample($0, history: [Int32](), constraint: constraint) }
        }
        let greedy = RuleConstraint { _ in true }
        _ = sample(SamplingOptions(), greedy)
        #expect(greedy.questions == 1 && greedy.marks == 0)
        let mostly = RuleConstraint { $0 % 10 != 0 }
        _ = sample(GenerationOptions.balancedSampling, mostly)
        #expect(mostly.questions <= 56 && mostly.marks == 0, "\(mostly.questions) questions")
        let half = RuleConstraint { $0 % 2 == 0 }
        _ = sample(GenerationOptions.balancedSampling, half)
        #expect(half.questions == 56 && half.marks == 1, "\(half.questions) questions")
        // Without top-k every allowed token counts, so the whole vocabulary is marked at once.
        let whole = RuleConstraint { $0 % 2 == 0 }
        _ = sample(SamplingOptions(temperature: 1, topP: 0.9), whole)
        #expect(whole.questions == 0 && whole.marks == 1)
        let rare = RuleConstraint { $0 == 40_000 }
        #expect(sample(SamplingOptions(), rare) == 40_000)
        #expect(rare.questions == 17 && rare.marks == 1)
    }

    @Test("nothing allowed: nil; allowed tokens all banned by the bias: the allowed one with the best raw logit")
    func edges() {
        let logits: [Float] = [2, 1, 0, -1, 3]
        for options in [SamplingOptions(), SamplingOptions(temperature: 1, topK: 2), SamplingOptions(temperature: 1)] {
            var sampler = Sampler(options: options)
            let none = logits.withUnsafeBufferPointer {
                sampler.sample($0, history: [Int32](), constraint: RuleConstraint { _ in false })
            }
            let nothing = logits.withUnsafeBufferPointer {
                sampler.distribution($0, history: [Int32](), constraint: RuleConstraint { _ in false })
            }
            #expect(none == nil && nothing.isEmpty)
            var banning = options
            banning.logitBias = [0: -.infinity, 1: -.infinity]
            sampler = Sampler(options: banning)
            let token = logits.withUnsafeBufferPointer {
                sampler.sample($0, history: [Int32](), constraint: RuleConstraint { $0 < 2 })
            }
            #expect(token == 0)
            sampler = Sampler(options: options)
            let odd = logits.withUnsafeBufferPointer {
                sampler.sample($0, history: [Int32](), constraint: RuleConstraint { $0 == 1 || $0 == 3 })
            }
            #expect(options.temperature == 0 ? odd == 1 : odd == 1 || odd == 3)
        }
    }
}
