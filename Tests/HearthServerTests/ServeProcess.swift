import Foundation
import HearthTestSupport

/// `hearth serve` in a process of its own, as people run it, serving the real SmolLM2 as
/// "smollm2" (the default) and all-MiniLM-L6-v2 as "all-minilm" (with `speechModel`, Whisper
/// base as "whisper-base"), with its own database and Hugging Face cache in a temporary
/// directory. Tests in this process that keep its threads busy cannot slow its answers.
final class ServeProcess: @unchecked Sendable {
    let directory: TemporaryDirectory
    let child: Child
    let base: String

    init(apiKey: String? = nil, hubEndpoint: URL? = nil, speechModel: Bool = false,
         moreModels: (TemporaryDirectory) throws -> [String: URL] = { _ in [:] }) async throws {
        directory = try TemporaryDirectory()
        var arguments = ["serve", "--port", "0", "--database", directory.file("hearth.sqlite").path, "-t", "2", "-c", "2048",
                         "--model", "smollm2=\(try TestFiles.model(TestFiles.smolLM2))",
                         "--model", "all-minilm=\(try TestFiles.model("all-MiniLM-L6-v2"))"]
        for (name, url) in try moreModels(directory).sorted(by: { $0.key < $1.key }) { arguments += ["--model", "\(name)=\(url.path)"] }
        if speechModel { arguments += ["--speech-model", try TestFiles.model("whisper-base")] }
        if let apiKey { arguments += ["--api-key", apiKey] }
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HF_") && !$0.key.hasPrefix("HEARTH_") }
        environment["HF_HOME"] = directory.file("hf-home").path
        environment["HF_HUB_CACHE"] = directory.file("hub").path
        environment["HEARTH_DATA_DIR"] = directory.url.path
        environment["TMPDIR"] = directory.url.path
        if let hubEndpoint { environment["HF_ENDPOINT"] = hubEndpoint.absoluteString } else { environment["HF_HUB_OFFLINE"] = "1" }
        child = try Child(try TestFiles.hearthBinary, arguments, environment: environment, directory: directory)
        do {
            base = try await child.listeningURL()
        } catch {
            kill(child.process.processIdentifier, SIGKILL)
            throw error
        }
    }

    /// Stops it as a service manager would, with SIGTERM, and waits for it to exit.
    func stop() async {
        kill(child.process.processIdentifier, SIGTERM)
        _ = await child.wait()
    }
}
