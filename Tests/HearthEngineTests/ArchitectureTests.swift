import Foundation
import Hearth
import HearthTestSupport
import Synchronization
import Testing

/// llama.cpp's greedy tokens and top log-probabilities on one tiny model
/// (scripts/make-tiny-model-fixtures.py).
private struct TinyFixture: Decodable, Sendable, CustomTestStringConvertible {
    struct Case: Decodable, Sendable {
        struct Candidate: Decodable, Sendable {
            let id: Int32
            let logprob: Float
        }
        let prompt: String
        let prompt_ids: [Int32]
        let ids: [Int32]
        /// Null where llama-server did not report a step.
        let top_logprobs: [[Candidate]?]
    }
    let model: String
    let sha256: String
    let cases: [Case]
    var testDescription: String { model }
}

private func fixtures(_ name: String = "tiny-models") throws -> [TinyFixture] {
    let folder = TestFiles.packageRoot.appendingPathComponent("Tests/Fixtures/\(name)")
    let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".json") }.sorted()
    return try names.map { try JSONDecoder().decode(TinyFixture.self, from: Data(contentsOf: folder.appendingPathComponent($0))) }
}

/// The tiny models, written once per test run.
private let written = Mutex<[String: String]>([:])

private func modelPath(_ name: String, sha256: String) throws -> String {
    if let path = written.withLock({ $0[name] }) { return path }
    let spec = try #require((TinyModel.catalog + TinyModel.heldBack).first { $0.name == name },
                            "\(name) is not in TinyModel.catalog or TinyModel.heldBack")
    let bytes = try spec.data()
    #expect(TinyModel.sha256(bytes) == sha256,
            "\(name): the model written differs from the one llama.cpp ran; rerun scripts/make-tiny-model-fixtures.py")
    let path = try TemporaryDirectory.shared("tiny-models").appendingPathComponent("\(name).gguf").path
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    written.withLock { $0[name] = path }
    return path
}

/// Greedy tokens for as many steps as `reference` has, with each step's top 5 log-probabilities,
/// from a fresh sequence of 1024 positions.
private func greedy(_ model: TransformerModel, _ reference: TinyFixture.Case) throws -> (ids: [Int32], tops: [[TokenLogprob]]) {
    var options = GenerationOptions(sampling: .greedy, maxTokens: reference.ids.count)
    options.logprobs = true
    options.topLogprobs = 5
    var ids: [Int32] = [], tops: [[TokenLogprob]] = []
    let sequence = try model.makeSequence(contextLength: 1024)
    try model.generate(prompt: reference.prompt_ids, options: options, sequence: sequence) { chunk in
        if let token = chunk.token {
            ids.append(token)
            tops.append(chunk.topLogprobs)
        }
        return true
    }
    return (ids, tops)
}

@Suite("Architectures against llama.cpp on tiny models", .serialized)
struct ArchitectureTests {
    @Test("greedy tokens equal llama.cpp's and top-5 log-probabilities agree within 1e-3", arguments: try fixtures())
    fileprivate func tinyModelMatchesLlamaCpp(_ fixture: TinyFixture) throws {
        let model = try TransformerModel(path: modelPath(fixture.model, sha256: fixture.sha256), threads: 2)
        for (index, reference) in fixture.cases.enumerated() {
            #expect(model.tokenizer.encode(reference.prompt, addSpecial: true, parseSpecial: false) == reference.prompt_ids,
                    "\(fixture.model) prompt \(index): tokens")
            let (ids, tops) = try greedy(model, reference)
            // llama.cpp's count includes an end-of-generation token, which Hearth reports as the finish.
            #expect(Array(reference.ids.prefix(ids.count)) == ids && reference.ids.count - ids.count <= 1
                        && (ids.count == reference.ids.count || model.tokenizer.endOfGenerationTokens.contains(reference.ids[ids.count])),
                    "\(fixture.model) prompt \(index): tokens \(ids) against \(reference.ids)")
            for (step, expected) in reference.top_logprobs.enumerated() where step < tops.count {
                guard let expected else { continue }
                for candidate in expected {
                    let got: Float = tops[step].first { $0.token == candidate.id }?.logprob ?? -.infinity
                    let close = abs(got - candidate.logprob) <= 1e-3
                    #expect(close, "\(fixture.model) prompt \(index) step \(step): token \(candidate.id) \(got) against \(candidate.logprob)")
                }
            }
        }
    }

    @Test("eight sequences in shared passes give each the logits it gets alone, bit for bit",
          arguments: try fixtures() + fixtures("tiny-models-avx2"))
    fileprivate func tinyModelBatchedEqualsAlone(_ fixture: TinyFixture) throws {
        let model = try TransformerModel(path: modelPath(fixture.model, sha256: fixture.sha256), threads: 2)
        // The fixture's prompts and three shorter ones beside them, each followed by three of its
        // reference tokens one pass at a time.
        var prompts = fixture.cases.map(\.prompt_ids)
        prompts += fixture.cases.prefix(3).enumerated().map { i, c in Array(c.prompt_ids.prefix(2 + 3 * i)) }
        let followers = prompts.indices.map { i in Array(fixture.cases[i % fixture.cases.count].ids.prefix(3)) }
        var alone: [[[UInt32]]] = []
        for (prompt, next) in zip(prompts, followers) {
            let sequence = try model.makeSequence(contextLength: 256)
            var steps = [try model.evaluate(prompt, sequence: sequence).bits]
            for token in next { steps.append(try model.evaluate([token], sequence: sequence).bits) }
            alone.append(steps)
        }
        let sequences = try prompts.map { _ in try model.makeSequence(contextLength: 256) }
        var first = Batch()
        for (prompt, sequence) in zip(prompts, sequences) { try first.add(prompt, to: sequence) }
        try model.evaluate(first)
        for (index, sequence) in sequences.enumerated() {
            #expect(sequence.logits.bits == alone[index][0], "\(fixture.model) sequence \(index): the prompts' pass")
        }
        for step in 0..<3 {
            var batch = Batch()
            for (index, sequence) in sequences.enumerated() { try batch.add([followers[index][step]], to: sequence) }
            try model.evaluate(batch)
            for (index, sequence) in sequences.enumerated() {
                #expect(sequence.logits.bits == alone[index][step + 1], "\(fixture.model) sequence \(index): step \(step + 1)")
            }
        }
    }

    /// The held-back models (other seeds, F16 attention and Q8_0, Q4_K_M and IQ4_XS mixes of every
    /// family) against llama.cpp built for AVX2, every step of 32: greedy tokens equal until a step
    /// where llama.cpp's top two are within 1e-4 (a tie that any change of summation order may
    /// break), and the top-5 log-probabilities within 1e-3 up to and including that step.
    @Test("held-back models: greedy tokens equal llama.cpp's (AVX2) but at near-ties, top-5 log-probabilities within 1e-3",
          arguments: try fixtures("tiny-models-avx2"))
    fileprivate func heldBackModelMatchesLlamaCpp(_ fixture: TinyFixture) throws {
        let model = try TransformerModel(path: modelPath(fixture.model, sha256: fixture.sha256), threads: 2)
        for (index, reference) in fixture.cases.enumerated() {
            let (ids, tops) = try greedy(model, reference)
            let parting = zip(ids, reference.ids).enumerated().first { $0.element.0 != $0.element.1 }?.offset
            let compared = parting.map { $0 + 1 } ?? min(ids.count, reference.top_logprobs.count)
            for step in 0..<compared {
                guard let expected = reference.top_logprobs[step] else { continue }
                for candidate in expected {
                    let got: Float = tops[step].first { $0.token == candidate.id }?.logprob ?? -.infinity
                    #expect(abs(got - candidate.logprob) <= 1e-3,
                            "\(fixture.model) prompt \(index) step \(step): token \(candidate.id) \(got) against \(candidate.logprob)")
                }
            }
            if let parting {
                let expected = try #require(reference.top_logprobs[parting], "\(fixture.model) prompt \(index): no logprobs where the tokens part")
                #expect(expected.count >= 2 && abs(expected[0].logprob - expected[1].logprob) <= 1e-4
                            && expected.prefix(2).contains { $0.id == ids[parting] },
                        "\(fixture.model) prompt \(index): tokens part at step \(parting) (\(ids[parting]) against \(reference.ids[parting])) without a near-tie: \(expected.prefix(2))")
            } else {
                // llama.cpp's count includes an end-of-generation token, which Hearth reports as the finish.
                #expect(reference.ids.count - ids.count <= 1, "\(fixture.model) prompt \(index): \(ids.count) tokens against \(reference.ids.count)")
            }
        }
    }
}
