import Foundation
import HubEmulator

// Serves files from disk as one emulated Hub repository, for benchmarks and manual tries:
//   hub-emulator REPO_ID FILE... — prints the endpoint, then serves until SIGTERM or SIGINT.
let arguments = CommandLine.arguments.dropFirst()
guard arguments.count >= 2 else {
    FileHandle.standardError.write(Data("usage: hub-emulator REPO_ID FILE...\n".utf8))
    exit(2)
}
let files = arguments.dropFirst().map { path in
    HubEmulator.File(URL(fileURLWithPath: path).lastPathComponent, contentsOf: URL(fileURLWithPath: path))
}
let emulator = try HubEmulator(repos: [HubEmulator.Repo(arguments.first!, files: files, tags: ["gguf"])])
try await emulator.start()
FileHandle.standardOutput.write(Data((emulator.endpoint.absoluteString + "\n").utf8))
await emulator.wait()
