import Foundation
import HearthTestSupport
import Testing

/// `hearth rerank`, run as a user runs it in a folder holding a cross-encoder and a file of
/// documents, both named by relative paths.
@Suite("hearth rerank", .serialized)
struct RerankCommandTests {
    private static let documents = [
        "Berlin has a population of 3,520,031 registered inhabitants in an area of 891.82 square kilometers.",
        "New York City is famous for the Metropolitan Museum of Art.",
        "",
        "Berlin is well known for its museums.",
    ]

    /// A folder with `models/tiny-reranker` (the tiny cross-encoder of the fixtures),
    /// `models/all-MiniLM-L6-v2`, `docs.txt` (with a blank line) and `empty.txt`.
    private static func workspace() throws -> TemporaryDirectory {
        let directory = try TemporaryDirectory()
        let models = directory.file("models")
        try FileManager.default.createDirectory(at: models, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: models.appendingPathComponent("tiny-reranker").path,
                                                   withDestinationPath: try CrossEncoderSpec.tiny.folder().url.path)
        try FileManager.default.createSymbolicLink(atPath: models.appendingPathComponent("all-MiniLM-L6-v2").path,
                                                   withDestinationPath: try TestFiles.model("all-MiniLM-L6-v2"))
        try (documents.joined(separator: "\n") + "\n").write(to: directory.file("docs.txt"), atomically: true, encoding: .utf8)
        try "\n  \n".write(to: directory.file("empty.txt"), atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(at: directory.file("cache"), withIntermediateDirectories: true)
        return directory
    }

    /// Runs `hearth` in `directory`, offline with an empty cache, `input` on standard input.
    private func hearth(_ arguments: [String], in directory: TemporaryDirectory, input: String? = nil) throws
        -> (status: Int32, output: String, errors: String) {
        let inputFile = directory.file("stdin-\(UUID().uuidString)")
        try Data((input ?? "").utf8).write(to: inputFile)
        let environment = ProcessInfo.processInfo.environment.merging(["HF_HUB_OFFLINE": "1", "HF_HOME": directory.file("cache").path]) { $1 }
        let (status, output, errors) = try Child.run(try TestFiles.hearthBinary, arguments, environment: environment,
                                                     workingDirectory: directory.url, input: .file(inputFile))
        return (status, String(decoding: output, as: UTF8.self), String(decoding: errors, as: UTF8.self))
    }

    @Test("documents from a file or standard input, best first, as text or JSON, with CrossEncoder's scores")
    func ranks() throws {
        let directory = try Self.workspace()
        let fixture = try CrossEncoderFixture.named(CrossEncoderSpec.tiny.name)
        let query = "How many people live in Berlin?"
        let expected = try Self.documents.filter { !$0.isEmpty }.map { document in
            try #require(fixture.pairs.first { $0.query == query && $0.document == document }).scores[0]
        }
        let json = try hearth(["rerank", "models/tiny-reranker", query, "--in", "docs.txt", "--json", "-t", "2"], in: directory)
        #expect(json.status == 0, "\(json.errors)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
        #expect(object["model"] as? String == "models/tiny-reranker")
        #expect(object["query"] as? String == query)
        let results = try #require(object["results"] as? [[String: Any]])
        #expect(results.count == 3)
        let scores = results.compactMap { ($0["score"] as? NSNumber)?.floatValue }
        #expect(scores == scores.sorted(by: >))
        for result in results {
            let index = try #require(result["index"] as? Int)
            #expect(result["document"] as? String == Self.documents.filter { !$0.isEmpty }[index])
            #expect(abs(((result["score"] as? NSNumber)?.floatValue ?? 0) - expected[index]) <= 1e-4)
        }

        let text = try hearth(["rerank", "models/tiny-reranker", query, "--in", "-", "--top", "2"], in: directory,
                              input: Self.documents.joined(separator: "\r\n"))
        #expect(text.status == 0, "\(text.errors)")
        let lines = text.output.split(separator: "\n").map(String.init)
        #expect(lines.count == 2)
        let best = try #require(results.first)
        #expect(lines.first == String(format: "%.4f  ", (best["score"] as? NSNumber)?.floatValue ?? 0) + (best["document"] as? String ?? ""))

        let logits = try hearth(["rerank", "models/tiny-reranker", query, "--in", "docs.txt", "--logits", "--top", "1", "--json"], in: directory)
        #expect(logits.status == 0, "\(logits.errors)")
        let top = try #require((try JSONSerialization.jsonObject(with: Data(logits.output.utf8)) as? [String: Any])?["results"] as? [[String: Any]])
        let topIndex = try #require(top.first?["index"] as? Int)
        let topLogit = try #require(fixture.pairs.first { $0.query == query && $0.document == Self.documents.filter { !$0.isEmpty }[topIndex] }).logits[0]
        #expect(abs(((top.first?["score"] as? NSNumber)?.floatValue ?? 0) - topLogit) <= 1e-4)
    }

    @Test("missing or empty input, a bad --top and an embedding model are clear errors")
    func errors() throws {
        let directory = try Self.workspace()
        let missing = try hearth(["rerank", "models/tiny-reranker", "q", "--in", "nothere.txt"], in: directory)
        #expect(missing.status != 0)
        #expect(missing.errors.contains("nothere.txt"), "\(missing.errors)")
        let empty = try hearth(["rerank", "models/tiny-reranker", "q", "--in", "empty.txt"], in: directory)
        #expect(empty.status != 0)
        #expect(empty.errors.contains("empty.txt has no documents"), "\(empty.errors)")
        let noStdin = try hearth(["rerank", "models/tiny-reranker", "q", "--in", "-"], in: directory, input: "")
        #expect(noStdin.errors.contains("Standard input has no documents"), "\(noStdin.errors)")
        let badTop = try hearth(["rerank", "models/tiny-reranker", "q", "--in", "docs.txt", "--top", "0"], in: directory)
        #expect(badTop.status != 0)
        #expect(badTop.errors.contains("--top must be at least 1"), "\(badTop.errors)")
        let noFile = try hearth(["rerank", "models/tiny-reranker", "q"], in: directory)
        #expect(noFile.status != 0)
        #expect(noFile.errors.contains("--in"), "\(noFile.errors)")
        let embedding = try hearth(["rerank", "models/all-MiniLM-L6-v2", "q", "--in", "docs.txt"], in: directory)
        #expect(embedding.status != 0)
        #expect(embedding.errors.contains("sentence-embedding model") && embedding.errors.contains("hearth embed"), "\(embedding.errors)")
        let absent = try hearth(["rerank", "models/nothere", "q", "--in", "docs.txt"], in: directory)
        #expect(absent.status != 0)
        #expect(absent.errors.contains("models/nothere"), "\(absent.errors)")
    }
}
