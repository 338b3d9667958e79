import Foundation
import HearthTestSupport
import Testing

/// `hearth run MODEL --prompts FILE`: offline batch answers in shared passes.
@Suite("hearth run --prompts", .serialized)
struct PromptsTests {
    /// Runs `hearth` to its end with output collected in files.
    private func hearth(_ arguments: [String], in directory: TemporaryDirectory) async throws -> (status: Int32, output: String, errors: String) {
        let child = try Child(try TestFiles.hearthBinary, arguments, environment: ProcessInfo.processInfo.environment, directory: directory)
        let status = try await child.wait()
        return (status, child.outputText, child.errorText)
    }

    private func answers(_ text: String) throws -> [[String: Any]] {
        try text.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
        }
    }

    @Test("each line's answer equals `hearth run` of that prompt alone")
    func linesEqualRunsAlone() async throws {
        let directory = try TemporaryDirectory()
        let model = try TestFiles.model(TestFiles.smolLM2)
        // Plain lines take the command line's options; JSON lines bring their own (a seeded
        // sample among them), so every answer is reproducible alone.
        let lines: [(line: String, alone: [String])] = [
            ("What is 2+2?", ["What is 2+2?", "--temp", "0", "-n", "24"]),
            (#"{"prompt": "The capital of France is", "raw": true, "max_tokens": 12, "id": 7}"#,
             ["The capital of France is", "--raw", "--temp", "0", "-n", "12"]),
            ("", []),
            (#"{"prompt": "Tell me about owls.", "temperature": 0.9, "seed": 42, "top_k": 40, "max_tokens": 20}"#,
             ["Tell me about owls.", "--temp", "0.9", "--seed", "42", "--top-k", "40", "-n", "20"]),
            (#"{"prompt": "Say hi", "system": "Be brief.", "id": "greet"}"#, ["Say hi", "--system", "Be brief.", "--temp", "0", "-n", "24"]),
            ("Name a river in Europe.", ["Name a river in Europe.", "--temp", "0", "-n", "24"]),
            (#"{"prompt": "Count: one, two,", "raw": true, "stop": [" five"], "max_tokens": 30}"#,
             ["Count: one, two,", "--raw", "--temp", "0", "-n", "30", "--stop", " five"]),
            ("Why is the sea salty?", ["Why is the sea salty?", "--temp", "0", "-n", "24"]),
        ]
        let file = directory.file("prompts.txt")
        try lines.map(\.line).joined(separator: "\n").write(to: file, atomically: true, encoding: .utf8)
        let output = directory.file("answers.jsonl")
        let batch = try await hearth(["run", model, "--prompts", file.path, "--temp", "0", "-n", "24", "-t", "2",
                                      "--parallel", "4", "-o", output.path], in: directory)
        #expect(batch.status == 0, "\(batch.errors)")
        #expect(batch.errors.contains("7 answers"), "\(batch.errors)")
        let written = try answers(String(contentsOf: output, encoding: .utf8))
        #expect(written.count == 7)
        for (index, entry) in lines.enumerated() where !entry.alone.isEmpty {
            let answer = try #require(written.first { $0["line"] as? Int == index + 1 }, "line \(index + 1) missing")
            let alone = try await hearth(["run", model] + entry.alone + ["-t", "2"], in: directory)
            #expect(alone.status == 0)
            // `hearth run` ends the answer with a newline.
            #expect(answer["text"] as? String == String(alone.output.dropLast()), "line \(index + 1)")
            #expect(answer["prompt_tokens"] as? Int ?? 0 > 0)
            #expect(answer["tokens"] as? Int ?? 0 > 0)
        }
        #expect(written.first { $0["line"] as? Int == 2 }?["id"] as? Int == 7)
        #expect(written.first { $0["line"] as? Int == 5 }?["id"] as? String == "greet")
        #expect(written.first { $0["line"] as? Int == 7 }?["finish_reason"] as? String == "stop")
    }

    @Test("a malformed line is an error naming its line; the answers before it are written")
    func malformedLine() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("prompts.txt")
        try "What is 2+2?\nName a colour.\n{\"prompt\": 3}\nNever reached\n".write(to: file, atomically: true, encoding: .utf8)
        let output = directory.file("answers.jsonl")
        let result = try await hearth(["run", try TestFiles.model(TestFiles.smolLM2), "--prompts", file.path, "--temp", "0",
                                       "-n", "8", "-o", output.path], in: directory)
        #expect(result.status != 0)
        #expect(result.errors.contains("line 3"), "\(result.errors)")
        let written = try answers(String(contentsOf: output, encoding: .utf8))
        #expect(Set(written.compactMap { $0["line"] as? Int }) == [1, 2])

        for bad in ["{not json", #"{"prompt": "x", "colour": "red"}"#, #"{"prompt": "x", "messages": []}"#, #"{"raw": true}"#,
                    #"{"prompt": "x", "max_tokens": -1}"#, #"{"prompt": "x", "temperature": "hot"}"#] {
            try "Fine\n\(bad)\n".write(to: file, atomically: true, encoding: .utf8)
            let result = try await hearth(["run", try TestFiles.model(TestFiles.smolLM2), "--prompts", file.path, "-n", "2"], in: directory)
            #expect(result.status == 1, "\(bad)")
            #expect(result.errors.contains("line 2:"), "\(bad): \(result.errors)")
        }
        let missing = try await hearth(["run", try TestFiles.model(TestFiles.smolLM2), "--prompts", directory.file("none.txt").path],
                                       in: directory)
        #expect(missing.status == 1 && missing.errors.contains("none.txt"))
    }

    @Test("Ctrl-C keeps every finished answer and writes no partial one")
    func interruptKeepsFinishedAnswers() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("prompts.txt")
        let short = (0..<4).map { #"{"prompt": "Short answer \#($0)", "max_tokens": 4}"# }
        let long = (0..<4).map { #"{"prompt": "Write a very long story about the number \#($0).", "max_tokens": 4000}"# }
        try (short + long).joined(separator: "\n").write(to: file, atomically: true, encoding: .utf8)
        let output = directory.file("answers.jsonl")
        let child = try Child(try TestFiles.hearthBinary,
                              ["run", try TestFiles.model(TestFiles.smolLM2), "--prompts", file.path, "--temp", "0",
                               "-c", "8192", "-o", output.path],
                              environment: ProcessInfo.processInfo.environment, directory: directory)
        child.killWhenTestsEnd()
        defer { if child.isRunning { child.signal(SIGKILL) } }
        try await waitUntil("the four short answers to be written", every: .milliseconds(50)) {
            try #require(child.isRunning, "hearth run ended: \(child.errorText)")
            return (try? String(contentsOf: output, encoding: .utf8))?.split(separator: "\n").count ?? 0 >= 4
        }
        child.signal(SIGINT)
        let status = try await child.wait()
        #expect(status == 130, "\(child.errorText)")
        #expect(child.errorText.contains("interrupted"))
        let written = try answers(String(contentsOf: output, encoding: .utf8))
        #expect(Set(written.compactMap { $0["line"] as? Int }) == [1, 2, 3, 4])
        #expect(written.allSatisfy { $0["finish_reason"] as? String == "length" })
    }
}
