import Foundation
import Hearth
import HearthTestSupport
import Testing

private let jsonModel = Result { try TransformerModel(path: TestFiles.model(TestFiles.smolLM2), threads: 2) }

private struct Answer {
    var text = ""
    var tokens: [Int32] = []
    var finish: FinishReason?
    var statistics: GenerationStatistics?
    var logprobs: [Float] = []

    /// Foundation's reading of the text as one JSON object, or nil.
    var object: [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
    }
}

private func chatPrompt(_ model: TransformerModel, _ question: String) throws -> [Int32] {
    let text = try ChatFormat(gguf: model.gguf).render([ChatMessage(role: .user, content: question)])
    return model.tokenizer.encode(text, addSpecial: true, parseSpecial: true)
}

private func answer(_ model: TransformerModel, _ question: String, _ options: GenerationOptions,
                    contextLength: Int = 1024) throws -> Answer {
    let state = try model.makeSequence(contextLength: contextLength)
    var answer = Answer()
    try model.generate(prompt: try chatPrompt(model, question), options: options, sequence: state) { chunk in
        answer.text += chunk.text
        if let token = chunk.token { answer.tokens.append(token) }
        if let logprob = chunk.logprob { answer.logprobs.append(logprob) }
        answer.finish = chunk.finishReason ?? answer.finish
        answer.statistics = chunk.statistics ?? answer.statistics
        return true
    }
    return answer
}

private func json(_ base: GenerationOptions, seed: UInt64? = nil, maxTokens: Int? = 400) -> GenerationOptions {
    var options = base
    options.format = .json
    options.maxTokens = maxTokens
    if let seed { options.seed = seed }
    return options
}

/// A question and the options to answer it with.
struct ProseCase: CustomTestStringConvertible, Sendable {
    let question: String
    let name: String
    let options: GenerationOptions
    init(_ question: String, _ name: String, _ options: GenerationOptions) {
        self.question = question
        self.name = name
        self.options = options
    }
    var testDescription: String { "\(question) (\(name))" }
}

@Suite("JSON mode with SmolLM2")
struct JSONModeTests {
    static let person = "Give me a JSON object with the name and age of a fictional person."

    @Test("the constraint's whole-vocabulary mask equals asking token by token, and both equal the tokenizer's bytes run through the recognizer")
    func maskMatchesTokens() throws {
        let model = try jsonModel.get()
        let tokenizer = model.tokenizer
        let n = tokenizer.vocabularySize
        let ends = tokenizer.endOfGenerationTokens
        let prefixes = ["", "  ", "{", "{\"", "{\"na", "{\"name\"", "{\"name\":", "{\"name\": \"Al", "{\"name\": \"Al\\",
                        "{\"a\": 1", "{\"a\": -", "{\"a\": 1.", "{\"a\": [", "{\"a\": [{\"b\": [1, ", "{\"a\": t",
                        "{\"a\": \"\\u00", "{}", "{\"a\": [[[]]]}"].map { Array($0.utf8) }
            + [Array("{\"a\": \"".utf8) + [0xE6], Array("{\"a\": \"".utf8) + [0xF0, 0x9F]]
        var words = [UInt64](repeating: 0, count: (n + 63) / 64)
        for prefix in prefixes {
            var recognizer = JSONRecognizer()
            let shown = String(decoding: prefix, as: UTF8.self).debugDescription
            let accepted = recognizer.consume(prefix)
            #expect(accepted, "\(shown)")
            let constraint = model.jsonConstraint(recognizer)
            // Twice: the second answer comes from the cache.
            for _ in 0..<2 {
                for i in words.indices { words[i] = 0 }
                words.withUnsafeMutableBufferPointer { constraint.markAllowed(in: $0, vocabularySize: n) }
                var allowed = 0, mismatches: [Int] = []
                for t in 0..<n {
                    let marked = words[t >> 6] & (1 << UInt64(t & 63)) != 0
                    let asked = constraint.allows(Int32(t))
                    let expected: Bool
                    if ends.contains(Int32(t)) {
                        expected = recognizer.isComplete
                    } else if let type = tokenizer.tokenType(Int32(t)), [.control, .unknown, .unused].contains(type) {
                        expected = false
                    } else {
                        let bytes = tokenizer.tokenBytes(Int32(t))
                        var copy = recognizer
                        expected = !bytes.isEmpty && copy.consume(bytes)
                    }
                    if marked != expected || asked != expected { mismatches.append(t) }
                    if expected { allowed += 1 }
                }
                #expect(mismatches.isEmpty, "after \(shown): tokens \(mismatches.prefix(10))")
                #expect(allowed > 0, "after \(shown)")
            }
        }
        // The chat template's control tokens never appear inside the text, even inside a string.
        var inString = JSONRecognizer()
        inString.consume(Array("{\"a\": \"".utf8))
        let constraint = model.jsonConstraint(inString)
        let controls = (0..<Int32(n)).filter { tokenizer.tokenType($0) == .control }
        #expect(!controls.isEmpty)
        #expect(controls.allSatisfy { !constraint.allows($0) })
    }

    @Test("greedy: a fictional person as one JSON object, ending with stop")
    func greedyPerson() throws {
        let model = try jsonModel.get()
        let reply = try answer(model, Self.person, json(.greedy))
        #expect(reply.finish == .stop)
        let object = try #require(reply.object, "not one JSON object: \(reply.text)")
        #expect(!object.isEmpty, "\(reply.text)")
        print("greedy JSON: \(reply.text)")
        // The same request is the same answer.
        #expect(try answer(model, Self.person, json(.greedy)).text == reply.text)
    }

    @Test("balanced preset with a seed: one JSON object, repeatable", arguments: [1, 7, 42] as [UInt64])
    func seededPerson(_ seed: UInt64) throws {
        let model = try jsonModel.get()
        let reply = try answer(model, Self.person, json(.balanced, seed: seed))
        #expect(reply.finish == .stop)
        #expect(reply.object != nil, "seed \(seed): \(reply.text)")
        #expect(try answer(model, Self.person, json(.balanced, seed: seed)).tokens == reply.tokens)
    }

    @Test("a question answered in prose still gets one JSON object", arguments: [
        ProseCase("What is the capital of France?", "balanced, seed 1", json(.balanced, seed: 1)),
        ProseCase("What is the capital of France?", "creative, seed 1", json(.creative, seed: 1)),
        ProseCase("Hi!", "greedy", json(.greedy)),
        ProseCase("Hi!", "temperature 0.7, top-p 0.9, seed 1",
                  json(GenerationOptions(sampling: SamplingOptions(temperature: 0.7, topP: 0.9)), seed: 1)),
        ProseCase("Write a short poem about the sea.", "creative, seed 1", json(.creative, seed: 1)),
        // Not asked for JSON, SmolLM2 often answers with an empty object: valid, if unhelpful.
        ProseCase("Why is the sky blue?", "greedy", json(.greedy)),
    ])
    func proseQuestion(_ prose: ProseCase) throws {
        let model = try jsonModel.get()
        var text = prose.options
        text.format = .text
        text.maxTokens = 40
        let plain = try answer(model, prose.question, text)
        #expect(plain.object == nil && !plain.text.hasPrefix("{"), "the unconstrained answer is prose: \(plain.text)")
        let reply = try answer(model, prose.question, prose.options)
        #expect(reply.finish == .stop, "\(reply.text)")
        #expect(reply.object != nil, "not one JSON object: \(reply.text)")
    }

    @Test("a model that runs on inside the object is cut by maxTokens, and what it wrote is still a beginning of one")
    func runsOn() throws {
        let model = try jsonModel.get()
        // Greedy SmolLM2 repeats one key and value for as long as it is let.
        let reply = try answer(model, "Write a short poem about the sea.", json(.greedy, maxTokens: 120))
        #expect(reply.finish == .length && reply.tokens.count == 120)
        let bytes = Array(reply.text.utf8)
        #expect(JSONRecognizer.isPrefix(bytes) && !JSONRecognizer.isObject(bytes), "\(reply.text)")
    }

    @Test("format .text is the answer it always was")
    func textUnchanged() throws {
        let model = try jsonModel.get()
        var options = GenerationOptions.greedy
        options.maxTokens = 40
        let before = try answer(model, Self.person, options)
        options.format = .text
        #expect(try answer(model, Self.person, options).tokens == before.tokens)
        #expect(GenerationOptions.greedy.format == .text && GenerationOptions().format == .text)
    }

    @Test("maxTokens cuts the object short: finish reason length, and the text is still a beginning of an object")
    func cutShort() throws {
        let model = try jsonModel.get()
        for limit in [1, 5, 12] {
            let reply = try answer(model, Self.person, json(.greedy, maxTokens: limit))
            #expect(reply.finish == .length)
            #expect(reply.tokens.count == limit)
            #expect(JSONRecognizer.isPrefix(Array(reply.text.utf8)) && !JSONRecognizer.isObject(Array(reply.text.utf8)),
                    "\(reply.text)")
        }
        // A context too short for the object ends the same way.
        let prompt = try chatPrompt(model, Self.person)
        let short = try answer(model, Self.person, json(.greedy, maxTokens: nil), contextLength: prompt.count + 6)
        #expect(short.finish == .length && short.tokens.count == 6)
    }

    @Test("logprobs and stop sequences still work; text held back for a stop sequence is flushed when the object completes")
    func logprobsAndStops() throws {
        let model = try jsonModel.get()
        var options = json(.greedy)
        options.logprobs = true
        options.topLogprobs = 3
        let reply = try answer(model, Self.person, options)
        #expect(reply.finish == .stop && reply.object != nil)
        #expect(reply.logprobs.count == reply.tokens.count && reply.logprobs.allSatisfy { $0 <= 0 })
        // `}` could begin this stop sequence, so it is held back until the object completes.
        options.logprobs = false
        options.stop = ["}\n\n"]
        let held = try answer(model, Self.person, options)
        #expect(held.text == reply.text && held.finish == .stop)
        // A stop sequence inside the object still ends the answer there.
        let key = try #require(reply.object?.keys.sorted().first)
        options.stop = ["\"\(key)\""]
        let stopped = try answer(model, Self.person, options)
        #expect(stopped.finish == .stop && stopped.object == nil)
    }

    @Test("Codable: a missing format decodes as text, and format round-trips")
    func codable() throws {
        var options = GenerationOptions.balanced
        options.format = .json
        let data = try JSONEncoder().encode(options)
        #expect(try JSONDecoder().decode(GenerationOptions.self, from: data) == options)
        var object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["format"] as? String == "json")
        object["format"] = nil
        let old = try JSONSerialization.data(withJSONObject: object)
        #expect(try JSONDecoder().decode(GenerationOptions.self, from: old) == .balanced)
        for preset in GenerationOptions.presets {
            let round = try JSONDecoder().decode(GenerationOptions.self, from: JSONEncoder().encode(preset.options))
            #expect(round == preset.options && round.format == .text)
        }
        object["stop"] = nil
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(GenerationOptions.self, from: try JSONSerialization.data(withJSONObject: object))
        }
    }

    @Test("timing: tokens per second with and without JSON mode, and the sampler's share (printed, not asserted)")
    func timing() throws {
        let model = try jsonModel.get()
        var lines: [String] = []
        for (name, base) in [("greedy", GenerationOptions.greedy), ("balanced", json(.balanced, seed: 1))] {
            // As many tokens in text as the JSON answer has, so both runs pay for the same
            // context lengths; the best of five, as other processes share the machine.
            let jsonOptions = json(base)
            let length = try answer(model, Self.person, jsonOptions).tokens.count
            var textOptions = base
            textOptions.format = .text
            textOptions.maxTokens = length
            // Taking turns, so that a burst of other work slows both alike.
            var speeds: [[Double]] = [[], []]
            for _ in 0..<5 {
                for (i, options) in [textOptions, jsonOptions].enumerated() {
                    speeds[i].append(try answer(model, Self.person, options).statistics?.tokensPerSecond ?? 0)
                }
            }
            for (i, format) in ["text", "json"].enumerated() {
                lines.append("\(name) \(format), \(length) tokens: \(String(format: "%.1f", speeds[i].max()!)) tok/s (runs: "
                             + speeds[i].map { String(format: "%.1f", $0) }.joined(separator: ", ") + ")")
            }
        }
        // The sampler alone on the logits of each step of a JSON answer, with and without the
        // constraint: the overhead JSON mode adds to a token.
        let prompt = try chatPrompt(model, Self.person)
        let state = try model.makeSequence(contextLength: 1024)
        var logits = Array(try model.evaluate(prompt, sequence: state))
        var recognizer = JSONRecognizer()
        var steps: [([Float], JSONRecognizer)] = []
        var picker = Sampler(options: SamplingOptions())
        while !recognizer.isComplete && steps.count < 200 {
            steps.append((logits, recognizer))
            let constraint = model.jsonConstraint(recognizer)
            let picked = logits.withUnsafeBufferPointer { picker.sample($0, history: [Int32](), constraint: constraint) }
            let token = try #require(picked)
            let consumed = recognizer.consume(model.tokenizer.tokenBytes(token))
            #expect(consumed)
            logits = Array(try model.evaluate([token], sequence: state))
        }
        let clock = ContinuousClock()
        for (name, sampling) in [("greedy", SamplingOptions()), ("balanced", GenerationOptions.balancedSampling),
                                 ("temperature 0.8 + top-p 0.95", SamplingOptions(temperature: 0.8, topP: 0.95))] {
            var constraint = model.jsonConstraint()
            func perToken(_ constrained: Bool) -> Double {
                var sampler = Sampler(options: { var s = sampling; s.seed = 1; return s }())
                let time = (0..<3).map { _ in
                    clock.measure {
                        for (values, state) in steps {
                            constraint.recognizer = state
                            _ = values.withUnsafeBufferPointer {
                                constrained ? sampler.sample($0, history: [Int32](), constraint: constraint)
                                            : sampler.sample($0, history: [Int32]())
                            }
                        }
                    }
                }.min()!
                return (Double(time.components.seconds) * 1e6 + Double(time.components.attoseconds) * 1e-12) / Double(steps.count)
            }
            let plain = perToken(false), constrained = perToken(true)
            lines.append("sampler, \(name): \(String(format: "%.0f", plain)) µs a token, "
                         + "\(String(format: "%.0f", constrained)) µs with the JSON constraint (\(steps.count) steps)")
        }
        // What a state costs the first time it needs the whole vocabulary marked (later times
        // come from the model's cache), on a freshly loaded model whose token table is built first.
        let fresh = try TransformerModel(path: TestFiles.model(TestFiles.smolLM2), threads: 2)
        let n = fresh.tokenizer.vocabularySize
        let table = clock.measure { _ = fresh.jsonConstraint() }
        lines.append("token table: \(table)")
        var words = [UInt64](repeating: 0, count: (n + 63) / 64)
        for prefix in ["", "{", "{\"name\": \"Al", "{\"age\": 4", "{\"a\": 1,\n  "] {
            var state = JSONRecognizer()
            state.consume(Array(prefix.utf8))
            let constraint = fresh.jsonConstraint(state)
            let first = clock.measure { words.withUnsafeMutableBufferPointer { constraint.markAllowed(in: $0, vocabularySize: n) } }
            let again = clock.measure { words.withUnsafeMutableBufferPointer { constraint.markAllowed(in: $0, vocabularySize: n) } }
            lines.append("marking the vocabulary after \(prefix.debugDescription): \(first), then \(again) from the cache")
        }
        print("JSON mode timing (SmolLM2-135M Q4_1, 2 threads):\n" + lines.joined(separator: "\n"))
    }
}
