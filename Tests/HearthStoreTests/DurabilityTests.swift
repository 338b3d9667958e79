import Foundation
import GRDB
import HearthStore
import HearthTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A `store-writer` process, its standard output collected in a file so a full pipe never
/// blocks it.
private struct Writer {
    let child: Child

    init(database: String, threadID: String, padding: Int, directory: TemporaryDirectory) throws {
        child = try Child(try TestFiles.executable("store-writer"), [database, threadID, String(padding)],
                          environment: ProcessInfo.processInfo.environment, directory: directory)
    }

    /// The ids the writer has reported so far; a line cut short by the kill is not a report.
    var reportedIDs: [Int64] {
        child.outputText.split(separator: "\n", omittingEmptySubsequences: false).dropLast().compactMap { Int64($0) }
    }

    var errorText: String { child.errorText }
    var isRunning: Bool { child.isRunning }
    var ended: Spawn.Ending? { child.ended }

    func killAndWait() async throws {
        child.signal(SIGKILL)
        try await child.wait()
    }
}

@Suite("Durability", .serialized)
struct DurabilityTests {
    @Test("a writer killed with SIGKILL keeps every message it reported, whole, in a sound file")
    func killedWriter() async throws {
        let file = try StoreFile()
        defer { withExtendedLifetime(file) {} }
        let thread = try await file.open().createThread()
        var generator = SplitMix64(seed: 2024)
        var reported: Set<Int64> = []
        // Small messages, then ones spanning several pages, so kills land in different places.
        let paddings = [10, 20_000, 300, 9_000]
        for (round, padding) in paddings.enumerated() {
            let writer = try Writer(database: file.path, threadID: thread.id, padding: padding, directory: file.directory)
            let clock = ContinuousClock()
            // A hang guard only: the writer may be starved while every other suite runs.
            let deadline = clock.now + .seconds(600)
            let wanted = 40 + Int.random(in: 0..<40, using: &generator)
            while writer.reportedIDs.count < wanted, writer.isRunning, clock.now < deadline {
                try await Task.sleep(for: .milliseconds(5))
            }
            try await Task.sleep(for: .milliseconds(Int.random(in: 0..<15, using: &generator)))
            #expect(writer.isRunning, "store-writer stopped by itself: \(writer.errorText)")
            try await writer.killAndWait()
            #expect(writer.ended == .signaled(SIGKILL))
            let ids = writer.reportedIDs
            #expect(ids.count >= 40, "round \(round): the writer reported only \(ids.count) messages in 600 s")
            reported.formUnion(ids)

            #expect(try file.integrityCheck() == ["ok"])
            #expect(try file.inspect { try Row.fetchAll($0, sql: "PRAGMA foreign_key_check") }.isEmpty)
            let store = try file.open()
            let messages = try await store.messages(threadID: thread.id)
            let stored = Set(messages.map(\.id))
            let lost = reported.subtracting(stored)
            #expect(lost.isEmpty, "round \(round): reported but missing: \(lost.sorted().prefix(10))")
            // A kill between a commit and its report leaves at most one unreported message per kill.
            #expect(stored.subtracting(reported).count <= round + 1)
            for message in messages {
                let parts = message.content.split(separator: "|", omittingEmptySubsequences: false)
                let whole = parts.count == 3 && Int(parts[0]) != nil && parts[2] == "end" && parts[1].allSatisfy { $0 == "x" }
                    && paddings.contains(parts[1].count)
                #expect(whole, "message \(message.id) is torn: \(message.content.prefix(40))…")
            }
            // The message and the thread's new updatedAt are one transaction: they agree.
            #expect(try await store.thread(id: thread.id)?.updatedAt == messages.last?.createdAt)
        }
    }
}
