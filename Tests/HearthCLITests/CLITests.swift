import Foundation
import HearthFormats
import HearthTestSupport
import Testing

/// The `hearth` binary, run as a user runs it: arguments in, text and an exit status out.
private struct Hearth {
    struct Result {
        let status: Int32
        let output: String
        let errors: String
    }

    static func run(_ arguments: [String]) throws -> Result {
        let (status, output, errors) = try Child.run(try TestFiles.hearthBinary, arguments)
        return Result(status: status, output: String(decoding: output, as: UTF8.self), errors: String(decoding: errors, as: UTF8.self))
    }
}

@Suite("hearth command line", .serialized)
struct CLITests {
    @Test func tokenizePrintsTheIds() throws {
        let result = try Hearth.run(["tokenize", TestFiles.model(TestFiles.smolLM2), "Hello world"])
        #expect(result.status == 0)
        #expect(result.output.trimmingCharacters(in: .whitespacesAndNewlines) == "[19556, 905]")
    }

    @Test func inspectDescribesBothModels() throws {
        let smol = try Hearth.run(["inspect", TestFiles.model(TestFiles.smolLM2)])
        #expect(smol.status == 0)
        #expect(smol.output.contains("llama"))
        #expect(smol.output.contains("49152"))
        let gemma = try Hearth.run(["inspect", TestFiles.model(TestFiles.gemma3), "--json"])
        #expect(gemma.status == 0)
        let json = try JSONSerialization.jsonObject(with: Data(gemma.output.utf8)) as? [String: Any]
        #expect(json?["architecture"] as? String == "gemma3")
        #expect(json?["runs"] as? String == "yes")
        #expect(smol.output.contains("runs in Hearth") && smol.output.contains("yes"))
    }

    @Test("inspect says by name why Hearth does not run a file")
    func inspectNamesWhatIsUnsupported() throws {
        for (overrides, reason) in [([("general.architecture", GGUFValue.string("mamba"))], "architecture mamba"),
                                    ([("llama.expert_count", .uint32(8))], "mixture-of-experts")] {
            var tiny = TinyLlama()
            tiny.overrides = overrides
            let path = try tiny.write()
            defer { try? FileManager.default.removeItem(atPath: path) }
            let result = try Hearth.run(["inspect", path])
            #expect(result.status == 0)
            #expect(result.output.contains("no: ") && result.output.contains(reason), "\(result.output)")
        }
    }

    @Test("run --raw streams llama.cpp's greedy continuation and reports speeds on stderr")
    func runRaw() throws {
        let result = try Hearth.run(["run", TestFiles.model(TestFiles.smolLM2), "The capital of France is",
                                     "--raw", "-n", "32", "-t", "2", "--preset", "greedy"])
        #expect(result.status == 0)
        #expect(result.output.hasPrefix(" Paris.\n\nThe United States has a population of approximately 311 million people."))
        #expect(result.errors.contains("tok/s"))
    }

    @Test("run answers a chat prompt with the model's chat format")
    func runChat() throws {
        let result = try Hearth.run(["run", TestFiles.model(TestFiles.smolLM2), "What is 2+2?", "-n", "40", "--temp", "0"])
        #expect(result.status == 0)
        #expect(result.output.trimmingCharacters(in: .whitespacesAndNewlines) == "The answer to this classic math problem is 4.")
    }

    @Test("bad input is a one-line error and a non-zero exit, never a crash", arguments: [
        ["run", "/nonexistent/model.gguf", "hi"],
        ["run", "Package.swift", "hi"],
        ["inspect", "/nonexistent.gguf"],
        ["tokenize", "/nonexistent.gguf", "hi"],
        ["bench", "/nonexistent.gguf"],
        ["bench", "x.gguf", "-t", "0"],
        ["bench", "models/all-MiniLM-L6-v2", "--embed"],
        ["bench", "models/all-MiniLM-L6-v2", "--embed", "--sentences", "s.txt", "--batch", "0"],
        ["bench", "models/all-MiniLM-L6-v2", "--embed", "--sentences", "s.txt", "--batch", "65"],
        ["bench", "models/all-MiniLM-L6-v2", "--embed", "--chat", "--sentences", "s.txt"],
        ["bench", "/nonexistent", "--embed", "--sentences", "/nonexistent.txt"],
        ["run", "x.gguf", "hi", "--temp", "-1"],
        ["run", "x.gguf", "hi", "--top-p", "1.5"],
        ["run", "x.gguf"],
        ["run", "x.gguf", "hi", "--prompts", "p.txt"],
        ["run", "x.gguf", "hi", "-o", "out.jsonl"],
        ["run", "x.gguf", "--prompts", "p.txt", "--parallel", "0"],
        ["bench", "x.gguf", "--parallel", "0"],
        ["bench", "x.gguf", "--parallel", "1,,2"],
        ["bench", "x.gguf", "--parallel", "2", "--chat"],
        ["bench", "x.gguf", "-d", "-1"],
        ["bench", "x.gguf", "-d", "64", "--parallel", "2"],
    ])
    func badInput(_ arguments: [String]) throws {
        let result = try Hearth.run(arguments)
        #expect(result.status != 0)
        #expect(!result.errors.isEmpty)
        #expect(!result.errors.contains("Fatal error"))
        #expect(!result.errors.contains("Backtrac"))
    }

    @Test("a seeded, filtered sample repeats itself")
    func seededSamplingRepeats() throws {
        let arguments = ["run", try TestFiles.model(TestFiles.smolLM2), "Tell me a story.", "-n", "24",
                         "--temp", "0.8", "--top-k", "40", "--top-p", "0.95", "--repeat-penalty", "1.1", "--seed", "7"]
        let first = try Hearth.run(arguments), second = try Hearth.run(arguments)
        #expect(first.status == 0)
        #expect(!first.output.isEmpty)
        #expect(first.output == second.output)
    }

    @Test("embed prints one vector per text, or JSON")
    func embed() throws {
        let model = try TestFiles.model("all-MiniLM-L6-v2")
        let plain = try Hearth.run(["embed", model, "Hello world", "Goodbye", "-t", "2"])
        #expect(plain.status == 0)
        let lines = plain.output.split(separator: "\n")
        #expect(lines.count == 2)
        let vector = try JSONDecoder().decode([Float].self, from: Data(lines[0].utf8))
        #expect(vector.count == 384)
        #expect(abs(vector[0] - -0.03447727) < 1e-4)
        let json = try Hearth.run(["embed", model, "Hello world", "--json"])
        let object = try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any]
        #expect(object?["dimensions"] as? Int == 384)
        #expect((object?["embeddings"] as? [Any])?.count == 1)
    }

    @Test("similar prints the closest lines of a file, and reuses a saved index")
    func similar() throws {
        let model = try TestFiles.model("all-MiniLM-L6-v2")
        let directory = try TemporaryDirectory()
        let lines = directory.file("lines.txt"), index = directory.file("lines.index")
        try Data("The cat slept on the windowsill.\n\nStocks fell as rates rose.\nRain is expected tomorrow.\n".utf8).write(to: lines)
        let first = try Hearth.run(["similar", model, "weather forecast", "--in", lines.path, "-k", "2", "--save", index.path])
        #expect(first.status == 0)
        #expect(first.output.split(separator: "\n").count == 2)
        #expect(first.output.split(separator: "\n").first?.hasSuffix("Rain is expected tomorrow.") == true)
        let again = try Hearth.run(["similar", model, "a pet", "--index", index.path, "-k", "1", "--json"])
        #expect(again.status == 0)
        let matches = try JSONSerialization.jsonObject(with: Data(again.output.utf8)) as? [[String: Any]]
        #expect(matches?.first?["line"] as? String == "The cat slept on the windowsill.")
        let neither = try Hearth.run(["similar", model, "x"])
        #expect(neither.status != 0)
        #expect(neither.errors.contains("--in"))
    }

    @Test func benchPrintsATable() throws {
        let result = try Hearth.run(["bench", TestFiles.model(TestFiles.smolLM2), "-p", "16", "-n", "8", "-r", "1", "-t", "1"])
        #expect(result.status == 0)
        #expect(result.output.contains("pp16"))
        #expect(result.output.contains("tg8"))
        #expect(result.errors.contains("load to first token"))
    }

    @Test("bench -d measures pp and tg after that many tokens in the cache, and refuses more than the context")
    func benchAtDepth() throws {
        let model = try TestFiles.model(TestFiles.smolLM2)
        let json = try Hearth.run(["bench", model, "-p", "8", "-n", "4", "-d", "40", "-r", "2", "-t", "1", "--json"])
        #expect(json.status == 0, "\(json.errors)")
        let rows = json.output.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(rows.map { $0["test"] as? String } == ["pp8 @ d40", "tg4 @ d40"])
        #expect(rows.allSatisfy { ($0["samples"] as? [Double])?.count == 2 && ($0["tokensPerSecond"] as? Double ?? 0) > 0 })
        let table = try Hearth.run(["bench", model, "-p", "0", "-n", "2", "-d", "3", "-r", "1", "-t", "1"])
        #expect(table.status == 0)
        #expect(table.output.contains("tg2 @ d3"))
        let deep = try Hearth.run(["bench", model, "-p", "8", "-n", "4", "-d", "8190", "-r", "1", "-t", "1"])
        #expect(deep.status != 0)
        #expect(deep.errors.contains("needs 8203 positions, more than the model's context of 8192"))
    }

    @Test("--cache-type-k and --cache-type-v: bench shows the types and the cache's size, run answers from a Q4_0 cache, inspect gives the bytes a position")
    func cacheTypes() throws {
        let model = try TestFiles.model(TestFiles.smolLM2)
        let bench = try Hearth.run(["bench", model, "-p", "8", "-n", "4", "-d", "16", "-r", "1", "-t", "1",
                                    "--cache-type-k", "q8_0", "--cache-type-v", "q4_0"])
        #expect(bench.status == 0, "\(bench.errors)")
        #expect(bench.output.contains("type_k | type_v") && bench.output.contains("|   q8_0 |   q4_0 |"), "\(bench.output)")
        // 29 positions of (68 + 36) bytes for each of 30 layers' 3 key/value heads.
        #expect(bench.errors.contains("KV cache 265.1 KiB in k q8_0, v q4_0"), "\(bench.errors)")
        let run = try Hearth.run(["run", model, "The capital of France is", "--raw", "-n", "4", "-t", "2", "--preset", "greedy",
                                  "--cache-type-k", "Q4_0", "--cache-type-v", "q4_0"])
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.output.hasPrefix(" Paris"), "\(run.output)")
        let inspect = try Hearth.run(["inspect", model])
        #expect(inspect.output.contains("KV cache a position:") && inspect.output.contains("f16 22.5 KiB, q8_0 12.0 KiB, q4_0 6.3 KiB"),
                "\(inspect.output)")
        let wrong = try Hearth.run(["run", model, "hi", "--cache-type-v", "q5_1"])
        #expect(wrong.status != 0)
        #expect(wrong.errors.contains("'f16', 'q8_0' or 'q4_0'"), "\(wrong.errors)")
    }

    @Test("bench --parallel reports aggregate prompt and generation speed for each sequence count")
    func benchParallel() throws {
        let model = try TestFiles.model(TestFiles.smolLM2)
        let table = try Hearth.run(["bench", model, "--parallel", "1,3", "-p", "16", "-n", "4", "-r", "1", "-t", "2"])
        #expect(table.status == 0, "\(table.errors)")
        #expect(table.output.contains("tg t/s"))
        #expect(table.output.split(separator: "\n").count == 4)
        let json = try Hearth.run(["bench", model, "--parallel", "2", "-p", "8", "-n", "3", "-r", "2", "--json"])
        #expect(json.status == 0)
        let row = try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any]
        #expect(row?["sequences"] as? Int == 2)
        #expect((row?["promptTokensPerSecond"] as? Double ?? 0) > 0)
        #expect((row?["generationTokensPerSecond"] as? Double ?? 0) > 0)
    }

    @Test("bench --embed reports sentences per second for each batch size, as a table or JSON")
    func benchEmbed() throws {
        let model = try TestFiles.model("all-MiniLM-L6-v2")
        let directory = try TemporaryDirectory()
        let sentences = directory.file("sentences.txt")
        try Data("The cat slept on the windowsill.\nStocks fell as rates rose.\n\nRain is expected tomorrow.\n".utf8).write(to: sentences)
        let table = try Hearth.run(["bench", model, "--embed", "--sentences", sentences.path, "--batch", "1,2", "-r", "1", "-t", "1"])
        #expect(table.status == 0)
        #expect(table.output.contains("sentences/s"))
        #expect(table.output.split(separator: "\n").count == 4)
        #expect(table.errors.contains("load"))
        let json = try Hearth.run(["bench", model, "--embed", "--sentences", sentences.path, "--batch", "3", "-r", "2", "-t", "2", "--json"])
        #expect(json.status == 0)
        let row = try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any]
        #expect(row?["batch"] as? Int == 3)
        #expect(row?["threads"] as? Int == 2)
        #expect(row?["sentences"] as? Int == 3)
        #expect((row?["samples"] as? [Double])?.count == 2)
        #expect((row?["sentencesPerSecond"] as? Double ?? 0) > 0)
    }

    @Test("chat keeps the conversation and its cache, answers commands, and Ctrl-C stops only the answer")
    func chatSession() throws {
        let session = try Interactive(["chat", TestFiles.model(TestFiles.smolLM2), "--preset", "greedy", "-t", "2"])
        session.send("Write a long story about a dragon.\n")
        try session.wait(for: "dragon", in: \.outputText)
        session.child.signal(SIGINT)
        try session.wait(for: "[stopped]", in: \.errorText)
        #expect(session.child.isRunning)
        session.send("What is 2+2?\n")
        try session.wait(for: "cached]", in: \.errorText)
        session.send("/system Be brief.\n/stats\n/preset creative\n/reset\n/stats\n/bye\n")
        let status = try session.child.waitBlocking()
        let output = session.text(\.outputText), errors = session.text(\.errorText)
        #expect(status == 0)
        #expect(output.contains("The answer to this classic math problem is 4."))
        #expect(errors.contains("System prompt set."))
        #expect(errors.contains("Preset creative: temperature 0.9"))
        #expect(errors.contains("Conversation cleared."))
        #expect(errors.contains("No answer yet."))
        // The second question was asked after the cancelled one; its prompt reused the system
        // prompt's tokens.
        #expect(errors.contains("first token"))
        #expect(!errors.contains("Fatal error"))
    }
}

/// A `hearth` process driven through its standard input while its output is read as it comes.
private struct Interactive {
    let child: Child
    private let directory: TemporaryDirectory

    init(_ arguments: [String]) throws {
        directory = try TemporaryDirectory()
        child = try Child(try TestFiles.hearthBinary, arguments, environment: ProcessInfo.processInfo.environment,
                          directory: directory, input: .pipe)
    }

    func send(_ text: String) {
        child.send(text)
    }

    /// What it has written so far to standard output (`\.outputText`) or error (`\.errorText`).
    func text(_ stream: KeyPath<Child, String>) -> String {
        child[keyPath: stream]
    }

    /// Waits (up to ten minutes: the machine may be busy) until `stream` contains `needle`.
    func wait(for needle: String, in stream: KeyPath<Child, String>) throws {
        let deadline = ContinuousClock.now + Child.patience
        while !text(stream).contains(needle) {
            guard ContinuousClock.now < deadline, child.isRunning else {
                throw TestFiles.Missing(description: "hearth never printed \"\(needle)\"; it printed: \(text(stream))")
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }
}
