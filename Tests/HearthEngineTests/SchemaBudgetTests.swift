import Foundation
import Hearth
import HearthTestSupport
import Testing

private let budgetModel = Result { try TransformerModel(path: TestFiles.model(TestFiles.smolLM2), threads: 2) }

/// Constrained answers close within their token budget: near its end the grammar admits only
/// tokens after which the shortest completion still fits.
@Suite(.serialized) struct SchemaBudgetTests {
    static let question = #"Describe a small tree of numbers, like {"value": 1, "children": [{"value": 2}, {"value": 3}]}."#

    /// SmolLM2's answer under `options`: the text, its tokens and how it finished.
    func answer(_ model: TransformerModel, _ schema: JSONValue, _ options: GenerationOptions) throws -> (text: String, tokens: [Int32], finish: FinishReason?) {
        let messages = [
            ChatMessage(role: .system, content: "You answer with JSON only, following this JSON schema: \(schema.jsonText)"),
            ChatMessage(role: .user, content: Self.question),
        ]
        let prompt = model.tokenizer.encode(try ChatFormat(gguf: model.gguf).render(messages), addSpecial: true, parseSpecial: true)
        let state = try model.makeSequence(contextLength: 1024)
        var text = "", tokens: [Int32] = [], finish: FinishReason?
        try model.generate(prompt: prompt, options: options, sequence: state) { chunk in
            text += chunk.text
            if let token = chunk.token { tokens.append(token) }
            finish = chunk.finishReason ?? finish
            return true
        }
        return (text, tokens, finish)
    }

    /// A recursive tree at temperature 1 with a budget of 48 tokens: every answer ends by
    /// itself and validates.
    @Test func recursiveTreeClosesWithinItsBudget() throws {
        let model = try budgetModel.get()
        let schema = try JSONSchemaFixtures.schema("20-recursive-tree")
        let grammar = try Grammar(jsonSchema: schema)
        var texts: [String] = []
        for seed in 1...8 {
            var options = wideSampling(seed: UInt64(seed), maxTokens: 48)
            options.grammar = grammar
            let (text, tokens, finish) = try answer(model, schema, options)
            #expect(finish == .stop, "seed \(seed), \(tokens.count) tokens: \(text.debugDescription)")
            #expect(tokens.count <= 48)
            texts.append(text)
        }
        let verdicts = try PythonJSONSchema.validate(schema: schema, documents: texts)
        for (text, verdict) in zip(texts, verdicts) { #expect(verdict == nil, "\(text.debugDescription): \(verdict ?? "")") }
    }

    /// An answer during which the budget never came near (the remaining tokens always more
    /// than the shortest completion and the margin) is the same with and without a budget.
    @Test func answersFarFromTheBudgetAreUnchanged() throws {
        let model = try budgetModel.get()
        let schema = try JSONSchemaFixtures.schema("20-recursive-tree")
        let grammar = try Grammar(jsonSchema: schema)
        let program = model.grammarProgram(grammar)
        // Printable ASCII has single-byte tokens in SmolLM2, so the tree's completions can be written.
        #expect(program.shortestCompletionTokens(GrammarConstraint(program: program).state) < Grammar.unreachableLength)
        let budget = 100
        var compared = 0
        for seed in 1...16 {
            var free = wideSampling(seed: UInt64(seed), maxTokens: 600)
            free.grammar = grammar
            let unbounded = try answer(model, schema, free)
            // Replays the answer to see whether the budget would have come near.
            var constraint = GrammarConstraint(program: program)
            var far = unbounded.finish == .stop && unbounded.tokens.count <= budget
            for (i, token) in unbounded.tokens.enumerated() where far {
                far = budget - i > constraint.completionCost(constraint.state) + GrammarConstraint.budgetMargin
                _ = constraint.accept(token)
            }
            guard far else { continue }
            var bounded = free
            bounded.maxTokens = budget
            let limited = try answer(model, schema, bounded)
            #expect(limited.text == unbounded.text, "seed \(seed)")
            #expect(limited.finish == .stop)
            compared += 1
        }
        #expect(compared >= 3, "too few answers ended far from the budget to compare")
    }

    /// Near the budget, the whole-vocabulary mask is the unbudgeted one less every token after
    /// whose bytes (stepped through the recognizer one by one) the completion costs too much,
    /// in every state a tree answer passes through and at every remaining count that matters.
    @Test func budgetedMaskEqualsAskingTokenByToken() throws {
        let model = try budgetModel.get()
        let program = model.grammarProgram(try Grammar(jsonSchema: try JSONSchemaFixtures.schema("20-recursive-tree")))
        let n = model.configuration.vocabularySize
        let ends = Set(model.tokenizer.endOfGenerationTokens)
        func mask(_ constraint: GrammarConstraint) -> [UInt64] {
            var mask = [UInt64](repeating: 0, count: (n + 63) / 64)
            mask.withUnsafeMutableBufferPointer { constraint.markAllowed(in: $0, vocabularySize: n) }
            return mask
        }
        var constraint = GrammarConstraint(program: program)
        var checked = 0, narrowed = 0
        for piece in ["{", "\"value\"", ": ", "1", ", ", "\"children\": [", "{\"value\": 3", "}", ", ", "{\"value\": 4}", "]", "}"] {
            for token in model.tokenizer.encode(piece, addSpecial: false, parseSpecial: false) {
                let accepted = constraint.accept(token)
                #expect(accepted, "\(piece)")
            }
            let state = constraint.state, cost = constraint.completionCost(state)
            let free = mask(constraint)
            for remaining in Set([cost, cost + 1, cost + 2, cost + 7, cost + GrammarConstraint.budgetMargin]) {
                var bounded = constraint
                bounded.remainingTokens = remaining
                var expected = [UInt64](repeating: 0, count: free.count)
                for token in 0..<Int32(n) where free[Int(token) >> 6] >> UInt64(token & 63) & 1 == 1 {
                    var after = state
                    let fits = ends.contains(token) && state.isAccepting
                        || (after.consume(model.tokenizer.tokenBytes(token), in: program.grammar)
                            && constraint.completionCost(after) <= remaining - 1)
                    if fits { expected[Int(token) >> 6] |= 1 << UInt64(token & 63) }
                }
                #expect(mask(bounded) == expected, "after \(piece), \(remaining) tokens left")
                let cached = program.statistics.cached
                #expect(mask(bounded) == expected && program.statistics.cached > cached, "asked again, the mask is the one kept")
                if expected != free { narrowed += 1 }
                checked += 1
            }
        }
        #expect(checked > 20 && narrowed > 5, "\(checked) masks compared, \(narrowed) narrowed by the budget")
    }
}
