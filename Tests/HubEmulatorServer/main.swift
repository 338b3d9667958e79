import Foundation
import HubEmulator

// Serves files from disk as one emulated Hub repository, for benchmarks, tests that need the
// Hub in a process of its own, and manual tries:
//   hub-emulator [--trickle BYTES_PER_SECOND] REPO_ID FILE...
// prints the endpoint, then serves until SIGTERM or SIGINT. With --trickle, the first 8 file
// downloads are sent at that rate (a slow network, for progress bars).
var arguments = Array(CommandLine.arguments.dropFirst())
var trickle: Int?
if arguments.first == "--trickle", arguments.count >= 2, let rate = Int(arguments[1]), rate > 0 {
    trickle = rate
    arguments.removeFirst(2)
}
guard arguments.count >= 2 else {
    FileHandle.standardError.write(Data("usage: hub-emulator [--trickle BYTES_PER_SECOND] REPO_ID FILE...\n".utf8))
    exit(2)
}
let files = arguments.dropFirst().map { path in
    HubEmulator.File(URL(fileURLWithPath: path).lastPathComponent, contentsOf: URL(fileURLWithPath: path))
}
let emulator = try HubEmulator(repos: [HubEmulator.Repo(arguments.first!, files: files, tags: ["gguf"])])
if let trickle { emulator.inject(.trickle(bytesPerSecond: trickle), times: 8) }
try await emulator.start()
FileHandle.standardOutput.write(Data((emulator.endpoint.absoluteString + "\n").utf8))
await emulator.wait()
