import Foundation
import Hearth
import HearthTestSupport
import Testing

private let grammarModel = Result { try TransformerModel(path: TestFiles.model(TestFiles.smolLM2), threads: 2) }

/// SmolLM2's answer to `question` under `options`: the text and how it finished.
func constrainedAnswer(_ model: TransformerModel, _ question: String, _ options: GenerationOptions,
                       system: String? = nil) throws -> (text: String, finish: FinishReason?) {
    var messages = [ChatMessage(role: .user, content: question)]
    if let system { messages.insert(ChatMessage(role: .system, content: system), at: 0) }
    let prompt = model.tokenizer.encode(try ChatFormat(gguf: model.gguf).render(messages), addSpecial: true, parseSpecial: true)
    let state = try model.makeSequence(contextLength: 1024)
    var text = "", finish: FinishReason?
    try model.generate(prompt: prompt, options: options, sequence: state) { chunk in
        text += chunk.text
        finish = chunk.finishReason ?? finish
        return true
    }
    return (text, finish)
}

/// Sampling at temperature 1 over the whole vocabulary (no top-k, so the sampler asks for
/// whole-vocabulary masks).
func wideSampling(seed: UInt64, maxTokens: Int) -> GenerationOptions {
    GenerationOptions(sampling: SamplingOptions(temperature: 1, topK: 0, topP: 1, minP: 0, seed: seed), maxTokens: maxTokens)
}

@Suite(.serialized) struct GrammarSamplingTests {
    /// llama.cpp's example grammars held by the sampler: every answer that ends by itself is
    /// accepted by an independent Earley parser, and one cut by the token budget is a
    /// beginning of a match to it. (Grammars of endless lists rarely end within the budget.)
    @Test(arguments: [
        ("arithmetic", "Write two arithmetic equations, one per line.", true),
        ("chess", "Write the first moves of a chess game in algebraic notation.", false),
        ("list", "List four things to buy at a market.", false),
        ("json", "Describe a cat as a JSON object.", true),
        ("japanese", "Say hello in Japanese.", false),
        ("c", "Write a C function that adds two numbers.", true),
    ])
    func sampledOutputsMatchTheGrammar(name: String, question: String, shouldEnd: Bool) throws {
        let model = try grammarModel.get()
        let grammar = try Grammar(gbnf: try String(contentsOfFile: try TestFiles.model("grammars/\(name).gbnf"), encoding: .utf8))
        let earley = EarleyRecognizer(grammar), compiled = CompiledGrammar(grammar)
        var ended = 0
        for seed in 1...6 {
            var options = wideSampling(seed: UInt64(seed), maxTokens: 80)
            options.grammar = grammar
            let (text, finish) = try constrainedAnswer(model, question, options)
            if finish == .stop {
                ended += 1
                let matched = earley.matches(text)
                #expect(matched, "\(name), seed \(seed): \(text.debugDescription)")
            } else {
                #expect(finish == .length)
                var state = compiled.start()
                let (pushdown, chart) = (state.consume(Array(text.utf8), in: compiled), earley.isPrefix(text))
                #expect(pushdown && chart, "\(name), seed \(seed): \(text.debugDescription)")
            }
        }
        if shouldEnd { #expect(ended >= 1, "\(name): no answer ended within 80 tokens") }
    }

    /// The whole-vocabulary mask equals asking token by token, in every state a JSON answer
    /// passes through, and the tokens it allows are those whose bytes the recognizer takes.
    @Test func maskEqualsAskingTokenByToken() throws {
        let model = try grammarModel.get()
        let grammar = try Grammar(gbnf: try String(contentsOfFile: try TestFiles.model("grammars/json.gbnf"), encoding: .utf8))
        let program = model.grammarProgram(grammar)
        var constraint = GrammarConstraint(program: program)
        let n = model.configuration.vocabularySize
        for (step, piece) in ["{", "\"na", "me\"", ": ", "\"Tom", "\"", ", \"age\": 4", "2", "}"].enumerated() {
            var mask = [UInt64](repeating: 0, count: (n + 63) / 64)
            mask.withUnsafeMutableBufferPointer { constraint.markAllowed(in: $0, vocabularySize: n) }
            var mismatches = 0
            for token in 0..<Int32(n) where constraint.allows(token) != (mask[Int(token) >> 6] >> UInt64(token & 63) & 1 == 1) {
                mismatches += 1
            }
            #expect(mismatches == 0, "step \(step)")
            let tokens = model.tokenizer.encode(piece, addSpecial: false, parseSpecial: false)
            for token in tokens {
                let accepted = constraint.accept(token)
                #expect(accepted, "step \(step): \(piece)")
            }
        }
        #expect(constraint.isAccepting)
        let end = try #require(model.tokenizer.endOfGenerationTokens.first)
        #expect(constraint.allows(end))
    }

    /// A lazy grammar lets the answer run free until the trigger, then holds it to the grammar.
    @Test func lazyGrammarHoldsFromItsTrigger() throws {
        let model = try grammarModel.get()
        let grammar = try Grammar(gbnf: #"root ::= "ANSWER: " [0-9]{1,3} "\n""#)
        for seed in 1...4 {
            var options = wideSampling(seed: UInt64(seed), maxTokens: 60)
            options.grammar = grammar
            options.grammarTriggers = ["ANSWER:"]
            let (text, finish) = try constrainedAnswer(
                model, "What is 6 times 7? Think briefly, then write ANSWER: and the number.", options)
            if let range = text.range(of: "ANSWER:") {
                let tail = String(text[range.lowerBound...])
                #expect(tail.range(of: #"^ANSWER: [0-9]{1,3}\n$"#, options: .regularExpression) != nil, "\(text.debugDescription)")
                #expect(finish == .stop)
            } else {
                #expect(finish == .length || finish == .stop)
            }
        }
    }
}
