import Hearth
import HearthTestSupport
import Testing

/// The Swift example in README.md, kept here word for word (but for the model path) so that
/// the documentation cannot stop compiling unnoticed.
@Test func readmeExampleRuns() throws {
    let path = try TestFiles.model(TestFiles.smolLM2)
    var answer = ""

    let model = try TransformerModel(path: path)
    let format = try ChatFormat(gguf: model.gguf)
    let prompt = model.tokenizer.encode(
        try format.render([ChatMessage(role: .user, content: "Why is the sky blue?")]),
        addSpecial: true, parseSpecial: true)
    let state = try model.makeState()
    try model.generate(prompt: prompt, options: GenerationOptions(sampling: .greedy, maxTokens: 200), state: state) { chunk in
        answer += chunk.text   // the README prints it: print(chunk.text, terminator: "")
        return true   // false stops generation
    }

    #expect(answer.contains("scatter") || answer.contains("Rayleigh"))
}
