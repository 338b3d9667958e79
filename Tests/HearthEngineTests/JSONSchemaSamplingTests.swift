import Foundation
import Hearth
import HearthTestSupport
import Synchronization
import Testing

private let schemaModel = Result { try TransformerModel(path: TestFiles.model(TestFiles.smolLM2), threads: 2) }

/// One fixture schema with the question SmolLM2 answers under it and a token budget its
/// answers fit in (Tests/Fixtures/schemas/sampling.json).
struct SchemaSamplingCase: Sendable {
    var name: String
    var schema: JSONValue
    var grammar: Grammar
    var prompt: [Int32]
    var maxTokens: Int

    static func all(_ model: TransformerModel) throws -> [SchemaSamplingCase] {
        let plan = try JSONValue(parsing: try JSONSchemaFixtures.text("sampling.json"))
        let only = ProcessInfo.processInfo.environment["HEARTH_SCHEMA_ONLY"].map { Set($0.split(separator: ",").map(String.init)) }
        let format = try ChatFormat(gguf: model.gguf)
        return try JSONSchemaFixtures.names.filter { only?.contains($0) ?? true }.map { name in
            guard let entry = plan[name], let question = entry["prompt"]?.stringValue, let budget = entry["maxTokens"]?.numberValue else {
                throw TestFiles.Missing(description: "sampling.json has no prompt and maxTokens for \(name)")
            }
            let schema = try JSONSchemaFixtures.schema(name)
            // The schema in the prompt tells the model what the values mean; the grammar holds the form.
            let messages = [
                ChatMessage(role: .system, content: "You answer with JSON only, following this JSON schema: \(schema.jsonText)"),
                ChatMessage(role: .user, content: question),
            ]
            let prompt = model.tokenizer.encode(try format.render(messages), addSpecial: true, parseSpecial: true)
            return SchemaSamplingCase(name: name, schema: schema, grammar: try Grammar(jsonSchema: schema), prompt: prompt, maxTokens: Int(budget))
        }
    }
}

/// One sampled answer.
struct SchemaAnswer: Sendable {
    var text = ""
    var tokens = 0
    var finish: FinishReason?
    var error: String?
    /// The schema's program's mask statistics when the answer ended (programs are shared by
    /// a schema's answers, so the last to end has the totals).
    var masks = GrammarProgram.MaskStatistics()
}

/// Runs `seeds` answers (seeds 1...seeds, temperature 1 over the whole vocabulary) for every
/// case through one BatchedGenerator: `running` generations share each pass, on a pool of as
/// many sequences that jobs take in turn.
func sampleSchemas(_ model: TransformerModel, _ cases: [SchemaSamplingCase], seeds: Int, running: Int) async throws -> [[SchemaAnswer]] {
    let generator = try BatchedGenerator(model: model, maxRunning: running)
    let pool = try (0..<running).map { _ in try model.makeSequence(contextLength: 2048) }
    let answers = Mutex([[SchemaAnswer]](repeating: [SchemaAnswer](repeating: SchemaAnswer(), count: seeds), count: cases.count))
    let (ended, continuation) = AsyncStream.makeStream(of: Void.self)
    var job = 0
    for (c, item) in cases.enumerated() {
        for seed in 1...seeds {
            var options = GenerationOptions(sampling: SamplingOptions(temperature: 1, topK: 0, topP: 1, minP: 0, seed: UInt64(seed)),
                                            maxTokens: item.maxTokens)
            options.grammar = item.grammar
            generator.submit(prompt: item.prompt, options: options, sequence: pool[job % running], onChunk: { chunk in
                answers.withLock { a in
                    a[c][seed - 1].text += chunk.text
                    if chunk.token != nil { a[c][seed - 1].tokens += 1 }
                    if let finish = chunk.finishReason { a[c][seed - 1].finish = finish }
                }
                return true
            }, onEnd: { error in
                // Read now: the model keeps the programs of its 16 latest grammars only.
                let masks = model.grammarProgram(item.grammar).statistics
                answers.withLock {
                    if let error { $0[c][seed - 1].error = "\(error)" }
                    $0[c][seed - 1].masks = masks
                }
                continuation.yield()
            })
            job += 1
        }
    }
    var count = 0
    for await _ in ended {
        count += 1
        if count == job { break }
    }
    return answers.withLock { $0 }
}

@Suite(.serialized) struct JSONSchemaSamplingTests {
    /// SmolLM2 at temperature 1 over the whole vocabulary, under each fixture schema: every
    /// answer ends within its budget and Python's jsonschema accepts it. CI samples
    /// HEARTH_SCHEMA_SAMPLES seeds per schema (8 unless set); scripts/check-schema-sampling runs
    /// 100 and prints the table.
    @Test func sampledAnswersAreValid() async throws {
        let model = try schemaModel.get()
        let seeds = Int(ProcessInfo.processInfo.environment["HEARTH_SCHEMA_SAMPLES"] ?? "") ?? 8
        let cases = try SchemaSamplingCase.all(model)
        let clock = ContinuousClock(), start = clock.now
        let answers = try await sampleSchemas(model, cases, seeds: seeds, running: 16)
        let seconds = (clock.now - start) / .seconds(1)
        var table = ["| schema | answers | valid | invalid | cut by length | tokens (mean / max) | masks computed / cached | ms per computed mask |",
                     "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        var totals = (answers: 0, valid: 0, invalid: 0, cut: 0, tokens: 0)
        for (item, results) in zip(cases, answers) {
            let ended = results.filter { $0.finish == .stop && $0.error == nil }
            let verdicts = try PythonJSONSchema.validate(schema: item.schema, documents: ended.map(\.text))
            var invalid = 0
            for (answer, verdict) in zip(ended, verdicts) where verdict != nil {
                invalid += 1
                Issue.record("\(item.name): an answer jsonschema refuses: \(answer.text) — \(verdict!)")
            }
            if ProcessInfo.processInfo.environment["HEARTH_SCHEMA_SHOW"] != nil {
                for (seed, answer) in results.enumerated() { print("\(item.name) seed \(seed + 1) (\(answer.tokens) tokens): \(answer.text)") }
            }
            let cut = results.filter { $0.finish == .length }.count
            for answer in results where answer.finish != .stop || answer.error != nil {
                Issue.record("\(item.name): an answer did not end by itself (\(answer.finish.map { "\($0)" } ?? "no finish"), \(answer.error ?? "")): \(answer.text)")
            }
            let tokens = results.map(\.tokens)
            let stats = results.map(\.masks).max { $0.computed + $0.cached < $1.computed + $1.cached } ?? GrammarProgram.MaskStatistics()
            let meanTokens = Double(tokens.reduce(0, +)) / Double(max(1, tokens.count))
            let maskMilliseconds = stats.computed > 0 ? stats.computeSeconds * 1000 / Double(stats.computed) : 0
            let cells: [String] = [item.name, "\(results.count)", "\(ended.count - invalid)", "\(invalid)", "\(cut)",
                                   String(format: "%.1f / %d", meanTokens, tokens.max() ?? 0), "\(stats.computed) / \(stats.cached)",
                                   String(format: "%.2f", maskMilliseconds)]
            table.append("| " + cells.joined(separator: " | ") + " |")
            totals.answers += results.count
            totals.valid += ended.count - invalid
            totals.invalid += invalid
            totals.cut += cut
            totals.tokens += tokens.reduce(0, +)
        }
        table.append("| all | \(totals.answers) | \(totals.valid) | \(totals.invalid) | \(totals.cut) | "
                     + String(format: "%.1f", Double(totals.tokens) / Double(max(1, totals.answers))) + " | | |")
        print("JSON schema sampling: SmolLM2-135M Q4_1, temperature 1 (no top-k/top-p), \(seeds) seeds per schema, 16 per pass, "
              + String(format: "%.0f s, %.0f generated tokens/s", seconds, Double(totals.tokens) / seconds) + "\n" + table.joined(separator: "\n"))
        #expect(totals.valid == totals.answers, "\(totals.invalid) invalid, \(totals.cut) cut by length")
    }

    /// What the constraint costs (printed, not asserted): the sampler per token on logits
    /// recorded from real answers, with and without a schema's constraint; whole-vocabulary
    /// masks the first time a state is met and from the cache; and tokens/s of a constrained
    /// answer beside an unconstrained one of the same length.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["HEARTH_SCHEMA_TIMING"] != nil))
    func timing() throws {
        let model = try schemaModel.get()
        let cases = try SchemaSamplingCase.all(model).filter { ["01-person", "14-dates-and-times", "20-recursive-tree", "30-catalog"].contains($0.name) }
        let clock = ContinuousClock()
        func microseconds(_ d: Duration) -> Double { Double(d.components.seconds) * 1e6 + Double(d.components.attoseconds) * 1e-12 }
        var lines: [String] = []
        for item in cases {
            // One answer, recording each step's logits and state.
            let state = try model.makeSequence(contextLength: 1024)
            var logits = Array(try model.evaluate(item.prompt, sequence: state))
            // A program of its own, so that its statistics count this answer's masks from cold.
            let program = GrammarProgram(item.grammar, table: TokenByteTable(tokenizer: model.tokenizer))
            var constraint = GrammarConstraint(program: program)
            var steps: [([Float], GrammarState)] = []
            var picker = Sampler(options: SamplingOptions(temperature: 1, topK: 0, topP: 1, minP: 0, seed: 1))
            while !constraint.isComplete && steps.count < item.maxTokens {
                steps.append((logits, constraint.state))
                guard let token = logits.withUnsafeBufferPointer({ picker.sample($0, history: [Int32](), constraint: constraint) }),
                      !model.tokenizer.endOfGenerationTokens.contains(token) else { break }
                _ = constraint.accept(token)
                logits = Array(try model.evaluate([token], sequence: state))
            }
            let first = program.statistics
            // The sampler alone over those steps: unconstrained, and constrained with the masks cached.
            func perToken(_ constrained: Bool) -> Double {
                var sampler = Sampler(options: SamplingOptions(temperature: 1, topK: 0, topP: 1, minP: 0, seed: 1))
                return (0..<3).map { _ in
                    microseconds(clock.measure {
                        for (values, s) in steps {
                            let c = GrammarConstraint(program: program, state: s)
                            _ = values.withUnsafeBufferPointer {
                                constrained ? sampler.sample($0, history: [Int32](), constraint: c) : sampler.sample($0, history: [Int32]())
                            }
                        }
                    })
                }.min()! / Double(steps.count)
            }
            let plain = perToken(false), cached = perToken(true)
            lines.append("\(item.name): \(steps.count) steps; masks computed on first meeting: \(first.computed) "
                         + String(format: "(%.2f ms each, %.2f ms a token over the answer)", first.computeSeconds * 1000 / Double(max(1, first.computed)),
                                  first.computeSeconds * 1000 / Double(max(1, steps.count)))
                         + "; sampler a token: " + String(format: "%.0f µs plain, %.0f µs constrained with masks cached", plain, cached))
            // Tokens/s: the answer under the grammar, and free text of as many tokens; best of 3, taking turns.
            var constrainedOptions = GenerationOptions(sampling: SamplingOptions(temperature: 1, topK: 0, topP: 1, minP: 0, seed: 1), maxTokens: item.maxTokens)
            constrainedOptions.grammar = item.grammar
            var speeds: [[Double]] = [[], []]
            var lengths = [0, 0]
            for _ in 0..<3 {
                let fresh = try model.makeSequence(contextLength: 1024)
                var count = 0
                let constrained = try model.generate(prompt: item.prompt, options: constrainedOptions, sequence: fresh) { _ in true }
                count = constrained.completionTokens
                // Free text as long as the answer: the end of generation banned.
                var bias: [Int32: Float] = [:]
                for token in model.tokenizer.endOfGenerationTokens { bias[token] = -1000 }
                let freeOptions = GenerationOptions(sampling: SamplingOptions(temperature: 1, topK: 0, topP: 1, minP: 0, logitBias: bias, seed: 1),
                                                    maxTokens: count)
                let free = try model.generate(prompt: item.prompt, options: freeOptions, sequence: try model.makeSequence(contextLength: 1024)) { _ in true }
                speeds[0].append(constrained.tokensPerSecond)
                speeds[1].append(free.tokensPerSecond)
                lengths = [constrained.completionTokens, free.completionTokens]
            }
            lines.append("  generation: " + String(format: "%.1f tok/s constrained (%d tokens), %.1f tok/s free text (%d tokens)",
                                                   speeds[0].max()!, lengths[0], speeds[1].max()!, lengths[1]))
        }
        // Masks from cold for every state the fixtures' valid documents pass through (compact and
        // pretty-printed, cut into SmolLM2's tokens): the recognizer's and the trie walk's cost
        // without the model.
        let table = TokenByteTable(tokenizer: model.tokenizer)
        var computed = 0, seconds = 0.0
        let n = model.configuration.vocabularySize
        var words = [UInt64](repeating: 0, count: (n + 63) / 64)
        for name in JSONSchemaFixtures.names {
            let program = GrammarProgram(try Grammar(jsonSchema: try JSONSchemaFixtures.schema(name)), table: table)
            for document in try JSONSchemaFixtures.examples(name, "valid").flatMap({ [$0.jsonText, JSONSchemaFixtures.pretty($0)] }) {
                var constraint = GrammarConstraint(program: program)
                for token in [nil] + model.tokenizer.encode(document, addSpecial: false, parseSpecial: false).map(Optional.some) {
                    if let token, !constraint.accept(token) { break }
                    words.withUnsafeMutableBufferPointer { constraint.markAllowed(in: $0, vocabularySize: n) }
                }
            }
            computed += program.statistics.computed
            seconds += program.statistics.computeSeconds
        }
        lines.append("masks from cold along the fixtures' valid documents: \(computed) computed, "
                     + String(format: "%.3f ms each", seconds * 1000 / Double(max(1, computed))))
        print("JSON schema timing (SmolLM2-135M Q4_1, 2 threads, temperature 1 over the whole vocabulary):\n" + lines.joined(separator: "\n"))
    }
}
