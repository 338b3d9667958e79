import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HearthTestSupport
import Testing

/// Models named by relative paths, as people type them in the folder that holds them: an
/// existing file or folder always wins over a Hub name of the same shape (`models/x` is a
/// folder here, not the repository `x` of the organization `models`).
@Suite("Local models by relative path", .serialized)
struct LocalPathTests {
    /// A working folder with `models/all-MiniLM-L6-v2` (a sentence-transformers folder),
    /// `models/SmolLM2/` (a folder holding one GGUF file), `smol-q4` (a GGUF file without the
    /// extension) and a text file; the Hub cache is empty and offline, so only paths resolve.
    private static func workspace() throws -> TemporaryDirectory {
        let directory = try TemporaryDirectory()
        let files = FileManager.default
        let models = directory.file("models")
        try files.createDirectory(at: models.appendingPathComponent("SmolLM2"), withIntermediateDirectories: true)
        try files.createSymbolicLink(atPath: models.appendingPathComponent("all-MiniLM-L6-v2").path,
                                     withDestinationPath: try TestFiles.model("all-MiniLM-L6-v2"))
        let smol = try TestFiles.model(TestFiles.smolLM2)
        try files.createSymbolicLink(atPath: models.appendingPathComponent("SmolLM2/model.gguf").path, withDestinationPath: smol)
        try files.createSymbolicLink(atPath: directory.file("smol-q4").path, withDestinationPath: smol)
        try "Owls hunt at night.\nThe stock market fell today.\nBread rises in a warm oven.\n"
            .write(to: directory.file("notes.txt"), atomically: true, encoding: .utf8)
        try files.createDirectory(at: directory.file("cache"), withIntermediateDirectories: true)
        return directory
    }

    private static func environment(_ directory: TemporaryDirectory) -> [String: String] {
        ProcessInfo.processInfo.environment.merging(["HF_HUB_OFFLINE": "1", "HF_HOME": directory.file("cache").path]) { _, new in new }
    }

    private func hearth(_ arguments: [String], in directory: TemporaryDirectory) async throws -> (status: Int32, output: String, errors: String) {
        let child = try Child(try TestFiles.hearthBinary, arguments, environment: Self.environment(directory), directory: directory,
                              workingDirectory: directory.url)
        let status = try await child.wait()
        return (status, child.outputText, child.errorText)
    }

    @Test("embed, similar, run and bench take relative files and folders")
    func commandsTakeRelativePaths() async throws {
        let directory = try Self.workspace()
        let embed = try await hearth(["embed", "models/all-MiniLM-L6-v2", "Hello world", "-t", "2"], in: directory)
        #expect(embed.status == 0, "\(embed.errors)")
        #expect(embed.output.split(separator: "\n").count == 1 && embed.output.hasPrefix("["), "\(embed.output)")

        let similar = try await hearth(["similar", "models/all-MiniLM-L6-v2", "birds of prey", "--in", "notes.txt", "--top", "1"], in: directory)
        #expect(similar.status == 0, "\(similar.errors)")
        #expect(similar.output.contains("Owls hunt at night."), "\(similar.output)")

        let fromFolder = try await hearth(["run", "models/SmolLM2", "What is 2+2?", "--temp", "0", "-n", "8", "-t", "2"], in: directory)
        #expect(fromFolder.status == 0, "\(fromFolder.errors)")
        let fromFile = try await hearth(["run", "smol-q4", "What is 2+2?", "--temp", "0", "-n", "8", "-t", "2"], in: directory)
        #expect(fromFile.status == 0, "\(fromFile.errors)")
        #expect(!fromFolder.output.isEmpty && fromFolder.output == fromFile.output)

        let bench = try await hearth(["bench", "models/SmolLM2", "-p", "8", "-n", "4", "-r", "1", "--json"], in: directory)
        #expect(bench.status == 0, "\(bench.errors)")
        #expect(bench.output.contains("\"n_prompt\"") || bench.output.contains("pp8") || bench.output.contains("\"test\""), "\(bench.output)")
    }

    @Test("a path that is not there, or a folder with several GGUF files, is a clear error")
    func missingAndAmbiguousPaths() async throws {
        let directory = try Self.workspace()
        let missing = try await hearth(["run", "models/nothere", "hi", "-n", "4"], in: directory)
        #expect(missing.status != 0)
        #expect(missing.errors.contains("There is no file or folder models/nothere"), "\(missing.errors)")

        try FileManager.default.createSymbolicLink(atPath: directory.file("models/SmolLM2/other.gguf").path,
                                                   withDestinationPath: try TestFiles.model(TestFiles.smolLM2))
        let ambiguous = try await hearth(["run", "models/SmolLM2", "hi", "-n", "4"], in: directory)
        #expect(ambiguous.status != 0)
        #expect(ambiguous.errors.contains("holds 2 GGUF files") && ambiguous.errors.contains("models/SmolLM2/model.gguf"),
                "\(ambiguous.errors)")
    }

    @Test("serve --model takes relative files and folders, named after them")
    func serveTakesRelativePaths() async throws {
        let directory = try Self.workspace()
        var command = try ServeCommand(directory: directory)
        (command.models, command.contextLength, command.workingDirectory) = (["models/SmolLM2", "models/all-MiniLM-L6-v2"], 1024, directory.url)
        let server = try await ServeProcess(command)
        defer { server.child.signal(SIGTERM) }
        let url = server.base

        func call(_ path: String, _ body: [String: Any]? = nil) async throws -> [String: Any] {
            // Minutes, not URLSession's minute: the machine may be busy with every other suite.
            var request = URLRequest(url: URL(string: url + path)!, timeoutInterval: 600)
            if let body {
                request.httpMethod = "POST"
                request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                request.httpBody = try JSONSerialization.data(withJSONObject: body)
            }
            let (data, response) = try await URLSession.shared.data(for: request)
            #expect((response as? HTTPURLResponse)?.statusCode == 200, "\(path): \(String(decoding: data, as: UTF8.self))")
            return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        }
        let names = Set((try await call("/v1/models")["data"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String })
        #expect(names.isSuperset(of: ["SmolLM2", "all-MiniLM-L6-v2"]), "\(names)")
        let embedded = try await call("/v1/embeddings", ["model": "all-MiniLM-L6-v2", "input": "Hello world"])
        #expect(((embedded["data"] as? [[String: Any]])?.first?["embedding"] as? [Any])?.count == 384)
        let answer = try await call("/v1/chat/completions", ["model": "SmolLM2", "max_tokens": 4, "temperature": 0,
                                                             "messages": [["role": "user", "content": "Hi"]]])
        #expect(((answer["choices"] as? [[String: Any]])?.first?["message"] as? [String: Any])?["content"] as? String != nil)
    }
}
