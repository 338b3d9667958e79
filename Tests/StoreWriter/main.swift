// The child process of the store's durability test: it appends messages to one thread as fast
// as it can, printing each id once its transaction has committed, until it is killed.
//
//     store-writer DATABASE THREAD-ID PADDING
//
// Each message is "<n>|" + PADDING times "x" + "|end", so the test can tell a complete message
// from a torn one. Large padding makes a kill in the middle of writing a page likely.
import Foundation
import HearthStore

let arguments = CommandLine.arguments
guard arguments.count == 4, let padding = Int(arguments[3]) else {
    FileHandle.standardError.write(Data("usage: store-writer DATABASE THREAD-ID PADDING\n".utf8))
    exit(2)
}
do {
    let store = try SQLiteChatStore(path: arguments[1])
    let filler = String(repeating: "x", count: padding)
    var n = 0
    while true {
        n += 1
        let assistant = n % 2 == 0
        let message = try await store.appendMessage(
            threadID: arguments[2], role: assistant ? "assistant" : "user", content: "\(n)|\(filler)|end",
            completionTokens: assistant ? n : nil, tokensPerSecond: assistant ? Double(n) / 4 : nil)
        // Unbuffered, so that what the test reads is exactly what had committed when it killed us.
        FileHandle.standardOutput.write(Data("\(message.id)\n".utf8))
    }
} catch {
    FileHandle.standardError.write(Data("store-writer: \(error)\n".utf8))
    exit(1)
}
